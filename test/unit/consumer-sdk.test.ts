import { describe, expect, it } from "vitest";
import { ErrorCode, HeartbeatState, NoticeKind, Op, type Frame, type MsgFrame, type NoticeFrame } from "../../wire/mortar";
import { Subscription } from "../../client/sdk/consumer";
import { MortarClientError } from "../../client/sdk/errors";

/** A host that records requests and answers them OK (or with a scripted error). */
class Host {
  sent: Frame[] = [];
  fail = new Map<number, number>();
  detached: number[] = [];
  request(f: Frame): Promise<unknown> {
    this.sent.push(f);
    const code = this.fail.get(f.op);
    if (code) return Promise.reject(new MortarClientError(code, "scripted", f.op, "broker"));
    return Promise.resolve({ op: Op.OK, requestOp: f.op, result: new Uint8Array(0) });
  }
  detach(id: number) {
    this.detached.push(id);
  }
}

const notice = (kind: number, partition: number, ownershipEpoch: bigint, assignmentEpoch: number): NoticeFrame => ({
  op: Op.NOTICE, noticeId: BigInt(partition * 10 + kind), kind, groupId: 3, membershipEpoch: 1, assignmentEpoch, ownershipEpoch, topicId: 1, partition, memberId: 9n,
});
const msg = (partition: number, seq: number, ownershipEpoch = 1n): MsgFrame => ({
  op: Op.MSG, subscriptionId: 3, topicId: 1, partition, sequence: BigInt(seq), deliveryId: BigInt(seq * 100), attempt: 1, ownershipEpoch,
  producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new TextEncoder().encode(`v${seq}`),
});
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe("Subscription (SDK consumer)", () => {
  it("confirms ASSIGN at once, hands out messages in order, and acks with the delivery's ids", async () => {
    const h = new Host();
    const s = new Subscription(h, 3, 1, "g", 9n, 1, 1, false, { heartbeatMs: 0 });
    s.onNotice(notice(NoticeKind.ASSIGN, 0, 4n, 2));
    await tick();
    expect(h.sent[0]).toMatchObject({ op: Op.CONTROL_ACK, noticeId: 0n, noticeKind: NoticeKind.ASSIGN, groupId: 3, ownershipEpoch: 4n, assignmentEpoch: 2 });
    expect([...s.assignment]).toEqual([[0, 4n]]);
    expect(s.assignmentEpoch).toBe(2);
    s.onMessage(msg(0, 1, 4n));
    s.onMessage(msg(0, 2, 4n));
    const a = (await s.next())!;
    const b = (await s.next())!;
    expect([a.text(), b.text()]).toEqual(["v1", "v2"]);
    await a.ack();
    await b.nack(true);
    await expect(a.ack()).rejects.toMatchObject({ code: ErrorCode.UNKNOWN_DELIVERY });
    expect(h.sent.slice(1)).toMatchObject([
      { op: Op.ACK, subscriptionId: 3, partition: 0, seq: 1n, deliveryId: 100n, ownershipEpoch: 4n, flags: 0 },
      { op: Op.NACK, seq: 2n, reason: 1 },
    ]);
  });

  it("on REVOKE drops buffered messages of the partition and confirms once in-hand ones are settled", async () => {
    const h = new Host();
    const s = new Subscription(h, 3, 1, "g", 9n, 1, 1, false, { heartbeatMs: 0 });
    s.onNotice(notice(NoticeKind.ASSIGN, 0, 1n, 1));
    s.onNotice(notice(NoticeKind.ASSIGN, 1, 1n, 1));
    s.onMessage(msg(0, 1));
    s.onMessage(msg(0, 2));
    s.onMessage(msg(1, 1));
    const held = (await s.next())!; // partition 0, seq 1 in the application's hands
    s.onNotice(notice(NoticeKind.REVOKE, 0, 1n, 2));
    await tick(60);
    expect(h.sent.filter((f) => f.op === Op.CONTROL_ACK)).toHaveLength(2); // only the ASSIGNs so far
    expect((await s.next())!.partition).toBe(1); // buffered 0/2 was dropped
    await held.ack();
    await tick(60);
    expect(h.sent.filter((f) => f.op === Op.CONTROL_ACK).map((f) => (f as { noticeKind: number }).noticeKind)).toEqual([0, 0, 1]);
    s.onMessage(msg(0, 3)); // a late MSG of the revoked partition is dropped
    expect(await s.next(50)).toBeNull();
  });

  it("heartbeats with the latest epochs; a lost membership ends the subscription", async () => {
    const h = new Host();
    const s = new Subscription(h, 3, 1, "g", 9n, 5, 1, false, { heartbeatMs: 20 });
    s.onNotice(notice(NoticeKind.ASSIGN, 0, 1n, 7));
    await tick(50);
    expect(h.sent.find((f) => f.op === Op.HEARTBEAT)).toMatchObject({ memberId: 9n, membershipEpoch: 5, assignmentEpoch: 7, state: HeartbeatState.ACTIVE });
    h.fail.set(Op.HEARTBEAT, ErrorCode.STALE_MEMBERSHIP_EPOCH);
    const waiting = s.next();
    await expect(waiting).rejects.toMatchObject({ code: ErrorCode.STALE_MEMBERSHIP_EPOCH });
    expect(s.closed).toBe(true);
    expect(h.detached).toEqual([3]);
  });

  it("pull sends the ownership epochs in partition order and returns the MSGs that came before the OK", async () => {
    const h = new Host();
    const s = new Subscription(h, 3, 1, "g", 9n, 1, 1, true, { heartbeatMs: 0 });
    s.onNotice(notice(NoticeKind.ASSIGN, 2, 5n, 3));
    s.onNotice(notice(NoticeKind.ASSIGN, 0, 8n, 3));
    const orig = h.request.bind(h);
    h.request = (f: Frame) => {
      if (f.op === Op.PULL) {
        s.onMessage(msg(2, 1, 5n));
        s.onMessage(msg(0, 4, 8n));
      }
      return orig(f);
    };
    const got = await s.pull({ maxMsgs: 5, waitMs: 100 });
    expect(got.map((m) => [m.partition, m.text()])).toEqual([[2, "v1"], [0, "v4"]]);
    expect(h.sent.find((f) => f.op === Op.PULL)).toMatchObject({ ownershipEpochs: [8n, 5n], assignmentEpoch: 3, maxMsgs: 5, waitMs: 100, memberId: 9n });
    await s.close();
    expect(h.sent[h.sent.length - 1]).toMatchObject({ op: Op.HEARTBEAT, state: HeartbeatState.LEAVE });
  });
});
