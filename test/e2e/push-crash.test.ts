/**
 * Push delivery survives a crash (issue 17): the whole broker process tree
 * is SIGKILLed while a message waits for its retry (mid-backoff), and again
 * while an attempt is held by the receiver (mid-attempt); each time the
 * broker is restarted on the same state directory and NOTHING is sent to
 * the mailbox afterwards — the Mailbox's alarm alone resumes delivery.
 * Checked: every message is delivered (a 2xx) at least once, first
 * deliveries in msg_id order, attempts of one message only count up, and
 * the subscription's counters end with everything acknowledged.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { crash } from "../fixtures/crash";
import { PushReceiver } from "../fixtures/push-receiver";

const VARS = { PUSH_ALLOW_LOOPBACK: "1", PUSH_BACKOFF_BASE_MS: "3000", PUSH_BACKOFF_MAX_MS: "3000" };
let stateDir: string;
let broker: LocalBroker | undefined;
let receiver: PushReceiver;


async function mq9(subject: string, payload: unknown = {}): Promise<{ error: string } & Record<string, any>> {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  return (await (await fetch(`${broker!.url}/mq9/${subject}`, { method: "POST", body })).json()) as { error: string };
}

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-push-crash-"));
  receiver = await new PushReceiver().start();
  broker = await startLocalBroker({ stateDir, port: 0, vars: VARS });
});

afterAll(async () => {
  if (broker) await crash(broker).catch(() => broker?.stop());
  await receiver?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("SIGKILL of the broker during push delivery", () => {
  it("resumes after a restart mid-backoff and mid-attempt: nothing lost, nothing acknowledged without a 2xx", async () => {
    const box = "crash.box";
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 0 })).error).toBe("");
    // msg 3 fails twice (then waits 1.5–3 s for each retry); msg 7's first attempt is held until the broker dies
    receiver.respond = (q) => (q.msgId === 3 && q.attempt <= 2 ? { status: 500 } : q.msgId === 7 && q.attempt === 1 ? "hold" : { status: 200 });
    const created = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: receiver.url(), deliver: "earliest", timeout_ms: 2000 });
    expect(created.error).toBe("");
    receiver.secrets.set(created.push_id, created.secret);
    for (let i = 0; i < 10; i++) expect((await mq9(`$mq9.AI.MSG.SEND.${box}`, `m${i}`)).error).toBe("");

    // 1. mid-backoff: msg 3 failed its first attempt and waits for the retry
    await receiver.until(() => receiver.requests.some((q) => q.msgId === 3));
    await crash(broker!);
    const atCrash = receiver.requests.length;
    expect(receiver.requests.filter((q) => q.msgId === 3).map((q) => q.attempt)).toEqual([1]);
    broker = await startLocalBroker({ stateDir, port: 0, vars: VARS });

    // 2. mid-attempt: msg 7's first attempt is held by the receiver
    await receiver.until(() => receiver.holding === 1 && receiver.requests.some((q) => q.msgId === 7), 60_000);
    expect(receiver.requests.length).toBeGreaterThan(atCrash); // resumed without any request to the mailbox
    await crash(broker!);
    receiver.release(200); // too late: its broker is gone, so this 2xx was never seen
    broker = await startLocalBroker({ stateDir, port: 0, vars: VARS });

    await receiver.until(() => receiver.requests.some((q) => q.msgId === 9), 60_000);
    await new Promise((r) => setTimeout(r, 500));
    const seen = receiver.requests.map((q) => `${q.msgId}#${q.attempt}`).join(" "); // msg_id#attempt, for failure messages
    const ok = receiver.requests.filter((q) => !(q.msgId === 3 && q.attempt <= 2) && !(q.msgId === 7 && q.attempt === 1));
    // every message got a 2xx at least once; the first of each came in msg_id order
    const firsts: number[] = [];
    for (const q of ok) if (!firsts.includes(q.msgId)) firsts.push(q.msgId);
    expect(firsts, seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(receiver.requests.every((q) => q.signatureOk)).toBe(true);
    // attempts of one message only count up (a crash never resets them)
    for (const id of [3, 7]) {
      const attempts = receiver.requests.filter((q) => q.msgId === id).map((q) => q.attempt);
      expect(attempts, seen).toEqual([...attempts].sort((a, b) => a - b));
      expect(new Set(attempts).size, seen).toBe(attempts.length);
    }
    expect(receiver.requests.filter((q) => q.msgId === 3).length).toBeGreaterThanOrEqual(3);
    expect(receiver.requests.filter((q) => q.msgId === 7).length).toBeGreaterThanOrEqual(2);
    const [info] = (await mq9(`$mq9.AI.PUSH.LIST.${box}`)).pushes;
    // a message is settled once: a 2xx whose commit died with the broker was not counted, and its message was sent again
    expect(info).toMatchObject({ delivered: 10, backlog: 0, in_flight: 0, dead_lettered: 0 });
  });
});
