/**
 * Whole MortarMQ sessions in Node: the sans-IO Connection
 * (objects/session/connection.ts) with its consumer, credit window, lanes
 * and response queue, driven frame by frame against a fake broker behind
 * its port (mortar-fake-broker.ts; consumer groups run by the real group
 * state machine). Every frame the session writes is asserted exactly.
 */
import { describe, expect, it } from "vitest";
import {
  ConnectClientFlags, ControlAckResult, DeclareFlags, Discard, ErrorCode, NoticeKind, Op, RetentionFields, ServerFeatures, StartPolicy,
  SUB_PARTITION_ANY, encodeConnectFeatures, encodeDeclareResult, encodeFrames, encodePubResult,
  encodeSubResult, errFrame, okFrame, utf8Bytes, type Frame, type MsgFrame, type NoticeFrame, type PubFrame,
} from "../../wire/mortar";
import { Connection } from "../../objects/session/connection";
import { FakeBroker } from "./mortar-fake-broker";

const bytes = (s: string) => utf8Bytes(s);
const pub = (partition: number, value: string): PubFrame => ({
  op: Op.PUB, topicId: 1, partition, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: bytes(value),
});
const pubOk = (sequence: number, commitSeq: number) =>
  okFrame(Op.PUB, encodePubResult({ sequence: BigInt(sequence), durability: 1, leaderEpoch: 1n, commitSeq: BigInt(commitSeq), resultFlags: 0 }));
const msg = (subscriptionId: number, partition: number, sequence: number, deliveryId: number, attempt: number, ownershipEpoch: number, value: string): MsgFrame => ({
  op: Op.MSG, subscriptionId, topicId: 1, partition, sequence: BigInt(sequence), deliveryId: BigInt(deliveryId), attempt,
  ownershipEpoch: BigInt(ownershipEpoch), producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: bytes(value),
});
const notice = (noticeId: number, kind: number, groupId: number, memberId: number, membershipEpoch: number, assignmentEpoch: number, ownershipEpoch: number, partition: number): NoticeFrame => ({
  op: Op.NOTICE, noticeId: BigInt(noticeId), kind, groupId, membershipEpoch, assignmentEpoch, ownershipEpoch: BigInt(ownershipEpoch),
  topicId: 1, partition, memberId: BigInt(memberId),
});

/** Lets every call, microtask and short timer (the fetch loop's 10 ms low-water wait) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 4; i++) await new Promise((r) => setTimeout(r, 15));
}

function session(tokens?: Record<string, string>) {
  const broker = new FakeBroker(tokens);
  const conn = new Connection(broker, { sessionId: "session-under-test" });
  broker.conn = conn;
  const send = (frames: Frame[]) => conn.receive(encodeFrames(frames));
  return { broker, conn, send };
}

describe("a whole MortarMQ session through the sans-IO connection", () => {
  it("CONNECT, DECLARE, pipelined PUB, SUB with credit, NOTICE ASSIGN/REVOKE (revoke-before-assign), ACK with a stale ownership epoch", async () => {
    const { broker, conn, send } = session({ "tok-acme": "acme" });

    // CONNECT (then PING, pipelined behind it)
    send([{ op: Op.CONNECT, protocolVersion: 1, clientFlags: 0, token: bytes("tok-acme"), reserved: 0 }, { op: Op.PING }]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.CONNECT), okFrame(Op.PING)]);
    expect(conn.tenant).toBe("acme");

    // DECLARE
    send([{ op: Op.DECLARE, topic: bytes("orders"), partitionCount: 2, flags: 0 }]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 2, created: 1 }))]);

    // pipelined PUBs: partition 0 answers late, the answers still leave in request order
    const appends = () => broker.calls.filter((c) => c.startsWith("append"));
    const release = broker.hold(0);
    send([pub(0, "a"), pub(1, "b"), { op: Op.PING }, pub(0, "c"), pub(7, "no such partition")]);
    await settle();
    expect(appends()).toEqual(["append p0 ×2", "append p1 ×1"]); // PUBs arriving together: one append per partition
    send([pub(0, "d")]);
    await settle();
    expect(broker.take()).toEqual([]); // everything waits behind the first PUB
    expect(appends()).toEqual(["append p0 ×2", "append p1 ×1"]); // one append in flight per partition: "d" waits
    release();
    await settle();
    expect(broker.take()).toEqual([
      pubOk(1, 2), pubOk(1, 1), okFrame(Op.PING), pubOk(2, 2), // "a" and "c" were committed together (commit_seq 2)
      errFrame(ErrorCode.PARTITION_OUT_OF_RANGE, Op.PUB, "partition 7 is not below partition_count 2 of topic_id 1"),
      pubOk(3, 3),
    ]);
    expect(appends()).toEqual(["append p0 ×2", "append p1 ×1", "append p0 ×1"]);

    // SUB (push mode, a credit window of 2 messages)
    send([{ op: Op.SUB, group: bytes("billing"), topicId: 1, partition: SUB_PARTITION_ANY, startPolicy: StartPolicy.EARLIEST, creditCount: 2, creditBytes: 0, flags: 0 }]);
    await settle();
    // the OK first, then the group's NOTICEs (held until the OK was written), then MSGs up to the credit window: 2 of 4 records
    expect(broker.take()).toEqual([
      okFrame(Op.SUB, encodeSubResult({ subscriptionId: 1, memberId: 1n, membershipEpoch: 1, assignmentEpoch: 1 })),
      notice(1, NoticeKind.ASSIGN, 1, 1, 1, 1, 1, 0),
      notice(2, NoticeKind.ASSIGN, 1, 1, 1, 1, 1, 1),
      msg(1, 0, 1, 1, 1, 1, "a"),
      msg(1, 1, 1, 2, 1, 1, "b"),
    ]);

    // ACK returns one credit: the next record of partition 0 follows
    const ack = (subscriptionId: number, partition: number, seq: number, deliveryId: number, ownershipEpoch: number): Frame => ({
      op: Op.ACK, subscriptionId, topicId: 1, partition, seq: BigInt(seq), deliveryId: BigInt(deliveryId), ownershipEpoch: BigInt(ownershipEpoch), flags: 0,
    });
    send([ack(1, 0, 1, 1, 1)]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.ACK), msg(1, 0, 2, 3, 1, 1, "c")]);

    // a second member joins the group (a second SUB on this connection): partition 1 must move to it —
    // REVOKE to its owner first; no ASSIGN before the owner confirmed with CONTROL_ACK
    send([{ op: Op.SUB, group: bytes("billing"), topicId: 1, partition: SUB_PARTITION_ANY, startPolicy: StartPolicy.EARLIEST, creditCount: 0, creditBytes: 0, flags: 0 }]);
    await settle();
    const revoke = notice(3, NoticeKind.REVOKE, 1, 1, 1, 2, 1, 1);
    expect(broker.take()).toEqual([
      revoke, // a push to subscription 1: it does not wait for the new SUB's answer
      okFrame(Op.SUB, encodeSubResult({ subscriptionId: 2, memberId: 2n, membershipEpoch: 2, assignmentEpoch: 2 })),
    ]);
    expect(broker.calls.filter((c) => c.startsWith("fence"))).toEqual(["fence p0 epoch 1", "fence p1 epoch 1"]); // not fenced yet

    // CONTROL_ACK of the REVOKE: the group fences partition 1 to the new member, then ASSIGNs it (the push
    // leaves as soon as the group sends it, before the CONTROL_ACK's answer); the delivery the old owner did
    // not settle ("b") is redelivered to the new owner (attempt 2, under its epoch). The old owner's credit
    // for partition 1 came back with the release: it gets the next record of partition 0 ("d").
    send([{
      op: Op.CONTROL_ACK, noticeId: revoke.noticeId, noticeKind: NoticeKind.REVOKE, groupId: 1, membershipEpoch: 1,
      assignmentEpoch: revoke.assignmentEpoch, ownershipEpoch: revoke.ownershipEpoch, result: ControlAckResult.OK,
    }]);
    await settle();
    expect(broker.take()).toEqual([
      notice(4, NoticeKind.ASSIGN, 2, 2, 2, 3, 2, 1),
      okFrame(Op.CONTROL_ACK),
      msg(2, 1, 1, 4, 2, 2, "b"),
      msg(1, 0, 3, 5, 1, 1, "d"),
    ]);
    expect(broker.calls.filter((c) => c.startsWith("fence"))).toEqual(["fence p0 epoch 1", "fence p1 epoch 1", "fence p1 epoch 2"]);

    // the old owner's ACK of "b" under ownership epoch 1 is fenced by the Partition; the new owner's goes through
    send([ack(1, 1, 1, 2, 1), ack(2, 1, 1, 4, 2), { op: Op.PING }]);
    await settle();
    expect(broker.take()).toEqual([
      errFrame(ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK, "ownership_epoch is older than the partition's: another member owns it now"),
      okFrame(Op.ACK),
      okFrame(Op.PING),
    ]);

    // the connection ends: both members leave their group
    await conn.end();
    expect(broker.calls.filter((c) => c.startsWith("leave"))).toEqual(["leave billing member 1", "leave billing member 2"]);
    expect(broker.subs.size).toBe(0);
  });
});

describe("session rules (spec §2.1; docs/protocol.md \"Connections\")", () => {
  const connect = (token = "", version = 1): Frame => ({ op: Op.CONNECT, protocolVersion: version, clientFlags: 0, token: bytes(token), reserved: 0 });

  it("extensions: CONNECT with FEATURES is answered the broker's features; the DECLARE retention tail goes to the registry and its OK tail comes back only to a request with the flag", async () => {
    const { broker, send } = session({ tok: "acme" });
    send([{ op: Op.CONNECT, protocolVersion: 1, clientFlags: ConnectClientFlags.FEATURES, token: bytes("tok"), reserved: 0 }]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.CONNECT, encodeConnectFeatures(ServerFeatures.RETENTION))]);
    const tail = { fields: RetentionFields.MS, retentionMs: 3_600_000n, retentionBytes: 0n, retentionMessages: 0n, discard: 0 };
    send([
      { op: Op.DECLARE, topic: bytes("t"), partitionCount: 1, flags: DeclareFlags.RETENTION, retention: tail },
      { op: Op.DECLARE, topic: bytes("t"), partitionCount: 1, flags: 0 },
    ]);
    await settle();
    const inForce = { retentionMs: 604_800_000n, retentionBytes: 0n, retentionMessages: 0n, discard: Discard.OLD };
    expect(broker.take()).toEqual([
      okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 1, created: 1, retention: inForce })),
      okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 1, created: 0 })), // 5 bytes: no flag, no tail
    ]);
    expect(broker.retentionTails).toEqual([tail, undefined]);
    // a v0 CONNECT (no FEATURES bit) gets the empty result
    const v0 = session({ tok: "acme" });
    v0.send([{ op: Op.CONNECT, protocolVersion: 1, clientFlags: 0, token: bytes("tok"), reserved: 0 }]);
    await settle();
    expect(v0.broker.take()).toEqual([okFrame(Op.CONNECT)]);
  });

  it("allows only PING before CONNECT; another request gets NOT_CONNECTED, the connection closes (1002) and nothing after it runs", async () => {
    const { broker, send } = session();
    send([{ op: Op.PING }, pub(0, "too early"), { op: Op.PING }, connect()]);
    await settle();
    expect(broker.take()).toEqual([
      okFrame(Op.PING),
      errFrame(ErrorCode.NOT_CONNECTED, Op.PUB, "CONNECT first: only CONNECT, PING and ERR are allowed before it"),
    ]);
    expect(broker.closed).toEqual({ code: 1002, reason: "NOT_CONNECTED" });
    expect(broker.calls).toEqual([]); // the CONNECT behind it never ran
  });

  it("ignores a client ERR (before CONNECT too) and a client OK after CONNECT: no slot, no answer", async () => {
    const { broker, send } = session();
    send([{ op: Op.ERR, code: 1, requestOp: 0, message: new Uint8Array(0) }, connect(), { op: Op.OK, requestOp: Op.PING, result: new Uint8Array(0) }, { op: Op.PING }]);
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.CONNECT), okFrame(Op.PING)]);
    expect(broker.closed).toBeNull();
  });

  it("refuses protocol_version ≠ 1 with UNSUPPORTED_WIRE_VERSION and closes; a second CONNECT gets ALREADY_CONNECTED and the connection stays", async () => {
    const a = session();
    a.send([connect("", 2)]);
    await settle();
    expect(a.broker.take().map((f) => f.op === Op.ERR && [f.code, f.requestOp])).toEqual([[ErrorCode.UNSUPPORTED_WIRE_VERSION, Op.CONNECT]]);
    expect(a.broker.closed?.code).toBe(1002);
    expect(a.broker.calls).toEqual([]); // not authenticated at all

    const b = session();
    b.send([connect(), connect(), connect("", 2), { op: Op.PING }]);
    await settle();
    expect(b.broker.take()).toEqual([
      okFrame(Op.CONNECT),
      errFrame(ErrorCode.ALREADY_CONNECTED, Op.CONNECT, "this connection is already connected"),
      errFrame(ErrorCode.ALREADY_CONNECTED, Op.CONNECT, "this connection is already connected"),
      okFrame(Op.PING),
    ]);
    expect(b.broker.closed).toBeNull();
    expect(b.broker.calls).toEqual(["authenticate"]);
  });

  it("an unknown token gets AUTH_FAILED and closes with 1008", async () => {
    const { broker, send } = session({ good: "acme" });
    send([connect("bad"), { op: Op.PING }]);
    await settle();
    expect(broker.take()).toEqual([errFrame(ErrorCode.AUTH_FAILED, Op.CONNECT, "unknown token")]);
    expect(broker.closed).toEqual({ code: 1008, reason: "AUTH_FAILED" });
  });

  it("a framing error answers the requests before it first, then ERR and close; the stream is never read again", async () => {
    const { broker, conn, send } = session();
    send([connect(), { op: Op.PING }]);
    conn.receive(Uint8Array.of(0, 0, 0, 1, 0xff, 0, 0, 0, 1, Op.PING));
    await settle();
    expect(broker.take()).toEqual([okFrame(Op.CONNECT), okFrame(Op.PING), errFrame(ErrorCode.ILLEGAL_OP, 0xff, "op 0xff is illegal")]);
    expect(broker.closed).toEqual({ code: 1002, reason: "ILLEGAL_OP" });
    expect(conn.receive(encodeFrames([{ op: Op.PING }]))).toBe(0);
  });

  it("BACKPRESSURE for requests beyond the unanswered-bytes bound (answered in order, not executed)", async () => {
    const { broker, conn, send } = session();
    send([connect()]);
    await settle();
    broker.take();
    conn.maxPendingBytes = 1000;
    const release = broker.holdDeclares(); // the DECLARE is a barrier: the PUBs behind it wait, counted as unanswered bytes
    send([{ op: Op.DECLARE, topic: bytes("bp"), partitionCount: 1, flags: 0 }, pub(0, "x".repeat(400)), pub(0, "y".repeat(400)), pub(0, "z".repeat(400))]);
    await settle();
    release();
    await settle();
    expect(broker.take()).toEqual([
      okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 1, created: 1 })),
      pubOk(1, 2), pubOk(2, 2),
      errFrame(ErrorCode.BACKPRESSURE, Op.PUB, "session over its unanswered-request bound; retry later"),
    ]);
    expect(broker.calls.filter((c) => c.startsWith("append"))).toEqual(["append p0 ×2"]);
  });

  it("beyond the hard bound of queued answers: ONE closing BACKPRESSURE (request_op 0), close 1008, later frames ignored", async () => {
    const { broker, conn, send } = session();
    send([connect()]);
    await settle();
    broker.take();
    conn.maxPendingBytes = 1000;
    conn.maxQueuedSlots = 6;
    const release = broker.holdDeclares();
    send([{ op: Op.DECLARE, topic: bytes("bp-hard"), partitionCount: 1, flags: 0 }, ...Array.from({ length: 10 }, () => pub(0, "v".repeat(400))), { op: Op.PING }]);
    await settle();
    release();
    await settle();
    const out = broker.take();
    expect(out.slice(0, 3)).toEqual([okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 1, created: 1 })), pubOk(1, 2), pubOk(2, 2)]);
    expect(out.slice(3, 6)).toEqual(Array(3).fill(errFrame(ErrorCode.BACKPRESSURE, Op.PUB, "session over its unanswered-request bound; retry later")));
    expect(out.slice(6)).toEqual([errFrame(ErrorCode.BACKPRESSURE, 0,
      "closing: 6 answers (192 bytes ready) are waiting to be written; max 6 answers, 67108864 bytes")]);
    expect(broker.closed).toEqual({ code: 1008, reason: "BACKPRESSURE" });
  });
});
