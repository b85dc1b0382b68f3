/**
 * A2A over mq9 (issue 32 §2, docs/a2a.md "A2A over mq9"): an agent built
 * with `@a2a-js/sdk` (DefaultRequestHandler, sample-style executor) served
 * from its mailbox by `serveA2aOverMq9` in a process of its own
 * (test/fixtures/a2a-mq9-agent.ts); this process finds its AgentCard in
 * the registry and calls it through the SDK's `ClientFactory` with
 * `Mq9TransportFactory` — no HTTP endpoint on the agent's side.
 *
 * - a streaming request gets the task's 8 events in order; the A2A
 *   extension the client asks for (service parameter `A2A-Extensions`)
 *   reaches the agent;
 * - a blocking request whose agent is killed in the middle of the task is
 *   answered by the restarted agent (the request was never acknowledged,
 *   so it is delivered again): the client just waits.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { AgentCard, TaskState, type Task } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Mq9Client } from "@mortarmq/mq9";
import { MQ9_A2A_BINDING, Mq9TransportFactory } from "@mortarmq/mq9/a2a";
import { afterAll, describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { STEPPED_EVENTS, STEPPED_EXTENSION, stepTime, userMessage } from "../fixtures/a2a-stepped-agent";

const ctx = useLocalBroker("a2a-mq9", {});
const AGENT = fileURLToPath(new URL("../fixtures/a2a-mq9-agent.ts", import.meta.url));
const agents: ChildProcess[] = [];
afterAll(() => {
  for (const a of agents) a.kill("SIGKILL");
});

/** Starts the agent process; resolves once it serves. `published` counts the events it published. */
async function startAgent(mailbox: string, released: number | "all") {
  const child = fork(AGENT, [ctx.broker.url, mailbox, String(released)], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  agents.push(child);
  const state = { child, published: 0 };
  child.on("message", (m: { published?: number }) => {
    if (typeof m.published === "number") state.published = m.published;
  });
  await new Promise<void>((resolve, reject) => {
    child.on("message", (m: { ready?: boolean }) => m.ready && resolve());
    child.once("exit", (code) => reject(new Error(`agent exited with ${code}`)));
  });
  return state;
}

/** The A2A client for the agent card the registry holds under `name`. */
async function clientFor(mq9: Mq9Client, mailbox: string) {
  const [found] = (await mq9.agents.discover({ text: "stepped" })).filter((a) => a.mailbox === mailbox);
  const card = AgentCard.fromJSON(found);
  expect(card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual([MQ9_A2A_BINDING]);
  return new ClientFactory({ transports: [new Mq9TransportFactory(mq9)] }).createFromAgentCard(card);
}

const request = (text: string, id: string) => ({ tenant: "", message: userMessage(text, id), configuration: undefined, metadata: undefined });
const chunks = (t: Task) => t.artifacts.flatMap((a) => a.parts.map((p) => (p.content?.$case === "text" ? p.content.value : ""))).join("");

describe("A2A over mq9 with the @a2a-js/sdk", () => {
  it("a streaming request: the 8 events in order, the requested extension reaches the agent", async () => {
    const mq9 = await Mq9Client.connect(ctx.broker.url);
    const { mailAddress: inbox } = await mq9.createMailbox({ name: `agent.stepped.${Date.now().toString(36)}` });
    const agent = await startAgent(inbox, "all");
    const client = await clientFor(mq9, inbox);
    const events = [];
    for await (const e of client.sendMessageStream(request("count", "s-1"), { serviceParameters: { "A2A-Extensions": `${STEPPED_EXTENSION}, urn:example:undeclared` } })) events.push(e);
    expect(events.map((e) => e.payload?.$case)).toEqual(["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]);
    const first = events[0]!.payload as { $case: "task"; value: Task };
    expect(first.value.metadata).toEqual({ requestedExtensions: [STEPPED_EXTENSION] }); // the SDK keeps the ones the card declares
    const last = events.at(-1)!.payload as { $case: "statusUpdate"; value: { status: { state: TaskState; timestamp: string } } };
    expect([last.value.status.state, last.value.status.timestamp]).toEqual([TaskState.TASK_STATE_COMPLETED, stepTime(STEPPED_EVENTS)]);
    expect(agent.published).toBe(STEPPED_EVENTS);
    agent.child.kill("SIGKILL");
    await mq9.close();
  });

  it("a long task survives the agent being killed in the middle: the restarted agent answers the waiting client", async () => {
    const mq9 = await Mq9Client.connect(ctx.broker.url);
    const { mailAddress: inbox } = await mq9.createMailbox({ name: `agent.restart.${Date.now().toString(36)}` });
    const first = await startAgent(inbox, 3);
    const client = await clientFor(mq9, inbox);
    const answer = client.sendMessage(request("count", "r-1")); // blocking: answered when the task ends
    await new Promise<void>((resolve) => first.child.on("message", (m: { published?: number }) => m.published === 3 && resolve()));
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    const second = await startAgent(inbox, "all");
    const task = (await answer) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(chunks(task)).toBe("1 2 3 4 5 ");
    expect(second.published).toBe(STEPPED_EVENTS); // the second agent ran the task from its start
    second.child.kill("SIGKILL");
    await mq9.close();
  });
});
