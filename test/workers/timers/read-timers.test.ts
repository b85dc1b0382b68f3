/**
 * Read-path timers with short settings (vitest.config.ts "workers-timers"):
 * ack wait 500 ms, 3 delivery attempts, group session timeout 1500 ms,
 * revocation timeout 600 ms. Timers fire through the objects' real alarms.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CreditMode, DeadLetterReason, ErrorCode, Op, decodeCreditResult, decodeDeadLetter } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { expectErr, expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, isRevoke, text, type Sub } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const group = (t: TopicInfo, name: string) => groupStub(env, "default", t.incarnation, t.topicId, name);

async function topic(p: Peer, partitions: number): Promise<TopicInfo> {
  const d = await p.c.declare(unique("tm"), partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup");
  return r.topic;
}

/** Drops the object's instance; its next event (here: its alarm) starts a new one. `stub` is unusable afterwards. */
async function evict(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_o, state) => state.abort("evicted by the test")).catch(() => {});
}

/** Heartbeats `s` every 200 ms until `pred` holds (at most `ms`). */
async function heartbeatUntil(p: Peer, s: Sub, assignmentEpoch: number, ms: number, pred: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) {
    await sleep(200);
    expectOk(await p.request(p.heartbeatFrame(s, assignmentEpoch)), Op.HEARTBEAT);
  }
}

describe("work deadlines", () => {
  it("an unacked delivery is redelivered with attempt 2 and a new delivery id after the ack wait; PROGRESS keeps a slow one", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const s = await p.subscribe(t.topicId, "g");
    const [asg] = await p.take(isAssign);
    await p.confirm([asg!]);
    expectOk(await p.publish(t.topicId, 0, "slow"), Op.PUB);
    expectOk(await p.publish(t.topicId, 0, "forgotten"), Op.PUB);
    const [slow, forgotten] = await p.take(isMsg, 2);
    // Keep "slow" alive with PROGRESS every 200 ms for 1.2 s (2.4 × the ack wait); "forgotten" expires.
    for (let i = 0; i < 6; i++) {
      await sleep(200);
      p.send([p.ackFrame(slow!, 1), p.heartbeatFrame(s, asg!.assignmentEpoch)]);
      for (const f of await p.answer(2)) expect(f.op).toBe(Op.OK);
    }
    const redelivered = p.pushes.filter(isMsg);
    expect(redelivered.map((m) => [text(m), m.sequence])).toContainEqual(["forgotten", 2n]);
    expect(redelivered.some((m) => text(m) === "slow")).toBe(false);
    const again = redelivered.find((m) => text(m) === "forgotten")!;
    expect(again.attempt).toBeGreaterThanOrEqual(2);
    expect(again.deliveryId).not.toBe(forgotten!.deliveryId);
    expectErr(await p.request(p.ackFrame(forgotten!)), ErrorCode.UNKNOWN_DELIVERY, Op.ACK); // the first delivery expired
    expectOk(await p.request(p.ackFrame(slow!)), Op.ACK); // same delivery id: PROGRESS did not use up an attempt
    await closeAndSettle(group(t, "g"), [p]);
  });

  it("after the last attempt expires the message goes to the .dlq twin", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const s = await p.subscribe(t.topicId, "g");
    const [asg] = await p.take(isAssign);
    await p.confirm([asg!]);
    expectOk(await p.publish(t.topicId, 0, "never-acked"), Op.PUB);
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    const end = Date.now() + 6000;
    while ((await twin.info()).lastSequence < 1 && Date.now() < end) {
      await sleep(250);
      expectOk(await p.request(p.heartbeatFrame(s, asg!.assignmentEpoch)), Op.HEARTBEAT);
    }
    const seen = await p.take(isMsg, 3, 100);
    expect(seen.map((m) => m.attempt)).toEqual([1, 2, 3]);
    const [rec] = await twin.read(1, 1);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3, topicId: t.topicId });
    expect((await partitionStub(env, "default", t.incarnation, t.topicId, 0).info()).groups[0]).toMatchObject({ ackFloor: 2, deadLettered: 1, redelivered: 2 });
    await closeAndSettle(group(t, "g"), [p]);
  });
});

describe("work deadlines and the credit window", () => {
  it("a window full of expired deliveries does not stop the consumer: credit 1, a never-acked message is redelivered, dead-lettered, then the next one flows", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const s = await p.subscribe(t.topicId, "g", { creditCount: 1 });
    const [asg] = await p.take(isAssign);
    await p.confirm([asg!]);
    expectOk(await p.publish(t.topicId, 0, "poison"), Op.PUB);
    expectOk(await p.publish(t.topicId, 0, "good"), Op.PUB);
    // The client never settles "poison": each expired delivery's credit comes back (the Partition tells the session).
    await heartbeatUntil(p, s, asg!.assignmentEpoch, 6000, () => p.pushes.some((m) => isMsg(m) && text(m) === "good"));
    const seen = p.pushes.filter(isMsg).map((m) => [text(m), m.attempt]);
    expect(seen).toEqual([["poison", 1], ["poison", 2], ["poison", 3], ["good", 1]]);
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    for (let i = 0; i < 40 && (await twin.info()).lastSequence < 1; i++) await sleep(50); // the twin transfer runs after the expiry
    const [rec] = await twin.read(1, 1);
    expect(decodeDeadLetter(rec!.value)!.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, sequence: 1n, attempts: 3 });
    const good = p.pushes.filter(isMsg).find((m) => text(m) === "good")!;
    expectOk(await p.request(p.ackFrame(good)), Op.ACK);
    await closeAndSettle(group(t, "g"), [p]);
  }, 15_000);
});

describe("group timers", () => {
  it("a member that stops heartbeating is removed after the session timeout and its partitions move", async () => {
    const a = await Peer.open();
    const t = await topic(a, 2);
    const sa = await a.subscribe(t.topicId, "g");
    await a.confirm(await a.take(isAssign, 2));
    const b = await Peer.open();
    const sb = await b.subscribe(t.topicId, "g");
    const [rev] = await a.take(isRevoke);
    await a.confirm([rev!]);
    const [asgB] = await b.take(isAssign);
    await b.confirm([asgB!]);
    // B heartbeats (with the epoch of the latest NOTICE it got), A stays silent.
    let epoch = asgB!.assignmentEpoch;
    const moved = [];
    for (let i = 0; i < 8; i++) {
      await sleep(250);
      moved.push(...(await b.peek(isAssign, 0)));
      b.pushes.length = 0;
      if (moved.length) epoch = moved[moved.length - 1]!.assignmentEpoch;
      expectOk(await b.request(b.heartbeatFrame(sb, epoch)), Op.HEARTBEAT);
    }
    const info = await group(t, "g").info();
    expect(info.members.map((m) => m.memberId)).toEqual([Number(sb.memberId)]);
    expect(info.expiredMembers).toBe(1);
    expect(moved.map((x) => [x.partition, x.ownershipEpoch])).toEqual([[0, 2n]]);
    expectErr(await a.request(a.heartbeatFrame(sa, rev!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    // CREDIT with the right membership epoch says why it is refused (it used to read "membership_epoch 1 is not the subscription's (1)").
    const credit = expectErr(await a.request({
      op: Op.CREDIT, subscriptionId: sa.subscriptionId, membershipEpoch: sa.membershipEpoch, ownershipEpoch: 0n,
      mode: CreditMode.ADD, creditCount: 1, creditBytes: 0, reserved: 0,
    }), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.CREDIT);
    expect(new TextDecoder().decode(credit.message)).toMatch(/no longer in the group/);
    await closeAndSettle(group(t, "g"), [a, b]);
  });

  it("the session enforces the timeout: a member that heartbeated, then stopped, is expired by its session (no group request per HEARTBEAT) and its partition moves", async () => {
    const a = await Peer.open();
    const t = await topic(a, 2);
    const sa = await a.subscribe(t.topicId, "g");
    await a.confirm(await a.take(isAssign, 2));
    const b = await Peer.open();
    const sb = await b.subscribe(t.topicId, "g");
    const [rev] = await a.take(isRevoke);
    await a.confirm([rev!]);
    const [asgB] = await b.take(isAssign);
    await b.confirm([asgB!]);
    // Both heartbeat for longer than the session timeout: the group never sees a HEARTBEAT (its lease is 10 × 1.5 s).
    for (let i = 0; i < 6; i++) {
      await sleep(300);
      expectOk(await a.request(a.heartbeatFrame(sa, rev!.assignmentEpoch)), Op.HEARTBEAT);
      expectOk(await b.request(b.heartbeatFrame(sb, asgB!.assignmentEpoch)), Op.HEARTBEAT);
    }
    expect((await group(t, "g").info()).members).toHaveLength(2);
    // A stops; B goes on. A's session removes A within 3 session timeouts (4.5 s) of its last HEARTBEAT.
    let epoch = asgB!.assignmentEpoch;
    const moved = [];
    for (let i = 0; i < 40 && moved.length === 0; i++) {
      await sleep(250);
      moved.push(...(await b.peek(isAssign, 0)));
      b.pushes.length = 0;
      if (moved.length) epoch = moved[moved.length - 1]!.assignmentEpoch;
      expectOk(await b.request(b.heartbeatFrame(sb, epoch)), Op.HEARTBEAT);
    }
    expect(moved.map((x) => x.partition)).toEqual([1 - rev!.partition]); // the one A kept
    const info = await group(t, "g").info();
    expect(info.members.map((m) => m.memberId)).toEqual([Number(sb.memberId)]);
    expect(info.expiredMembers).toBe(1);
    expectErr(await a.request(a.heartbeatFrame(sa, rev!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    await closeAndSettle(group(t, "g"), [a, b]);
  }, 20_000);

  it("a REVOKE that is never confirmed is forced after the revocation timeout", async () => {
    const a = await Peer.open();
    const t = await topic(a, 2);
    await a.subscribe(t.topicId, "g");
    await a.confirm(await a.take(isAssign, 2));
    const b = await Peer.open();
    await b.subscribe(t.topicId, "g");
    const [rev] = await a.take(isRevoke);
    expect(await b.peek(isAssign, 300)).toEqual([]);
    const [asg] = await b.take(isAssign, 1, 3000); // forced at 600 ms
    expect([asg!.partition, asg!.ownershipEpoch]).toEqual([rev!.partition, 2n]);
    expect((await group(t, "g").info()).forcedRevocations).toBe(1);
    expectErr(await a.request(a.controlAckFrame(rev!)), ErrorCode.UNKNOWN_NOTICE, Op.CONTROL_ACK);
    await closeAndSettle(group(t, "g"), [a, b]);
  });

  it("after a forced REVOKE, the late CONTROL_ACK frees the credit of the revoked partition's deliveries the client dropped", async () => {
    const a = await Peer.open();
    const t = await topic(a, 2);
    const sa = await a.subscribe(t.topicId, "g", { creditCount: 4 });
    await a.confirm(await a.take(isAssign, 2));
    for (const p of [0, 0, 1, 1]) expectOk(await a.publish(t.topicId, p, `m${p}`), Op.PUB);
    const held = await a.take(isMsg, 4); // the window is full
    const b = await Peer.open();
    await b.subscribe(t.topicId, "g");
    const [rev] = await a.take(isRevoke);
    // A settles what it keeps and drops the revoked partition's messages unsettled (as the SDK drops its buffer).
    for (const m of held.filter((m) => m.partition !== rev!.partition)) expectOk(await a.request(a.ackFrame(m)), Op.ACK);
    await b.take(isAssign, 1, 3000); // the REVOKE was forced (600 ms)
    expectErr(await a.request(a.controlAckFrame(rev!)), ErrorCode.UNKNOWN_NOTICE, Op.CONTROL_ACK);
    const credit = expectOk(await a.request({
      op: Op.CREDIT, subscriptionId: sa.subscriptionId, membershipEpoch: sa.membershipEpoch, ownershipEpoch: 0n,
      mode: CreditMode.ADD, creditCount: 0, creditBytes: 0, reserved: 0,
    }), Op.CREDIT);
    expect(decodeCreditResult(credit.result)).toMatchObject({ grantedCount: 4, outstandingCount: 0, outstandingBytes: 0 });
    // The whole window is usable again on the partition A kept.
    const kept = 1 - rev!.partition;
    expectOk(await a.request(a.heartbeatFrame(sa, rev!.assignmentEpoch)), Op.HEARTBEAT);
    for (let i = 0; i < 4; i++) expectOk(await a.publish(t.topicId, kept, `n${i}`), Op.PUB);
    expect((await a.take(isMsg, 4)).map((m) => [m.partition, text(m)])).toEqual([0, 1, 2, 3].map((i) => [kept, `n${i}`]));
    await closeAndSettle(group(t, "g"), [a, b]);
  });
});

/*
 * Objects started by their own alarm (after a runtime restart or an
 * eviction) get no `ctx.id.name`; named calls afterwards reach that same
 * instance. The Partition and the ConsumerGroup must still know who they
 * are (objects/shared/object-name.ts).
 */
describe("objects started by their alarm", () => {
  it("a Partition started by its deadline alarm redelivers to its consumer and keeps serving it", async () => {
    const p = await Peer.open();
    const t = await topic(p, 1);
    const s = await p.subscribe(t.topicId, "g");
    const [asg] = await p.take(isAssign);
    await p.confirm([asg!]);
    expectOk(await p.publish(t.topicId, 0, "a"), Op.PUB);
    const [first] = await p.take(isMsg);
    await evict(partitionStub(env, "default", t.incarnation, t.topicId, 0));
    // The 500 ms work deadline fires the alarm of an instance started without a name.
    await heartbeatUntil(p, s, asg!.assignmentEpoch, 4000, () => p.pushes.some(isMsg));
    const [again] = await p.take(isMsg, 1, 100);
    expect([text(again!), again!.sequence, again!.attempt]).toEqual(["a", first!.sequence, 2]);
    expectOk(await p.request(p.ackFrame(again!)), Op.ACK);
    expectOk(await p.publish(t.topicId, 0, "b"), Op.PUB);
    const [next] = await p.take(isMsg);
    expect([text(next!), next!.attempt]).toEqual(["b", 1]);
    expectOk(await p.request(p.ackFrame(next!)), Op.ACK);
    await closeAndSettle(group(t, "g"), [p]);
  }, 15_000);

  it("a ConsumerGroup started by its revocation-timeout alarm fences and assigns the partition", async () => {
    const a = await Peer.open();
    const t = await topic(a, 2);
    await a.subscribe(t.topicId, "g");
    const asgA = await a.take(isAssign, 2);
    await a.confirm(asgA);
    const b = await Peer.open();
    await b.subscribe(t.topicId, "g");
    const [rev] = await a.take(isRevoke); // never confirmed: forced after 600 ms
    await evict(group(t, "g"));
    const [asgB] = await b.take(isAssign, 1, 3000); // within the 1.5 s session timeout: no heartbeats needed
    expect([asgB!.partition, asgB!.ownershipEpoch]).toEqual([rev!.partition, 2n]);
    expect((await group(t, "g").info()).forcedRevocations).toBe(1); // a new stub: the evicted instance's stays broken
    await closeAndSettle(group(t, "g"), [a, b]);
  }, 15_000);
});
