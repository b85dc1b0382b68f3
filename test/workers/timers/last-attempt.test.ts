/**
 * The last delivery attempt (#14 item 1), with the short timers of the
 * workers-timers project: ack wait 500 ms, 3 attempts. A record NACKed
 * (RETRY) up to its last attempt and then not settled is dead-lettered to
 * the twin exactly once when that attempt's deadline passes; no delivery
 * ever carries an attempt above the maximum, also when the partition moves
 * to another member.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DeadLetterReason, NackReason, Op, decodeDeadLetter, type MsgFrame, type NoticeFrame } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, text, type Sub } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function topic(p: Peer, partitions: number): Promise<TopicInfo> {
  const d = await p.c.declare(unique("la"), partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup");
  return r.topic;
}

/** Heartbeats `s` every 200 ms until `pred` holds (at most `ms`). */
async function heartbeatUntil(p: Peer, s: Sub, assignmentEpoch: number, ms: number, pred: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred()) && Date.now() < end) {
    await sleep(200);
    expectOk(await p.request(p.heartbeatFrame(s, assignmentEpoch)), Op.HEARTBEAT);
  }
}

/** Drops the object's instance; its next event (its alarm, or a call) starts a new one. `stub` is unusable afterwards. */
async function evict(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_o, state) => state.abort("evicted by the test")).catch(() => {});
}

/** Publishes one record and NACKs (RETRY) its first two deliveries: resolves with the third, the last attempt. */
async function toLastAttempt(p: Peer, t: TopicInfo, value = "poison"): Promise<{ s: Sub; asg: NoticeFrame; last: MsgFrame }> {
  const s = await p.subscribe(t.topicId, "g");
  const [asg] = await p.take(isAssign);
  await p.confirm([asg!]);
  expectOk(await p.publish(t.topicId, 0, value), Op.PUB);
  const attempts: MsgFrame[] = [];
  for (let i = 0; i < 3; i++) {
    const [m] = await p.take(isMsg);
    attempts.push(m!);
    if (i < 2) expectOk(await p.request(p.nackFrame(m!, NackReason.RETRY)), Op.NACK);
  }
  expect(attempts.map((m) => m.attempt)).toEqual([1, 2, 3]);
  return { s, asg: asg!, last: attempts[2]! };
}

describe("the last attempt", () => {
  it("NACK RETRY up to the last attempt, then no settlement: dead-lettered once when its deadline passes", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const { s, asg } = await toLastAttempt(p, t);
    // Attempt 3 (the last) is never settled.
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    const source = partitionStub(env, "default", t.incarnation, t.topicId, 0);
    await heartbeatUntil(p, s, asg.assignmentEpoch, 6000, async () => (await twin.info()).lastSequence >= 1);
    const [rec] = await twin.read(1, 2);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3 });
    await sleep(1200); // two more ack waits: nothing else happens
    expect((await twin.info()).lastSequence).toBe(1);
    expect(p.pushes.filter(isMsg).length).toBe(0);
    expect((await source.info()).groups[0]).toMatchObject({ ackFloor: 2, inFlight: 0, pendingRedelivery: 0, pendingDeadLetter: 0, deadLettered: 1 });
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "g"), [p]);
  }, 15_000);

  it("a last attempt in flight when the partition moves is dead-lettered, never redelivered above the maximum", async () => {
    const a = await Peer.open();
    const t = await topic(a, 1);
    const sa = await a.subscribe(t.topicId, "g");
    const [asg] = await a.take(isAssign);
    await a.confirm([asg!]);
    expectOk(await a.publish(t.topicId, 0, "poison"), Op.PUB);
    expectOk(await a.publish(t.topicId, 0, "good"), Op.PUB);
    const [m1, g1] = await a.take(isMsg, 2);
    expect(text(m1!)).toBe("poison");
    expectOk(await a.request(a.ackFrame(g1!)), Op.ACK);
    expectOk(await a.request(a.nackFrame(m1!, NackReason.RETRY)), Op.NACK);
    const [m2] = await a.take(isMsg);
    expectOk(await a.request(a.nackFrame(m2!, NackReason.RETRY)), Op.NACK);
    const [m3] = await a.take(isMsg);
    expect(m3!.attempt).toBe(3);
    // A leaves with its last attempt unsettled; B joins and gets the partition.
    expectOk(await a.request(a.heartbeatFrame(sa, asg!.assignmentEpoch, true)), Op.HEARTBEAT);
    const b = await Peer.open();
    const sb = await b.subscribe(t.topicId, "g");
    const [asgB] = await b.take(isAssign, 1, 3000);
    await b.confirm([asgB!]);
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    await heartbeatUntil(b, sb, asgB!.assignmentEpoch, 6000, async () => (await twin.info()).lastSequence >= 1);
    await sleep(1200);
    const attempts = b.pushes.filter(isMsg).map((m) => [text(m), m.attempt]);
    expect(attempts.every(([, at]) => (at as number) <= 3)).toBe(true);
    expect(attempts.filter(([v]) => v === "poison").length).toBe(0);
    expect((await twin.info()).lastSequence).toBe(1);
    const [rec] = await twin.read(1, 2);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3 });
    const info = (await partitionStub(env, "default", t.incarnation, t.topicId, 0).info()).groups[0];
    expect(info).toMatchObject({ ackFloor: 3, inFlight: 0, pendingRedelivery: 0, pendingDeadLetter: 0, deadLettered: 1 });
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "g"), [a, b]);
  }, 20_000);

  it("the last attempt's deadline passes while the partition is not running: dead-lettered when its alarm wakes it", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const { s, asg } = await toLastAttempt(p, t);
    await evict(partitionStub(env, "default", t.incarnation, t.topicId, 0));
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    await heartbeatUntil(p, s, asg.assignmentEpoch, 6000, async () => (await twin.info()).lastSequence >= 1);
    const [rec] = await twin.read(1, 2);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3 });
    expect((await partitionStub(env, "default", t.incarnation, t.topicId, 0).info()).groups[0]).toMatchObject({ ackFloor: 2, deadLettered: 1 });
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "g"), [p]);
  }, 15_000);

  it("a delivery an earlier version left waiting after its last attempt is dead-lettered when the partition starts", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    expectOk(await p.publish(t.topicId, 0, "stuck"), Op.PUB);
    const source = partitionStub(env, "default", t.incarnation, t.topicId, 0);
    await source.assign("g", 1, null, 0); // the group exists, nobody owns the partition
    // The row the old fence wrote: RETRY although attempt 3 of 3 was used.
    await runInDurableObject(source, (_o, state) => {
      const gid = state.storage.sql.exec<{ gid: number }>("SELECT gid FROM consumer_groups WHERE name = 'g'").one().gid;
      state.storage.sql.exec("INSERT INTO deliveries(gid, seq, delivery_id, attempt, deadline, state, reason) VALUES (?, 1, 99, 3, 0, 1, 0)", gid);
      state.storage.sql.exec("UPDATE consumer_groups SET next = 2 WHERE gid = ?", gid);
    });
    await evict(source);
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    const fresh = partitionStub(env, "default", t.incarnation, t.topicId, 0);
    expect((await fresh.info()).groups[0]).toMatchObject({ pendingRedelivery: 0 });
    for (let i = 0; i < 40 && (await twin.info()).lastSequence < 1; i++) await sleep(100);
    const [rec] = await twin.read(1, 2);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3 });
    expect((await fresh.info()).groups[0]).toMatchObject({ ackFloor: 2, pendingDeadLetter: 0, deadLettered: 1 });
    p.close();
  }, 15_000);
});
