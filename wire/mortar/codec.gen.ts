// Generated from wire/mortar/layouts.ts by `npm run gen:codec` (wire/mortar/codegen.ts). Do not edit by hand:
// a unit test fails when this file and the tables differ.
import { Op } from "./constants";
import { u16, u32, u64, u8, type Reader, type Writer } from "./cursor";
import type { Frame, FrameOf } from "./frames";
import type { ConnectResult, DeclareResult, PubResult, SubResult, CreditResult } from "./results";

/** Payload bytes of `f` after the op byte (the frame's `length` − 1). @throws RangeError for an op without a layout */
export function payloadLength(f: Frame): number {
  switch (f.op) {
    case Op.CONNECT: return 9 + f.token.length;
    case Op.DECLARE: return 6 + f.topic.length + (f.flags & 0x0002 ? 26 : 0);
    case Op.PUB: return 28 + f.key.length + f.value.length;
    case Op.SUB: return 15 + f.group.length;
    case Op.ACK: return 32;
    case Op.NACK: return 33;
    case Op.PING: return 0;
    case Op.ERR: return 5 + f.message.length;
    case Op.OK: return 5 + f.result.length;
    case Op.MSG: return 56 + f.key.length + f.value.length;
    case Op.PULL: return 32 + 8 * f.ownershipEpochs.length;
    case Op.HEARTBEAT: return 19;
    case Op.NOTICE: return 39;
    case Op.CONTROL_ACK: return 28;
    case Op.CREDIT: return 25;
    default: throw new RangeError(`cannot encode op ${(f as { op: unknown }).op}`);
  }
}

/** Writes the payload of `f` (after the op byte). @throws RangeError when a field does not fit, or a tail and its flags bit disagree */
export function writePayload(w: Writer, f: Frame): void {
  switch (f.op) {
    case Op.CONNECT:
      w.u8(f.protocolVersion, "protocol_version");
      w.u16(f.clientFlags, "client_flags");
      w.bytes16(f.token, "token");
      w.u32(f.reserved, "reserved");
      return;
    case Op.DECLARE: {
      w.bytes16(f.topic, "topic");
      w.u16(f.partitionCount, "partition_count");
      w.u16(f.flags, "flags");
      const t = f.retention;
      if (f.flags & 0x0002) {
        if (!t) throw new RangeError("DECLARE flags bit 0x0002 set without the retention tail");
        w.u8(t.fields, "fields");
        w.u64(t.retentionMs, "retention_ms");
        w.u64(t.retentionBytes, "retention_bytes");
        w.u64(t.retentionMessages, "retention_messages");
        w.u8(t.discard, "discard");
      } else if (t) {
        throw new RangeError("DECLARE retention tail given without flags bit 0x0002");
      }
      return;
    }
    case Op.PUB:
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.producerId, "producer_id");
      w.u64(f.producerSeq, "producer_seq");
      w.u16(f.flags, "flags");
      w.bytes16(f.key, "key");
      w.bytes32(f.value, "value");
      return;
    case Op.SUB:
      w.bytes16(f.group, "group");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u8(f.startPolicy, "start_policy");
      w.u16(f.creditCount, "credit_count");
      w.u32(f.creditBytes, "credit_bytes");
      w.u16(f.flags, "flags");
      return;
    case Op.ACK:
      w.u16(f.subscriptionId, "subscription_id");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.seq, "seq");
      w.u64(f.deliveryId, "delivery_id");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u16(f.flags, "flags");
      return;
    case Op.NACK:
      w.u16(f.subscriptionId, "subscription_id");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.seq, "seq");
      w.u64(f.deliveryId, "delivery_id");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u8(f.reason, "reason");
      w.u16(f.flags, "flags");
      return;
    case Op.PING:
      return;
    case Op.ERR:
      w.u16(f.code, "code");
      w.u8(f.requestOp, "request_op");
      w.bytes16(f.message, "message");
      return;
    case Op.OK:
      w.u8(f.requestOp, "request_op");
      w.bytes32(f.result, "result");
      return;
    case Op.MSG:
      w.u16(f.subscriptionId, "subscription_id");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.sequence, "sequence");
      w.u64(f.deliveryId, "delivery_id");
      w.u16(f.attempt, "attempt");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u64(f.producerId, "producer_id");
      w.u64(f.producerSeq, "producer_seq");
      w.u16(f.flags, "flags");
      w.bytes16(f.key, "key");
      w.bytes32(f.value, "value");
      return;
    case Op.PULL:
      w.u16(f.subscriptionId, "subscription_id");
      w.u64(f.memberId, "member_id");
      w.u32(f.membershipEpoch, "membership_epoch");
      w.u32(f.assignmentEpoch, "assignment_epoch");
      w.u64s16(f.ownershipEpochs, "ownership_epochs");
      w.u16(f.maxMsgs, "max_msgs");
      w.u32(f.maxBytes, "max_bytes");
      w.u16(f.waitMs, "wait_ms");
      w.u32(f.minBytes, "min_bytes");
      return;
    case Op.HEARTBEAT:
      w.u16(f.subscriptionId, "subscription_id");
      w.u64(f.memberId, "member_id");
      w.u32(f.membershipEpoch, "membership_epoch");
      w.u32(f.assignmentEpoch, "assignment_epoch");
      w.u8(f.state, "state");
      return;
    case Op.NOTICE:
      w.u64(f.noticeId, "notice_id");
      w.u8(f.kind, "kind");
      w.u16(f.groupId, "group_id");
      w.u32(f.membershipEpoch, "membership_epoch");
      w.u32(f.assignmentEpoch, "assignment_epoch");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.memberId, "member_id");
      return;
    case Op.CONTROL_ACK:
      w.u64(f.noticeId, "notice_id");
      w.u8(f.noticeKind, "notice_kind");
      w.u16(f.groupId, "group_id");
      w.u32(f.membershipEpoch, "membership_epoch");
      w.u32(f.assignmentEpoch, "assignment_epoch");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u8(f.result, "result");
      return;
    case Op.CREDIT:
      w.u16(f.subscriptionId, "subscription_id");
      w.u32(f.membershipEpoch, "membership_epoch");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      w.u8(f.mode, "mode");
      w.u16(f.creditCount, "credit_count");
      w.u32(f.creditBytes, "credit_bytes");
      w.u32(f.reserved, "reserved");
      return;
  }
}

/** Reads the payload of a frame of op `op`. @throws MortarError MALFORMED_PAYLOAD when it does not fit the layout */
export function readPayload(r: Reader, op: number): Frame {
  switch (op) {
    case Op.CONNECT:
      return r.done({ op: Op.CONNECT, protocolVersion: r.u8("protocol_version"), clientFlags: r.u16("client_flags"), token: r.bytes16("token"), reserved: r.u32("reserved") });
    case Op.DECLARE: {
      const o: FrameOf<typeof Op.DECLARE> = { op: Op.DECLARE, topic: r.bytes16("topic"), partitionCount: r.u16("partition_count"), flags: r.u16("flags") };
      if (o.flags & 0x0002) o.retention = { fields: r.u8("fields"), retentionMs: r.u64("retention_ms"), retentionBytes: r.u64("retention_bytes"), retentionMessages: r.u64("retention_messages"), discard: r.u8("discard") };
      return r.done(o);
    }
    case Op.PUB:
      return r.done({ op: Op.PUB, topicId: r.u16("topic_id"), partition: r.u16("partition"), producerId: r.u64("producer_id"), producerSeq: r.u64("producer_seq"), flags: r.u16("flags"), key: r.bytes16("key"), value: r.bytes32("value") });
    case Op.SUB:
      return r.done({ op: Op.SUB, group: r.bytes16("group"), topicId: r.u16("topic_id"), partition: r.u16("partition"), startPolicy: r.u8("start_policy"), creditCount: r.u16("credit_count"), creditBytes: r.u32("credit_bytes"), flags: r.u16("flags") });
    case Op.ACK:
      return r.done({ op: Op.ACK, subscriptionId: r.u16("subscription_id"), topicId: r.u16("topic_id"), partition: r.u16("partition"), seq: r.u64("seq"), deliveryId: r.u64("delivery_id"), ownershipEpoch: r.u64("ownership_epoch"), flags: r.u16("flags") });
    case Op.NACK:
      return r.done({ op: Op.NACK, subscriptionId: r.u16("subscription_id"), topicId: r.u16("topic_id"), partition: r.u16("partition"), seq: r.u64("seq"), deliveryId: r.u64("delivery_id"), ownershipEpoch: r.u64("ownership_epoch"), reason: r.u8("reason"), flags: r.u16("flags") });
    case Op.PING:
      return r.done({ op: Op.PING });
    case Op.ERR:
      return r.done({ op: Op.ERR, code: r.u16("code"), requestOp: r.u8("request_op"), message: r.bytes16("message") });
    case Op.OK:
      return r.done({ op: Op.OK, requestOp: r.u8("request_op"), result: r.bytes32("result") });
    case Op.MSG:
      return r.done({ op: Op.MSG, subscriptionId: r.u16("subscription_id"), topicId: r.u16("topic_id"), partition: r.u16("partition"), sequence: r.u64("sequence"), deliveryId: r.u64("delivery_id"), attempt: r.u16("attempt"), ownershipEpoch: r.u64("ownership_epoch"), producerId: r.u64("producer_id"), producerSeq: r.u64("producer_seq"), flags: r.u16("flags"), key: r.bytes16("key"), value: r.bytes32("value") });
    case Op.PULL:
      return r.done({ op: Op.PULL, subscriptionId: r.u16("subscription_id"), memberId: r.u64("member_id"), membershipEpoch: r.u32("membership_epoch"), assignmentEpoch: r.u32("assignment_epoch"), ownershipEpochs: r.u64s16("ownership_epochs"), maxMsgs: r.u16("max_msgs"), maxBytes: r.u32("max_bytes"), waitMs: r.u16("wait_ms"), minBytes: r.u32("min_bytes") });
    case Op.HEARTBEAT:
      return r.done({ op: Op.HEARTBEAT, subscriptionId: r.u16("subscription_id"), memberId: r.u64("member_id"), membershipEpoch: r.u32("membership_epoch"), assignmentEpoch: r.u32("assignment_epoch"), state: r.u8("state") });
    case Op.NOTICE:
      return r.done({ op: Op.NOTICE, noticeId: r.u64("notice_id"), kind: r.u8("kind"), groupId: r.u16("group_id"), membershipEpoch: r.u32("membership_epoch"), assignmentEpoch: r.u32("assignment_epoch"), ownershipEpoch: r.u64("ownership_epoch"), topicId: r.u16("topic_id"), partition: r.u16("partition"), memberId: r.u64("member_id") });
    case Op.CONTROL_ACK:
      return r.done({ op: Op.CONTROL_ACK, noticeId: r.u64("notice_id"), noticeKind: r.u8("notice_kind"), groupId: r.u16("group_id"), membershipEpoch: r.u32("membership_epoch"), assignmentEpoch: r.u32("assignment_epoch"), ownershipEpoch: r.u64("ownership_epoch"), result: r.u8("result") });
    case Op.CREDIT:
      return r.done({ op: Op.CREDIT, subscriptionId: r.u16("subscription_id"), membershipEpoch: r.u32("membership_epoch"), ownershipEpoch: r.u64("ownership_epoch"), mode: r.u8("mode"), creditCount: r.u16("credit_count"), creditBytes: r.u32("credit_bytes"), reserved: r.u32("reserved") });
    default: throw r.fail("op without a layout");
  }
}

/** Bytes of a CONNECT OK result. */
export function sizeConnectResult(_o: ConnectResult): number {
  return 4;
}

/** Writes a CONNECT OK result into `v` (sized by sizeConnectResult). @throws RangeError when a field does not fit */
export function writeConnectResult(v: DataView, o: ConnectResult): void {
  v.setUint32(0, u32(o.features, "features"));
}

/** Reads a CONNECT OK result from `v` (its size checked by the caller: with the tail when longer than 4 bytes). */
export function readConnectResult(v: DataView): ConnectResult {
  return { features: v.getUint32(0) };
}

/** Bytes of a DECLARE OK result. */
export function sizeDeclareResult(o: DeclareResult): number {
  return 5 + (o.retention ? 25 : 0);
}

/** Writes a DECLARE OK result into `v` (sized by sizeDeclareResult). @throws RangeError when a field does not fit */
export function writeDeclareResult(v: DataView, o: DeclareResult): void {
  v.setUint16(0, u16(o.topicId, "topic_id"));
  v.setUint16(2, u16(o.partitionCount, "partition_count"));
  v.setUint8(4, u8(o.created, "created"));
  const t = o.retention;
  if (t) {
    v.setBigUint64(5, u64(t.retentionMs, "retention_ms"));
    v.setBigUint64(13, u64(t.retentionBytes, "retention_bytes"));
    v.setBigUint64(21, u64(t.retentionMessages, "retention_messages"));
    v.setUint8(29, u8(t.discard, "discard"));
  }
}

/** Reads a DECLARE OK result from `v` (its size checked by the caller: with the tail when longer than 5 bytes). */
export function readDeclareResult(v: DataView): DeclareResult {
  const o: DeclareResult = { topicId: v.getUint16(0), partitionCount: v.getUint16(2), created: v.getUint8(4) };
  if (v.byteLength > 5) o.retention = { retentionMs: v.getBigUint64(5), retentionBytes: v.getBigUint64(13), retentionMessages: v.getBigUint64(21), discard: v.getUint8(29) };
  return o;
}

/** Bytes of a PUB OK result. */
export function sizePubResult(_o: PubResult): number {
  return 26;
}

/** Writes a PUB OK result into `v` (sized by sizePubResult). @throws RangeError when a field does not fit */
export function writePubResult(v: DataView, o: PubResult): void {
  v.setBigUint64(0, u64(o.sequence, "sequence"));
  v.setUint8(8, u8(o.durability, "durability"));
  v.setBigUint64(9, u64(o.leaderEpoch, "leader_epoch"));
  v.setBigUint64(17, u64(o.commitSeq, "commit_seq"));
  v.setUint8(25, u8(o.resultFlags, "result_flags"));
}

/** Reads a PUB OK result from `v` (its size checked by the caller: with the tail when longer than 26 bytes). */
export function readPubResult(v: DataView): PubResult {
  return { sequence: v.getBigUint64(0), durability: v.getUint8(8), leaderEpoch: v.getBigUint64(9), commitSeq: v.getBigUint64(17), resultFlags: v.getUint8(25) };
}

/** Bytes of a SUB OK result. */
export function sizeSubResult(_o: SubResult): number {
  return 18;
}

/** Writes a SUB OK result into `v` (sized by sizeSubResult). @throws RangeError when a field does not fit */
export function writeSubResult(v: DataView, o: SubResult): void {
  v.setUint16(0, u16(o.subscriptionId, "subscription_id"));
  v.setBigUint64(2, u64(o.memberId, "member_id"));
  v.setUint32(10, u32(o.membershipEpoch, "membership_epoch"));
  v.setUint32(14, u32(o.assignmentEpoch, "assignment_epoch"));
}

/** Reads a SUB OK result from `v` (its size checked by the caller: with the tail when longer than 18 bytes). */
export function readSubResult(v: DataView): SubResult {
  return { subscriptionId: v.getUint16(0), memberId: v.getBigUint64(2), membershipEpoch: v.getUint32(10), assignmentEpoch: v.getUint32(14) };
}

/** Bytes of a CREDIT OK result. */
export function sizeCreditResult(_o: CreditResult): number {
  return 20;
}

/** Writes a CREDIT OK result into `v` (sized by sizeCreditResult). @throws RangeError when a field does not fit */
export function writeCreditResult(v: DataView, o: CreditResult): void {
  v.setUint16(0, u16(o.grantedCount, "granted_count"));
  v.setUint32(2, u32(o.grantedBytes, "granted_bytes"));
  v.setUint16(6, u16(o.outstandingCount, "outstanding_count"));
  v.setUint32(8, u32(o.outstandingBytes, "outstanding_bytes"));
  v.setBigUint64(12, u64(o.creditEpoch, "credit_epoch"));
}

/** Reads a CREDIT OK result from `v` (its size checked by the caller: with the tail when longer than 20 bytes). */
export function readCreditResult(v: DataView): CreditResult {
  return { grantedCount: v.getUint16(0), grantedBytes: v.getUint32(2), outstandingCount: v.getUint16(6), outstandingBytes: v.getUint32(8), creditEpoch: v.getBigUint64(12) };
}
