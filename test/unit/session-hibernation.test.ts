/**
 * A MortarMQ member's session across hibernation (issue #26 §2 (f)), in
 * Node: the sans-IO Connection against the fake broker
 * (mortar-fake-broker.ts, groups run by the real group state machine).
 * With session-enforced liveness, HEARTBEATs with unchanged epochs are
 * answered by the session (no group call), the session expires a silent
 * member and renews its group lease every half lease; the read path's
 * snapshot (objects/session/snapshot.ts) rebuilds a Connection that
 * carries on — NOTICE state, epochs, credit window, parked partitions.
 */
import { describe, expect, it } from "vitest";
import {
  ErrorCode, HeartbeatState, NoticeKind, Op, StartPolicy, SUB_PARTITION_ANY, encodeFrames, encodeSubResult, errFrame, okFrame, utf8Bytes,
  type Frame, type PubFrame,
} from "../../wire/mortar";
import { Connection } from "../../objects/session/connection";
import type { Liveness } from "../../objects/session/consumer";
import { subscriptionsOf, validSnapshot } from "../../objects/session/snapshot";
import { FakeBroker } from "./mortar-fake-broker";

const bytes = (s: string) => utf8Bytes(s);
const pub = (value: string): PubFrame => ({
  op: Op.PUB, topicId: 1, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: bytes(value),
});
const hb = (assignmentEpoch: number, state: number = HeartbeatState.ACTIVE): Frame => ({
  op: Op.HEARTBEAT, subscriptionId: 1, memberId: 1n, membershipEpoch: 1, assignmentEpoch, state,
});

async function settle(): Promise<void> {
  for (let i = 0; i < 4; i++) await new Promise((r) => setTimeout(r, 15));
}

/** A connected session with one push subscription (credit 2) owning partition 0 of topic 1; counts the group's HEARTBEAT calls. */
async function subscribed(liveness?: Liveness) {
  const broker = new FakeBroker();
  let heartbeats = 0;
  const heartbeat = broker.heartbeat.bind(broker);
  broker.heartbeat = (...args) => {
    heartbeats++;
    return heartbeat(...args);
  };
  const conn = new Connection(broker, { sessionId: "s", liveness });
  broker.conn = conn;
  const send = (frames: Frame[]) => conn.receive(encodeFrames(frames));
  send([{ op: Op.CONNECT, protocolVersion: 1, clientFlags: 0, token: new Uint8Array(0), reserved: 0 }]);
  send([{ op: Op.DECLARE, topic: bytes("t"), partitionCount: 1, flags: 0 }]);
  send([{ op: Op.SUB, group: bytes("g"), topicId: 1, partition: SUB_PARTITION_ANY, startPolicy: StartPolicy.EARLIEST, creditCount: 2, creditBytes: 0, flags: 0 }]);
  await settle();
  const out = broker.take();
  expect(out).toContainEqual(okFrame(Op.SUB, encodeSubResult({ subscriptionId: 1, memberId: 1n, membershipEpoch: 1, assignmentEpoch: 1 })));
  const assign = out.find((f) => f.op === Op.NOTICE) as Extract<Frame, { op: typeof Op.NOTICE }>;
  expect(assign.kind).toBe(NoticeKind.ASSIGN);
  return { broker, conn, send, heartbeats: () => heartbeats };
}

const LIVE: Liveness = { sessionTimeoutMs: 60_000, leaseMs: 600_000 };

describe("session-enforced group liveness", () => {
  it("answers HEARTBEATs with the subscription's epochs locally; others go to the group", async () => {
    const { broker, send, heartbeats } = await subscribed(LIVE);
    send([hb(1), hb(1), hb(1)]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.HEARTBEAT), okFrame(Op.HEARTBEAT), okFrame(Op.HEARTBEAT)]);
    expect(heartbeats()).toBe(0); // the join counts as the first heartbeat
    // an assignment epoch the session has not forwarded: the group decides (newer than the group's: stale)
    send([hb(2)]);
    await settle();
    expect(broker.take()).toEqual([errFrame(ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.HEARTBEAT, "assignment_epoch 2 is not current; apply pending NOTICEs")]);
    expect(heartbeats()).toBe(1);
    // a stale membership is refused locally, LEAVE always goes to the group
    send([{ ...hb(1), membershipEpoch: 9 } as Frame, hb(1, HeartbeatState.LEAVE)]);
    await settle();
    expect(broker.take()).toEqual([
      errFrame(ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT, "member 1 (membership_epoch 9) is not in the group"),
      okFrame(Op.HEARTBEAT),
    ]);
    expect(heartbeats()).toBe(2);
  });

  it("forwards every HEARTBEAT without liveness; with it, expires a silent member and renews the lease only when half of it passed", async () => {
    const a = await subscribed();
    a.send([hb(1), hb(1)]);
    await settle();
    expect(a.heartbeats()).toBe(2);

    let now = Date.now();
    const live = { sessionTimeoutMs: 1_000, leaseMs: 10_000 };
    const b = await subscribed(live);
    const consumer = b.conn.consumer;
    (consumer as unknown as { io: { now: () => number } }).io.now = () => now;
    const joined = consumer.livenessDue();
    expect(joined.renewal - joined.expiry).toBe(5_000 - 1_000); // half a lease vs one session timeout, both from the join
    now += 500;
    b.send([hb(1)]);
    await settle();
    expect(b.broker.take()).toEqual([okFrame(Op.HEARTBEAT)]);
    expect(consumer.livenessDue().expiry).toBe(now + 1_000); // the HEARTBEAT moved the session timeout
    await consumer.renewLeases(now);
    expect(b.broker.calls.filter((c) => c.startsWith("renew"))).toEqual([]); // not half a lease yet
    now += 5_000;
    await consumer.renewLeases(now);
    expect(b.broker.calls.filter((c) => c.startsWith("renew"))).toEqual(["renew g"]);
    expect(consumer.expireLapsed(now)).toBe(1); // 5 s without a HEARTBEAT: expired here, the group told
    await settle();
    expect(b.broker.calls).toContain("expire g member 1");
    expect(b.heartbeats()).toBe(0);
    expect(b.broker.groups.get("g")!.members.size).toBe(0);
    b.send([hb(1)]);
    await settle();
    expect(b.broker.take()).toEqual([errFrame(ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT, "member 1 (membership_epoch 1) is not in the group")]);
  });

  it("a renewal riding an earlier alarm (earlyMs) renews a lease that is that close to half of it, not one further off", async () => {
    let now = Date.now();
    const b = await subscribed({ sessionTimeoutMs: 1_000, leaseMs: 10_000 });
    const consumer = b.conn.consumer;
    (consumer as unknown as { io: { now: () => number } }).io.now = () => now;
    now += 2_000;
    await consumer.renewLeases(now, 2_500); // 2 s of the 5 s half lease passed: 3 s to go, more than 2.5 s early
    expect(b.broker.calls.filter((c) => c.startsWith("renew"))).toEqual([]);
    now += 1_000;
    await consumer.renewLeases(now, 2_500); // 2 s to go: within 2.5 s
    expect(b.broker.calls.filter((c) => c.startsWith("renew"))).toEqual(["renew g"]);
    expect(consumer.livenessDue().renewal).toBe(now + 5_000); // the next one half a lease after this one
  });

  it("a HEARTBEAT that arrives after the session timeout expires the member instead of reviving it", async () => {
    let now = Date.now();
    const b = await subscribed({ sessionTimeoutMs: 1_000, leaseMs: 10_000 });
    (b.conn.consumer as unknown as { io: { now: () => number } }).io.now = () => now;
    now += 1_500;
    b.send([hb(1)]);
    await settle();
    expect(b.broker.take()).toEqual([errFrame(ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT, "member 1 (membership_epoch 1) is not in the group")]);
    expect(b.broker.calls).toContain("expire g member 1");
  });
});

describe("the read path's snapshot", () => {
  it("is idle once the window is back; a Connection rebuilt from it delivers, settles and keeps the credit window", async () => {
    const { broker, conn, send } = await subscribed(LIVE);
    expect(conn.consumer.busy()).toBe(false); // assigned, asked, parked
    send([pub("a"), pub("b"), pub("c")]);
    await settle();
    const msgs = broker.take().filter((f) => f.op === Op.MSG);
    expect(msgs).toHaveLength(2); // credit 2
    expect(conn.consumer.busy()).toBe(true); // deliveries outstanding: not to be evicted
    send(msgs.map((m) => ({ op: Op.ACK, subscriptionId: 1, topicId: 1, partition: 0, seq: m.sequence, deliveryId: m.deliveryId, ownershipEpoch: m.ownershipEpoch, flags: 0 }) as Frame));
    await settle();
    const third = broker.take().filter((f) => f.op === Op.MSG);
    expect(third.map((m) => m.sequence)).toEqual([3n]);
    send(third.map((m) => ({ op: Op.ACK, subscriptionId: 1, topicId: 1, partition: 0, seq: m.sequence, deliveryId: m.deliveryId, ownershipEpoch: m.ownershipEpoch, flags: 0 }) as Frame));
    await settle();
    broker.take();
    expect(conn.consumer.busy()).toBe(false);

    // hibernation: only the snapshot survives (as JSON), a fresh Connection restores it
    const snap = JSON.parse(JSON.stringify(conn.consumer.snapshot())) as unknown;
    expect(validSnapshot(snap)).toBe(true);
    const [sub] = subscriptionsOf(snap as Parameters<typeof subscriptionsOf>[0]);
    expect(sub!.owned.get(0)).toMatchObject({ ownershipEpoch: 1, active: true, parked: true });
    const rebuilt = new Connection(broker, { sessionId: "s", tenant: conn.tenant, liveness: LIVE });
    broker.conn = rebuilt;
    rebuilt.consumer.restore(snap as Parameters<typeof subscriptionsOf>[0]);
    expect(rebuilt.consumer.hasMember(1, 1)).toBe(true);
    const resend = (frames: Frame[]) => rebuilt.receive(encodeFrames(frames));
    resend([pub("d"), pub("e"), pub("f")]);
    await settle();
    const after = broker.take().filter((f) => f.op === Op.MSG);
    expect(after.map((m) => m.sequence)).toEqual([4n, 5n]); // woken, in order, within the window of 2
    resend([{ op: Op.CREDIT, subscriptionId: 1, membershipEpoch: 1, ownershipEpoch: 0n, mode: 1, creditCount: 0, creditBytes: 0, reserved: 0 } as Frame]);
    await settle();
    const credit = broker.take().find((f) => f.op === Op.OK);
    expect(credit).toBeDefined();
    expect(validSnapshot({ nextId: 1, subs: [{ id: 1 }] })).toBe(false);
  });
});
