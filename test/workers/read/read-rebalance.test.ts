/**
 * Read path across rebalances with deliveries outstanding (default timers:
 * the 30 s ack wait cannot redeliver anything behind the test's back): a partition revoked, moved and given
 * back to the same member under a newer ownership epoch; the credit window
 * and the Partition's counters add up with what the clients saw.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CreditMode, ErrorCode, Op, decodeCreditResult } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult } from "../../../objects/registry/rpc";
import { expectErr, expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, isRevoke, text } from "../helpers/peer";

describe("rebalance with deliveries outstanding", () => {
  it("revoked, moved, and given back to the same member: old deliveries are fenced, the window frees, counters add up", async () => {
    const a = await Peer.open();
    const d = await a.c.declare(`rb-${Math.random().toString(36).slice(2, 8)}`, 2);
    const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
    if (!r.ok) throw new Error("lookup");
    const sa = await a.subscribe(d.topicId, "g", { creditCount: 4 });
    await a.confirm(await a.take(isAssign, 2));
    for (const p of [0, 0, 1, 1]) expectOk(await a.publish(d.topicId, p, `m${p}`), Op.PUB);
    const firstA = await a.take(isMsg, 4); // the window is full
    // B joins: A confirms the REVOKE at once and keeps its deliveries of that partition unsettled.
    const b = await Peer.open();
    const sb = await b.subscribe(d.topicId, "g");
    const [rev] = await a.take(isRevoke);
    const moved = rev!.partition;
    await a.confirm([rev!]);
    const [asgB] = await b.take(isAssign);
    expect([asgB!.partition, asgB!.ownershipEpoch]).toEqual([moved, 2n]);
    await b.confirm([asgB!]);
    const atB = await b.take(isMsg, 2);
    expect(atB.map((m) => [m.attempt, m.ownershipEpoch])).toEqual([[2, 2n], [2, 2n]]);
    // B leaves without settling: the partition comes back to A under epoch 3.
    expectOk(await b.request(b.heartbeatFrame(sb, asgB!.assignmentEpoch, true)), Op.HEARTBEAT);
    const [back] = await a.take(isAssign);
    expect([back!.partition, back!.ownershipEpoch]).toEqual([moved, 3n]);
    await a.confirm([back!]);
    const again = await a.take(isMsg, 2);
    expect(again.map((m) => [m.partition, m.attempt, m.ownershipEpoch])).toEqual([[moved, 3, 3n], [moved, 3, 3n]]);
    // A's first deliveries of that partition are fenced; the window counts only the 2 kept + 2 redelivered.
    const old = firstA.filter((m) => m.partition === moved);
    for (const m of old) expectErr(await a.request(a.ackFrame(m)), ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK);
    const credit = decodeCreditResult(expectOk(await a.request({
      op: Op.CREDIT, subscriptionId: sa.subscriptionId, membershipEpoch: sa.membershipEpoch, ownershipEpoch: 0n,
      mode: CreditMode.ADD, creditCount: 0, creditBytes: 0, reserved: 0,
    }), Op.CREDIT).result);
    expect(credit).toMatchObject({ grantedCount: 4, outstandingCount: 4 });
    for (const m of [...firstA.filter((m) => m.partition !== moved), ...again]) expectOk(await a.request(a.ackFrame(m)), Op.ACK);
    expect(again.map(text)).toEqual([`m${moved}`, `m${moved}`]);
    const info = async (p: number) => (await partitionStub(env, "default", r.topic.incarnation, d.topicId, p).info()).groups[0]!;
    expect(await info(moved)).toMatchObject({ ownershipEpoch: 3, ackFloor: 3, delivered: 6, redelivered: 4, acked: 2, inFlight: 0, pendingRedelivery: 0, pendingDeadLetter: 0 });
    expect(await info(1 - moved)).toMatchObject({ ackFloor: 3, delivered: 2, redelivered: 0, acked: 2, inFlight: 0 });
    // The whole window is free again: 4 new records flow.
    for (let i = 0; i < 4; i++) expectOk(await a.publish(d.topicId, moved, `n${i}`), Op.PUB);
    expect((await a.take(isMsg, 4)).map(text)).toEqual(["n0", "n1", "n2", "n3"]);
    await closeAndSettle(groupStub(env, "default", r.topic.incarnation, d.topicId, "g"), [a, b]);
  }, 15_000);
});
