import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, NoticeKind, Op } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult } from "../../../objects/registry/rpc";
import { expectErr, expectOk } from "../helpers/mortar-ws";
import { Peer, isAssign, isMsg, isRevoke, text } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function topicOf(name: string, partitions: number, peer: Peer) {
  const d = await peer.c.declare(name, partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup failed");
  return r.topic;
}

describe("consumer groups: assignment, revoke-before-assign, fencing", () => {
  it("two members split 4 partitions; a third joins with revoke-before-assign; a leaver's partitions move; the old owner's ACK is refused", async () => {
    const name = unique("grp");
    const a = await Peer.open();
    const topic = await topicOf(name, 4, a);
    const group = groupStub(env, "default", topic.incarnation, topic.topicId, "workers");
    const sa = await a.subscribe(topic.topicId, "workers");
    expect(sa).toMatchObject({ subscriptionId: 1, membershipEpoch: 1 });
    const assignedA = await a.take(isAssign, 4);
    expect(assignedA.map((x) => x.partition).sort()).toEqual([0, 1, 2, 3]);
    expect(assignedA.every((x) => x.groupId === sa.subscriptionId && x.memberId === sa.memberId && x.ownershipEpoch === 1n)).toBe(true);
    await a.confirm(assignedA);

    // A message A holds on partition 3 when the group grows.
    expectOk(await a.publish(topic.topicId, 3, "before-move"), Op.PUB);
    const [m] = await a.take(isMsg);
    expect([text(m!), m!.partition, m!.ownershipEpoch, m!.attempt]).toEqual(["before-move", 3, 1n, 1]);

    // Second member: A is asked to give up two partitions; B hears nothing until A confirms.
    const b = await Peer.open();
    const sb = await b.subscribe(topic.topicId, "workers");
    const revokes = await a.take(isRevoke, 2);
    expect(revokes.map((x) => x.partition).sort()).toEqual([2, 3]);
    // While the REVOKE is pending, A gets no new work from partition 3 but may still settle what it holds.
    expectOk(await a.publish(topic.topicId, 3, "after-revoke"), Op.PUB);
    expect(await a.peek(isMsg)).toEqual([]);
    expect(await b.peek(isAssign, 0)).toEqual([]);
    expectOk(await a.request(a.ackFrame(m!)), Op.ACK);
    await a.confirm(revokes);
    const assignedB = await b.take(isAssign, 2);
    expect(assignedB.map((x) => [x.partition, x.ownershipEpoch]).sort()).toEqual([[2, 2n], [3, 2n]]);
    await b.confirm(assignedB);
    const [later] = await b.take(isMsg);
    expect([text(later!), later!.attempt, later!.ownershipEpoch]).toEqual(["after-revoke", 1, 2n]);
    expectOk(await b.request(b.ackFrame(later!)), Op.ACK);
    let info = await group.info();
    expect(info.members.map((x) => x.partitions)).toEqual([[0, 1], [2, 3]]);

    // A message in flight to B on partition 3 when it moves: B's late ACK is fenced, the new owner gets it again.
    expectOk(await b.publish(topic.topicId, 3, "in-flight"), Op.PUB);
    const [inflight] = await b.take(isMsg);
    expect(inflight!.ownershipEpoch).toBe(2n);
    const c = await Peer.open();
    const sc = await c.subscribe(topic.topicId, "workers");
    const [r3] = await b.take(isRevoke); // quotas 2/1/1: the +1 stays with A (joined first), B gives one up
    expect(r3!.partition).toBe(3);
    expect(await c.peek(isAssign)).toEqual([]);
    expect(await a.peek(isRevoke, 0)).toEqual([]);
    await b.confirm([r3!]);
    const [assignC] = await c.take(isAssign);
    expect([assignC!.partition, assignC!.ownershipEpoch]).toEqual([3, 3n]);
    expectErr(await b.request(b.ackFrame(inflight!)), ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK);
    const [again] = await c.take(isMsg);
    expect([text(again!), again!.attempt, again!.ownershipEpoch, again!.subscriptionId]).toEqual(["in-flight", 2, 3n, sc.subscriptionId]);
    expect(again!.deliveryId).not.toBe(inflight!.deliveryId);
    expectOk(await c.request(c.ackFrame(again!)), Op.ACK);

    // B leaves: its partition moves at once (no revoke: it is gone) to C, the member with fewer.
    const hb = await b.request(b.heartbeatFrame(sb, r3!.assignmentEpoch, true));
    expectOk(hb, Op.HEARTBEAT);
    const [moved] = await c.take(isAssign);
    expect([moved!.partition, moved!.ownershipEpoch]).toEqual([2, 3n]);
    expect(await a.peek(isAssign, 100)).toEqual([]);
    info = await group.info();
    expect(info.members.map((x) => x.partitions)).toEqual([[0, 1], [2, 3]]);
    // B's subscription is closed on its connection now.
    expectErr(await b.request(b.heartbeatFrame(sb, 0)), ErrorCode.UNKNOWN_SUBSCRIPTION, Op.HEARTBEAT);
    const p3 = await partitionStub(env, "default", topic.incarnation, topic.topicId, 3).info();
    expect(p3.groups[0]).toMatchObject({ group: "workers", ownershipEpoch: 3, ackFloor: 4, nextSequence: 4, inFlight: 0, delivered: 4, acked: 3, redelivered: 1 });
    for (const p of [a, b, c]) p.close();
  }, 20_000);

  it("a closed connection's member leaves and its partitions move", async () => {
    const a = await Peer.open();
    const topic = await topicOf(unique("close"), 2, a);
    await a.subscribe(topic.topicId, "g");
    await a.confirm(await a.take(isAssign, 2));
    const b = await Peer.open();
    await b.subscribe(topic.topicId, "g");
    const revoke = await a.take(isRevoke);
    a.close(); // never confirms: the close removes A at once
    const got = await b.take(isAssign, 2);
    expect(got.map((x) => x.partition).sort()).toEqual([0, 1]);
    expect(revoke[0]!.kind).toBe(NoticeKind.REVOKE);
    b.close();
  }, 20_000);

  it("fences stale HEARTBEATs, CONTROL_ACKs and PULLs, and refuses unknown subscriptions", async () => {
    const a = await Peer.open();
    const topic = await topicOf(unique("fence"), 1, a);
    const s = await a.subscribe(topic.topicId, "f", { pull: true });
    const [asg] = await a.take(isAssign);
    expectErr(await a.request(a.heartbeatFrame({ ...s, membershipEpoch: s.membershipEpoch + 1 }, asg!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    expectErr(await a.request(a.heartbeatFrame({ ...s, memberId: s.memberId + 5n }, asg!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    expectErr(await a.request(a.heartbeatFrame(s, asg!.assignmentEpoch + 1)), ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.HEARTBEAT);
    expectErr(await a.request(a.heartbeatFrame({ ...s, subscriptionId: 77 }, asg!.assignmentEpoch)), ErrorCode.UNKNOWN_SUBSCRIPTION, Op.HEARTBEAT);
    expectErr(await a.request(a.controlAckFrame(asg!, { ownershipEpoch: 9n })), ErrorCode.UNKNOWN_NOTICE, Op.CONTROL_ACK);
    expectErr(await a.request(a.controlAckFrame(asg!, { noticeId: 999n })), ErrorCode.UNKNOWN_NOTICE, Op.CONTROL_ACK);
    expectErr(await a.request(a.controlAckFrame(asg!, { groupId: 42 })), ErrorCode.UNKNOWN_SUBSCRIPTION, Op.CONTROL_ACK);
    await a.confirm([asg!]);
    expectErr(await a.request(a.controlAckFrame(asg!)), ErrorCode.UNKNOWN_NOTICE, Op.CONTROL_ACK); // already confirmed
    const pull = (ownershipEpochs: bigint[], assignmentEpoch = asg!.assignmentEpoch) => ({
      op: Op.PULL, subscriptionId: s.subscriptionId, memberId: s.memberId, membershipEpoch: s.membershipEpoch, assignmentEpoch,
      ownershipEpochs, maxMsgs: 10, maxBytes: 0, waitMs: 0, minBytes: 0,
    } as const);
    expectErr(await a.request(pull([2n])), ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.PULL);
    expectErr(await a.request(pull([])), ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.PULL);
    expectErr(await a.request(pull([1n], asg!.assignmentEpoch - 1)), ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.PULL);
    expectErr(await a.request({ ...pull([1n]), membershipEpoch: 99 }), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.PULL);
    expectOk(await a.request(pull([1n])), Op.PULL);
    expectOk(await a.request(a.heartbeatFrame(s, asg!.assignmentEpoch)), Op.HEARTBEAT);
    // SUB errors: unknown topic, partition selector (stateless), and start policy.
    const bad = await a.request({ op: Op.SUB, group: new TextEncoder().encode("f"), topicId: 999, partition: 0xffff, startPolicy: 0, creditCount: 0, creditBytes: 0, flags: 0 });
    expectErr(bad, ErrorCode.UNKNOWN_TOPIC, Op.SUB);
    expectErr(await a.request({ op: Op.SUB, group: new TextEncoder().encode("f"), topicId: topic.topicId, partition: 0, startPolicy: 0, creditCount: 0, creditBytes: 0, flags: 0 }), ErrorCode.INVALID_PARTITION_SELECTOR, Op.SUB);
    a.close();
  }, 20_000);
});
