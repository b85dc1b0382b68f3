/**
 * End-to-end (issue #26 §2 (f)): a subscribed MortarMQ member that does
 * nothing lets the runtime evict its MortarSession, and the next record
 * still reaches it — the Partition's wake rebuilds the session from its
 * stored snapshot (objects/session/snapshot.ts), which delivers, takes the
 * ACKs and keeps the credit window exact.
 *
 * The broker is the production bundle in Miniflare with the bill meter
 * (bench/bill/host.ts), which counts each object's constructor runs and
 * lists its pending timers: a second construction of the member's session
 * is the runtime's eviction, not a guess. Everything is as deployed: the
 * SDK's default HEARTBEAT interval (15 s) and the default session timeout;
 * a 20 s telemetry interval — no timer (telemetry included) keeps the session in
 * memory between two HEARTBEATs, and a HEARTBEAT costs the ConsumerGroup
 * nothing (the session answers it; objects/session/consumer.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MortarClient } from "../../client/sdk";
import { startMeteredBroker, type MeteredBroker } from "../../bench/bill/host";
import type { ObjectMeter } from "../../bench/bill/units";

let broker: MeteredBroker;

beforeAll(async () => {
  // A report interval longer than a HEARTBEAT gap (60 s as deployed; 20 s keeps the test short): the session's first
  // counts are reported 20 s after them although every HEARTBEAT rebuilds the session in between.
  broker = await startMeteredBroker({ TELEMETRY_FLUSH_MS: "20000" });
}, 120_000);

afterAll(async () => {
  await broker?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sessions(): Promise<ObjectMeter[]> {
  return (await broker.snapshot()).objects.filter((o) => o.kind === "MortarSession");
}

describe("an idle subscribed member", () => {
  it("is evicted by the runtime while idle, then receives, ACKs and keeps its credit exact on the next records", async () => {
    const member = await MortarClient.connect(broker.url);
    try {
      const { topicId } = await member.declare("idle-member", 1);
      const sub = await member.subscribe(topicId, "g", { creditCount: 2 }); // HEARTBEAT every 15 s (the default)
      // Assigned, asked its Partition once, parked: nothing in flight, no timer keeps the session.
      let mine: ObjectMeter | undefined;
      for (let i = 0; i < 100; i++) {
        const all = await sessions();
        mine = all.length === 1 ? all[0] : undefined;
        if (mine && mine.inflight === 0 && mine.timers.length === 0) break;
        await sleep(100);
      }
      expect(mine?.timers).toEqual([]);
      const constructs = mine!.constructs;
      const messages = mine!.requests.wsMessage;

      await sleep(32_000); // the runtime evicts an object idle for ~10 s; the HEARTBEATs (15 s, 30 s) rebuild it

      const beat = (await sessions()).find((o) => o.id === mine!.id)!;
      expect(beat.requests.wsMessage).toBeGreaterThan(messages); // the HEARTBEAT arrived
      expect(beat.constructs).toBeGreaterThan(constructs); // the runtime had evicted the session before it
      const group = (await broker.snapshot()).objects.find((o) => o.kind === "ConsumerGroup")!;
      expect(group.requests.rpc.heartbeat ?? 0).toBe(0); // answered by the session
      expect(group.requests.rpc.renew ?? 0).toBe(0); // the lease (7.5 min) is renewed every half lease
      // the session's report came due 20 s after the connection opened and was sent, though each rebuild asks for one
      // an interval later (a rebuild used to push it later every 15 s: never sent while the member heartbeated)
      const metrics = await (await fetch(`${broker.url}/metrics`)).text();
      expect(metrics).toMatch(/^mortarmq_connections_opened_total\{[^}]*protocol="mortar"[^}]*\} 1$/m);

      const producer = await MortarClient.connect(broker.url);
      try {
        for (const v of ["r1", "r2", "r3"]) await producer.publish(topicId, 0, null, v);
      } finally {
        await producer.close();
      }
      const first = await sub.next(15_000);
      const second = await sub.next(15_000);
      expect([first?.text(), second?.text()]).toEqual(["r1", "r2"]);
      const evicted = (await sessions()).find((o) => o.id === mine!.id)!;
      expect(evicted.constructs).toBeGreaterThan(constructs); // rebuilt: the runtime had evicted it

      // The window is 2: the third record waits for credit.
      expect(await sub.next(300)).toBeNull();
      await first!.ack();
      const third = await sub.next(15_000);
      expect(third?.text()).toBe("r3");
      expect(third!.sequence).toBe(first!.sequence + 2n);
      await second!.ack();
      await third!.ack();
      const credit = await sub.credit("add", 0, 0);
      expect(credit).toMatchObject({ grantedCount: 2, outstandingCount: 0 });
      await sub.close();
    } finally {
      await member.close();
    }
  }, 90_000);
});
