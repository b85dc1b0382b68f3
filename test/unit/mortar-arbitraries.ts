/** fast-check generators for MortarMQ v0 frames (every op, random fields). */
import fc from "fast-check";
import { DeclareFlags, Op, type Frame } from "../../wire/mortar";

const u8 = fc.integer({ min: 0, max: 0xff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
const u64 = fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn });
const bytes = (maxLength: number) => fc.uint8Array({ maxLength });

/** One arbitrary per op; byte fields kept small so runs stay fast. */
export const frameArbs: Record<string, fc.Arbitrary<Frame>> = {
  CONNECT: fc.record({ op: fc.constant(Op.CONNECT), protocolVersion: u8, clientFlags: u16, token: bytes(64), reserved: u32 }),
  // Without the RETENTION flag bit there is no tail; with it, the tail is always present (the flag announces it).
  DECLARE: fc.oneof(
    fc.record({ op: fc.constant(Op.DECLARE), topic: bytes(300), partitionCount: u16, flags: u16.map((f) => f & ~DeclareFlags.RETENTION) }),
    fc.record({
      op: fc.constant(Op.DECLARE), topic: bytes(300), partitionCount: u16, flags: u16.map((f) => f | DeclareFlags.RETENTION),
      retention: fc.record({ fields: u8, retentionMs: u64, retentionBytes: u64, retentionMessages: u64, discard: u8 }),
    }),
  ),
  PUB: fc.record({
    op: fc.constant(Op.PUB), topicId: u16, partition: u16, producerId: u64, producerSeq: u64, flags: u16,
    key: bytes(300), value: bytes(2048),
  }),
  SUB: fc.record({
    op: fc.constant(Op.SUB), group: bytes(64), topicId: u16, partition: u16, startPolicy: u8,
    creditCount: u16, creditBytes: u32, flags: u16,
  }),
  ACK: fc.record({
    op: fc.constant(Op.ACK), subscriptionId: u16, topicId: u16, partition: u16, seq: u64, deliveryId: u64,
    ownershipEpoch: u64, flags: u16,
  }),
  NACK: fc.record({
    op: fc.constant(Op.NACK), subscriptionId: u16, topicId: u16, partition: u16, seq: u64, deliveryId: u64,
    ownershipEpoch: u64, reason: u8, flags: u16,
  }),
  PING: fc.constant({ op: Op.PING }),
  ERR: fc.record({ op: fc.constant(Op.ERR), code: u16, requestOp: u8, message: bytes(600) }),
  OK: fc.record({ op: fc.constant(Op.OK), requestOp: u8, result: bytes(256) }),
  MSG: fc.record({
    op: fc.constant(Op.MSG), subscriptionId: u16, topicId: u16, partition: u16, sequence: u64, deliveryId: u64,
    attempt: u16, ownershipEpoch: u64, producerId: u64, producerSeq: u64, flags: u16, key: bytes(300), value: bytes(2048),
  }),
  PULL: fc.record({
    op: fc.constant(Op.PULL), subscriptionId: u16, memberId: u64, membershipEpoch: u32, assignmentEpoch: u32,
    ownershipEpochs: fc.array(u64, { maxLength: 40 }), maxMsgs: u16, maxBytes: u32, waitMs: u16, minBytes: u32,
  }),
  HEARTBEAT: fc.record({
    op: fc.constant(Op.HEARTBEAT), subscriptionId: u16, memberId: u64, membershipEpoch: u32, assignmentEpoch: u32, state: u8,
  }),
  NOTICE: fc.record({
    op: fc.constant(Op.NOTICE), noticeId: u64, kind: u8, groupId: u16, membershipEpoch: u32, assignmentEpoch: u32,
    ownershipEpoch: u64, topicId: u16, partition: u16, memberId: u64,
  }),
  CONTROL_ACK: fc.record({
    op: fc.constant(Op.CONTROL_ACK), noticeId: u64, noticeKind: u8, groupId: u16, membershipEpoch: u32,
    assignmentEpoch: u32, ownershipEpoch: u64, result: u8,
  }),
  CREDIT: fc.record({
    op: fc.constant(Op.CREDIT), subscriptionId: u16, membershipEpoch: u32, ownershipEpoch: u64, mode: u8,
    creditCount: u16, creditBytes: u32, reserved: u32,
  }),
};

/** Any frame. */
export const anyFrame: fc.Arbitrary<Frame> = fc.oneof(...Object.values(frameArbs));
