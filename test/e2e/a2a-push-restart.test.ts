/**
 * A2A push inbox with the real `@a2a-js/sdk` server (issue 32 §1,
 * docs/a2a.md): a `DefaultRequestHandler` runs a long task (8 events,
 * test/fixtures/a2a-stepped-agent.ts) whose push config is a mailbox's
 * receiver, and the broker is stopped and started again between events 3
 * and 6 (events 4 and 5 are published while it is down). The broker is
 * reached through a fixed address (a small forwarding proxy, answering 503
 * while the broker is down), as a deployed broker keeps its hostname.
 *
 * - The SDK's `DefaultPushNotificationSender` (1.3.0) makes one attempt per
 *   event: events 4 and 5 are lost, the others stored in order.
 * - `RetryingPushNotificationSender` (`@mortarmq/mq9/a2a`) retries: all 8
 *   stored, in order.
 * - A replayed notification is not duplicated; a wrong token is 401 and
 *   stores nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DefaultExecutionEventBusManager, DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore, ServerCallContext, type PushNotificationSender } from "@a2a-js/sdk/server";
import { Mq9Client } from "@mortarmq/mq9";
import { RetryingPushNotificationSender } from "@mortarmq/mq9/a2a";
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { STEPPED_EVENTS, SteppedExecutor, steppedAgentCard, stepTime, userMessage } from "../fixtures/a2a-stepped-agent";
import { until } from "../fixtures/until";

let stateDir = "";
let broker: LocalBroker | null = null;
let proxy: Server;
let proxyUrl = "";

/** Forwards every request to the broker of the moment; 503 while there is none. */
async function forward(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (!broker) return void res.writeHead(503).end("broker restarting");
  try {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length")) as Record<string, string>;
    const r = await fetch(`${broker.url}${req.url}`, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await r.arrayBuffer()));
  } catch {
    res.writeHead(503).end("broker unreachable");
  }
}

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-a2a-restart-"));
  broker = await startLocalBroker({ stateDir, port: 0 });
  proxy = createServer((req, res) => void forward(req, res));
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => proxy?.close(r));
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** A sender that remembers every send() promise (the handler fires them and forgets). */
class Tracked implements PushNotificationSender {
  readonly sends: Promise<void>[] = [];
  constructor(private readonly inner: PushNotificationSender) {}
  send(...a: Parameters<PushNotificationSender["send"]>): Promise<void> {
    const p = this.inner.send(...a);
    this.sends.push(p);
    return p;
  }
}

/** The `stepTime` stamps of the A2A notifications stored in `box`, in msg_id order: which events arrived, in which order. */
async function storedSteps(mq9: Mq9Client, box: string): Promise<string[]> {
  const stored = [...(await mq9.query(box, { tags: ["a2a"] }))].sort((a, b) => a.msgId - b.msgId);
  return stored.map((m) => {
    const b = m.json() as { task?: { status: { timestamp: string } }; statusUpdate?: { status: { timestamp: string } }; artifactUpdate?: { artifact: { parts: { text: string }[] } } };
    return b.task?.status.timestamp ?? b.statusUpdate?.status.timestamp ?? `chunk ${b.artifactUpdate!.artifact.parts[0]!.text.trim()}`;
  });
}

const ALL = [stepTime(1), stepTime(2), "chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5", stepTime(8)];

/** One agent (request handler) whose task pushes to a fresh mailbox. */
async function agentPushingTo(name: string, makeSender: (s: InMemoryPushNotificationStore) => PushNotificationSender) {
  const mq9 = await Mq9Client.connect(broker!.url);
  const { mailAddress: box } = await mq9.createMailbox({ name: `a2a.restart.${name}.${Date.now().toString(36)}` });
  const push = await mq9.a2aPushConfig(box, { baseUrl: proxyUrl });
  await mq9.close();
  const store = new InMemoryPushNotificationStore();
  const sender = new Tracked(makeSender(store));
  const executor = new SteppedExecutor(1); // sendMessage (returnImmediately) answers after the first event
  const card = steppedAgentCard([{ url: "http://agent.invalid/a2a", protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }]);
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, new DefaultExecutionEventBusManager(), store, sender);
  const task = await handler.sendMessage({
    tenant: "", message: userMessage("count", `m-${name}`), metadata: undefined,
    configuration: { acceptedOutputModes: [], returnImmediately: true, taskPushNotificationConfig: { tenant: "", id: "inbox", taskId: "", url: push.url, token: push.token, authentication: undefined } },
  }, new ServerCallContext({ requestedVersion: "1.0" }));
  expect(task).toMatchObject({ id: expect.any(String) });
  /** Lets events up to `n` go and waits until each was handed to the sender (and, with `settle`, until each send() finished). */
  const upTo = async (n: number, settle: boolean) => {
    executor.release(n);
    await until(async () => sender.sends.length === n);
    if (settle) await Promise.all(sender.sends);
  };
  return { box, push, upTo };
}

let errors: MockInstance<typeof console.error>;
let results: { sdk: Awaited<ReturnType<typeof agentPushingTo>>; retrying: Awaited<ReturnType<typeof agentPushingTo>>; retries: number };

describe("A2A push notifications from the SDK's request handler across a broker restart", () => {
  beforeAll(async () => {
    // Two agents side by side, one with each sender, through the same outage: events 1–3 with the broker
    // up, the broker stopped, events 4–5, the broker started again (same state), events 6–8.
    errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const infos = vi.spyOn(console, "info").mockImplementation(() => {});
    let retries = 0;
    try {
      const sdk = await agentPushingTo("sdk", (s) => new DefaultPushNotificationSender(s));
      const retrying = await agentPushingTo("retrying", (s) => new RetryingPushNotificationSender(s, { initialDelayMs: 100, maxDelayMs: 2000, maxAttempts: 100, onError: () => retries++ }));
      for (const a of [sdk, retrying]) await a.upTo(3, true);
      const stopped = broker!;
      broker = null;
      await stopped.stop();
      await sdk.upTo(5, true); // its one attempt for each has failed before the broker is back
      await retrying.upTo(5, false); // still retrying
      broker = await startLocalBroker({ stateDir, port: 0 });
      for (const a of [sdk, retrying]) await a.upTo(STEPPED_EVENTS, true);
      results = { sdk, retrying, retries };
    } finally {
      infos.mockRestore();
    }
  });
  afterAll(() => errors.mockRestore());

  it("the SDK's DefaultPushNotificationSender does not retry: the 2 events sent during the outage are lost, the rest stored in order", async () => {
    const mq9 = await Mq9Client.connect(broker!.url);
    expect(await storedSteps(mq9, results.sdk.box)).toEqual(ALL.filter((_, i) => i !== 3 && i !== 4));
    expect(errors.mock.calls.filter((c) => String(c[0]).startsWith("Error sending push notification"))).toHaveLength(2);
    await mq9.close();
  });

  it("RetryingPushNotificationSender delivers all 8 in order; a replay is not duplicated; a wrong token is 401 and stores nothing", async () => {
    const { box, push } = results.retrying;
    const mq9 = await Mq9Client.connect(broker!.url);
    expect(await storedSteps(mq9, box)).toEqual(ALL);
    expect(results.retries).toBeGreaterThan(0); // it did have to retry

    const [first] = [...(await mq9.query(box, { tags: ["a2a"] }))].sort((a, b) => a.msgId - b.msgId);
    const body = new TextDecoder().decode(first!.payload);
    const replay = await fetch(push.url, { method: "POST", body, headers: { "content-type": "application/a2a+json", "x-a2a-notification-token": push.token } });
    expect(await replay.json()).toEqual({ error: "", msg_id: first!.msgId, duplicate: true });
    const wrong = await fetch(push.url, { method: "POST", body: body.replace(stepTime(1), stepTime(9)), headers: { "x-a2a-notification-token": push.token.slice(0, -2) + "AA" } });
    expect(wrong.status).toBe(401);
    expect(await storedSteps(mq9, box)).toEqual(ALL);
    await mq9.close();
  });
});
