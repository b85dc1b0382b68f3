/**
 * End-to-end: the SDK consumer as an application uses it, against a real
 * local broker (mortarmq dev). How a Subscription ends (close(), the
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
import { MortarClient, type Message, type Subscription } from "../../client/sdk";

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

  it("membership churn (joins, clean leaves, dropped connections; push and pull members): every record is acked, none after its ack was answered OK, the floor reaches the end", async () => {
    const P = 4, N = 400;
    const producer = await MortarClient.connect(broker.url);
    const { topicId } = await producer.declare("churn", P);
    const ackedOk = new Map<string, number>();
    const unanswered = new Set<string>();
    const accounted = () => new Set([...ackedOk.keys(), ...unanswered]).size;
    let ackedTwice = 0;
    interface Member { client: MortarClient; sub: Subscription; stop: boolean; done: Promise<void> }
    const members: Member[] = [];
    const handle = async (m: Message) => {
      await sleep(Math.random() * 15); // slow enough that rebalances catch deliveries in hand
      const k = `${m.partition}:${m.sequence}`;
      try {
        await m.ack();
        if (ackedOk.has(k)) ackedTwice++;
        ackedOk.set(k, (ackedOk.get(k) ?? 0) + 1);
      } catch (e) {
        // Moved (STALE_OWNERSHIP_EPOCH …): redelivered to the owner. CONNECTION_CLOSED: the ACK may
        // have reached the broker before the connection went (then it settled the record), or not.
        if ((e as Error).name === "CONNECTION_CLOSED") unanswered.add(k);
      }
    };
    const join = async (pull: boolean) => {
      const client = await MortarClient.connect(broker.url);
      const sub = await client.subscribe(topicId, "g", { creditCount: 16, pull, heartbeatMs: 500, revokeGraceMs: 500 });
      const mem: Member = { client, sub, stop: false, done: Promise.resolve() };
      mem.done = (async () => {
        try {
          if (pull) while (!mem.stop && !sub.closed) for (const m of await sub.pull({ maxMsgs: 8, waitMs: 200 })) await handle(m);
          else for await (const m of sub) await handle(m);
        } catch {
          /* connection closed */
        }
      })();
      members.push(mem);
    };
    const publishing = (async () => {
      for (let i = 0; i < N; i += 20) {
        await Promise.all(Array.from({ length: 20 }, (_, k) => producer.publish(topicId, (i + k) % P, null, `v${i + k}`)));
        await sleep(60);
      }
    })();
    await join(false);
    await join(true);
    let n = 0;
    let left = 0;
    for (const t0 = Date.now(); Date.now() - t0 < 3000; n++) {
      await sleep(150 + Math.random() * 150);
      const live = members.filter((m) => !m.stop);
      const victim = live[Math.floor(Math.random() * live.length)]!;
      if (live.length < 2 || n % 3 === 0) await join(n % 2 === 0);
      else if (n % 3 === 1) {
        victim.stop = true;
        void victim.client.close(); // no LEAVE: the broker sees the connection go, like a crash
      } else {
        victim.stop = true;
        void victim.sub.close().then(() => victim.client.close()); // clean: HEARTBEAT LEAVE first
      }
      left += n % 3 === 0 ? 0 : 1;
    }
    await publishing;
    // wait until every record is accounted for (acked OK, or its ACK unanswered as the connection dropped —
    // such a record is never answered OK later when the broker settled it, so waiting for N OK answers
    // always ran into the deadline) and every floor is at the end; the deadline is only a bound for a failure
    const end = Date.now() + 30_000;
    const floors = async () => {
      const stats = await (await fetch(`${broker.url}/stats`)).json() as { topics: { name: string; partitions: { high_watermark: number; groups: { committed_floor: number }[] }[] }[] };
      return stats.topics.find((t) => t.name === "churn")!.partitions.map((p) => [p.groups[0]!.committed_floor, p.high_watermark]);
    };
    while ((accounted() < N || (await floors()).some(([f, h]) => f !== h)) && Date.now() < end) await sleep(200);
    expect(left).toBeGreaterThanOrEqual(4);
    // Every record acked OK, or (rarely) its only ACK went out as the connection was dropped and the
    // broker settled it without the answer reaching the client; never two OK answers for one record.
    expect(accounted()).toBe(N);
    expect(ackedTwice).toBe(0);
    const f = await floors();
    expect(f.map(([floor]) => floor)).toEqual(f.map(([, hwm]) => hwm));
    expect(f.reduce((a, [, hwm]) => a + hwm!, 0)).toBe(N);
    for (const m of members) {
      m.stop = true;
      await m.client.close();
    }
    await producer.close();
  }, 60_000);
});
