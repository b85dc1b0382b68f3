/**
 * End-to-end MortarMQ read path against a real local broker (mortarmq dev,
 * its own state dir) through the client SDK: two consumers in one group,
 * one killed mid-batch (socket closed, no acks, no LEAVE) — every message
 * it held is delivered again to the survivor; then a broker restart on the
 * same state with more publishes — nothing published is lost. Plus pull
 * mode and reading a `.dlq` twin.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient, type Message, type Subscription } from "../../client/sdk";
import { DeadLetterReason, decodeDeadLetter } from "../../wire/mortar";

let stateDir: string;
let broker: LocalBroker;
const start = async () => {
  broker = await startLocalBroker({ stateDir: join(stateDir, "state"), port: 0 });
};

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-read-"));
  await start();
});

afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/**
 * Reads from `sub` until `stop()` holds or nothing arrives for `idleMs`;
 * acks each message when `ack`, then calls `seen`.
 */
async function consume(sub: Subscription, ack: boolean, stop: (got: Message[]) => boolean, idleMs = 3000, seen?: (m: Message) => void): Promise<Message[]> {
  const got: Message[] = [];
  while (!stop(got)) {
    const m = await sub.next(idleMs);
    if (!m) break;
    got.push(m);
    if (ack) await m.ack();
    seen?.(m);
  }
  return got;
}

describe("MortarMQ read path, real broker", () => {
  it("a killed consumer's unacked messages go to the survivor; nothing is lost across a broker restart", async () => {
    const producer = await MortarClient.connect(broker.url);
    await producer.declare("orders", 2);
    const published = new Set<string>();
    const publish = async (from: number, to: number) => {
      await Promise.all(Array.from({ length: to - from }, (_, k) => {
        const i = from + k;
        published.add(`order-${i}`);
        return producer.publish("orders", i % 2, `k${i}`, `order-${i}`, { producerId: 77n, producerSeq: BigInt(i + 1) });
      }));
    };
    await publish(0, 200);

    const acked = new Set<string>();
    const victim = await MortarClient.connect(broker.url);
    await victim.declare("orders", 2);
    const vsub = await victim.subscribe("orders", "billing", { creditCount: 30 });
    // The victim owns both partitions until the survivor joins; take a batch and ack only half of it.
    const batch = await consume(vsub, false, (g) => g.length >= 30);
    expect(batch).toHaveLength(30);
    for (const m of batch.slice(0, 15)) {
      await m.ack();
      acked.add(m.text());
    }
    const heldByVictim = new Set(batch.slice(15).map((m) => m.text()));

    const survivorClient = await MortarClient.connect(broker.url);
    await survivorClient.declare("orders", 2);
    const ssub = await survivorClient.subscribe("orders", "billing", { creditCount: 50 });
    await new Promise((r) => setTimeout(r, 300));
    await victim.close(); // dies mid-batch: no acks for the other 15, no LEAVE

    // The survivor gets both partitions, and with them every message the victim held.
    const first = await consume(ssub, true, () => [...published].every((v) => acked.has(v)), 5000, (m) => acked.add(m.text()));
    const seenBySurvivor = new Set(first.map((m) => m.text()));
    expect([...heldByVictim].filter((v) => !seenBySurvivor.has(v))).toEqual([]);
    expect(first.filter((m) => heldByVictim.has(m.text())).every((m) => m.attempt >= 2)).toBe(true);
    expect(acked.size).toBe(200);

    // Publish more, take some, then restart the broker on the same state.
    await publish(200, 260);
    await consume(ssub, true, (g) => g.length >= 20, 3000, (m) => acked.add(m.text()));
    await survivorClient.close();
    await producer.close();
    await broker.stop();
    await start();

    const p2 = await MortarClient.connect(broker.url);
    await p2.declare("orders", 2);
    await Promise.all(Array.from({ length: 40 }, (_, k) => {
      const i = 260 + k;
      published.add(`order-${i}`);
      return p2.publish("orders", i % 2, `k${i}`, `order-${i}`, { producerId: 77n, producerSeq: BigInt(i + 1) });
    }));
    const c2 = await MortarClient.connect(broker.url);
    await c2.declare("orders", 2);
    const sub2 = await c2.subscribe("orders", "billing");
    await consume(sub2, true, () => [...published].every((v) => acked.has(v)), 5000, (m) => acked.add(m.text()));
    expect([...published].filter((v) => !acked.has(v))).toEqual([]);
    expect(acked.size).toBe(300);
    await sub2.close();
    await c2.close();
    await p2.close();
  }, 180_000);

  it("pull mode long-polls; a rejected message is read from the .dlq twin", async () => {
    const c = await MortarClient.connect(broker.url);
    const t = await c.declare("jobs", 1);
    const sub = await c.subscribe("jobs", "workers", { pull: true });
    for (let i = 0; i < 50 && sub.assignment.size === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect([...sub.assignment.keys()]).toEqual([0]);
    const t0 = Date.now();
    expect(await sub.pull({ waitMs: 300 })).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    const waiting = sub.pull({ waitMs: 10_000, maxMsgs: 10 });
    await new Promise((r) => setTimeout(r, 100));
    await c.publish("jobs", 0, "job-key", "job-1", { producerId: 5n, producerSeq: 1n });
    const got = await waiting;
    expect(got.map((m) => [m.text(), m.attempt])).toEqual([["job-1", 1]]);
    await got[0]!.nack(true);

    const dlq = await c.subscribe(t.topicId + 1, "dlq-readers");
    const [dead] = await consume(dlq, true, (g) => g.length >= 1, 5000);
    const env = decodeDeadLetter(dead!.value)!;
    expect(env.header).toMatchObject({ reason: DeadLetterReason.REJECTED, topicId: t.topicId, partition: 0, sequence: 1n, attempts: 1, group: "workers" });
    expect([new TextDecoder().decode(env.value), new TextDecoder().decode(dead!.key), dead!.producerId, dead!.producerSeq]).toEqual(["job-1", "job-key", 5n, 1n]);
    await sub.close();
    await dlq.close();
    await c.close();
  }, 60_000);
  it("a 64 MiB credit window with 16 MiB values delivers every record, in order (each deliver call ≤ 8 MiB past its first record)", async () => {
    const client = await MortarClient.connect(broker.url);
    await client.declare("big-values", 1);
    const SIZE = 16 * 1024 * 1024 - 1024; // the largest value a 16 MiB frame carries with room for its fields
    const value = (i: number) => {
      const v = new Uint8Array(SIZE).fill(0x61 + i);
      v[0] = i;
      v[SIZE - 1] = 0xf0 + i;
      return v;
    };
    for (let i = 0; i < 4; i++) await client.publish("big-values", 0, `k${i}`, value(i));
    // and small ones behind them, more than one 8 MiB call's worth
    for (let i = 0; i < 40; i++) await client.publish("big-values", 0, `s${i}`, new Uint8Array(512 * 1024).fill(i));
    const sub = await client.subscribe("big-values", "bulk", { creditCount: 100, creditBytes: 64 * 1024 * 1024 });
    const got: Message[] = [];
    while (got.length < 44) {
      const m = await sub.next(30_000);
      if (!m) break;
      got.push(m);
      await m.ack();
    }
    expect(got.map((m) => Number(m.sequence))).toEqual(Array.from({ length: 44 }, (_, i) => i + 1));
    for (let i = 0; i < 4; i++) {
      const v = got[i]!.value;
      expect([v.length, v[0], v[1], v[SIZE - 1]]).toEqual([SIZE, i, 0x61 + i, 0xf0 + i]);
    }
    expect(got.slice(4).map((m) => [m.value.length, m.value[0]])).toEqual(Array.from({ length: 40 }, (_, i) => [512 * 1024, i]));
    await sub.close();
    await client.close();
  });
});
