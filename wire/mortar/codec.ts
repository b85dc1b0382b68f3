/**
 * MortarMQ v0 frame encoder/decoder (spec §1–§2).
 *
 * Frame = u32_be length || u8 op || payload[length − 1]; every integer is
 * big-endian; length is 1..=MAX_FRAME_LEN.
 *
 * Encoding writes each frame straight into one buffer of its exact size (or
 * into a caller's buffer), with no per-field allocation. Decoding returns
 * byte fields as zero-copy `subarray` views of the payload given to it, so
 * the caller must not reuse that memory while the frame is in use.
 */
import { DECLARE_RETENTION_TAIL_LEN, DeclareFlags, FRAME_HEADER_LEN, MAX_FRAME_LEN, MAX_U64, OP_NAMES, Op, classifyOp } from "./constants";
import { ErrorCode, MortarError } from "./errors";
import type { Frame } from "./frames";

// ---------------------------------------------------------------- sizes

/** Payload bytes after the op byte (i.e. the frame's `length` − 1). */
export function payloadLength(f: Frame): number {
  switch (f.op) {
    case Op.CONNECT: return 9 + f.token.length;
    case Op.DECLARE: return 6 + f.topic.length + (f.flags & DeclareFlags.RETENTION ? DECLARE_RETENTION_TAIL_LEN : 0);
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

/** Total encoded bytes of `f`, including the 4-byte length prefix. */
export function frameSize(f: Frame): number {
  return FRAME_HEADER_LEN + 1 + payloadLength(f);
}

// ---------------------------------------------------------------- encode

/** Cursor over an output buffer; every write range-checks its value. */
class Writer {
  constructor(readonly v: DataView, readonly b: Uint8Array, public p: number) {}
  u8(x: number, field: string): void {
    if ((x & 0xff) !== x) badField(field, x, "u8");
    this.v.setUint8(this.p, x);
    this.p += 1;
  }
  u16(x: number, field: string): void {
    if ((x & 0xffff) !== x) badField(field, x, "u16");
    this.v.setUint16(this.p, x);
    this.p += 2;
  }
  u32(x: number, field: string): void {
    if (x >>> 0 !== x) badField(field, x, "u32");
    this.v.setUint32(this.p, x);
    this.p += 4;
  }
  u64(x: bigint, field: string): void {
    if (typeof x !== "bigint" || x < 0n || x > MAX_U64) badField(field, x, "u64");
    this.v.setBigUint64(this.p, x);
    this.p += 8;
  }
  /** u16 length prefix + bytes. */
  bytes16(x: Uint8Array, field: string): void {
    this.u16(x.length, `${field} length`);
    this.b.set(x, this.p);
    this.p += x.length;
  }
  /** u32 length prefix + bytes. */
  bytes32(x: Uint8Array, field: string): void {
    this.u32(x.length, `${field} length`);
    this.b.set(x, this.p);
    this.p += x.length;
  }
}

function badField(field: string, x: unknown, width: string): never {
  throw new RangeError(`${field} = ${String(x)} does not fit ${width}`);
}

/** Writes `f` (header included) at `w.p`; `len` is its payload length. */
function writeFrame(w: Writer, f: Frame, len: number): void {
  if (len + 1 > MAX_FRAME_LEN) {
    throw new RangeError(`${OP_NAMES[f.op]} frame length ${len + 1} exceeds MAX_FRAME_LEN ${MAX_FRAME_LEN}`);
  }
  w.u32(len + 1, "length");
  w.u8(f.op, "op");
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
      if (!(f.flags & DeclareFlags.RETENTION)) {
        if (t) throw new RangeError("DECLARE retention tail given without the RETENTION flag");
        return;
      }
      if (!t) throw new RangeError("DECLARE RETENTION flag set without a retention tail");
      w.u8(t.fields, "fields");
      w.u64(t.retentionMs, "retention_ms");
      w.u64(t.retentionBytes, "retention_bytes");
      w.u64(t.retentionMessages, "retention_messages");
      w.u8(t.discard, "discard");
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
    case Op.NACK:
      w.u16(f.subscriptionId, "subscription_id");
      w.u16(f.topicId, "topic_id");
      w.u16(f.partition, "partition");
      w.u64(f.seq, "seq");
      w.u64(f.deliveryId, "delivery_id");
      w.u64(f.ownershipEpoch, "ownership_epoch");
      if (f.op === Op.NACK) w.u8(f.reason, "reason");
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
      w.u16(f.ownershipEpochs.length, "ownership_epochs_len");
      for (const e of f.ownershipEpochs) w.u64(e, "ownership_epochs[]");
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

/**
 * Encodes one frame (length prefix included) into a new buffer of exactly
 * frameSize(f) bytes.
 * @throws RangeError when a field does not fit its wire width or the frame
 *   would exceed MAX_FRAME_LEN (a programming error, not a protocol error).
 */
export function encodeFrame(f: Frame): Uint8Array {
  const len = payloadLength(f);
  const b = new Uint8Array(FRAME_HEADER_LEN + 1 + len);
  writeFrame(new Writer(new DataView(b.buffer), b, 0), f, len);
  return b;
}

/**
 * Encodes `f` into `target` at `offset`; returns the offset after it.
 * @throws RangeError as encodeFrame, or when `target` is too small.
 */
export function encodeFrameInto(f: Frame, target: Uint8Array, offset = 0): number {
  const len = payloadLength(f);
  if (offset < 0 || offset + FRAME_HEADER_LEN + 1 + len > target.length) {
    throw new RangeError(`target too small: need ${FRAME_HEADER_LEN + 1 + len} bytes at offset ${offset}`);
  }
  const w = new Writer(new DataView(target.buffer, target.byteOffset, target.byteLength), target, offset);
  writeFrame(w, f, len);
  return w.p;
}

/**
 * Encodes many frames back to back into one buffer of their exact total size
 * (for batching MSG/OK responses into one WebSocket message).
 * @throws RangeError as encodeFrame.
 */
export function encodeFrames(frames: readonly Frame[]): Uint8Array {
  let total = 0;
  for (const f of frames) total += FRAME_HEADER_LEN + 1 + payloadLength(f);
  const b = new Uint8Array(total);
  const w = new Writer(new DataView(b.buffer), b, 0);
  for (const f of frames) writeFrame(w, f, payloadLength(f));
  return b;
}

// ---------------------------------------------------------------- decode

/** Cursor over one payload; every read fails with MALFORMED_PAYLOAD on overrun. */
class Reader {
  readonly v: DataView;
  p = 0;
  constructor(readonly b: Uint8Array, readonly op: number) {
    this.v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  need(n: number, field: string): void {
    if (this.p + n > this.b.length) {
      throw malformed(this.op, `${field} needs ${n} bytes at offset ${this.p}, payload has ${this.b.length}`);
    }
  }
  u8(field: string): number {
    this.need(1, field);
    return this.v.getUint8(this.p++);
  }
  u16(field: string): number {
    this.need(2, field);
    const x = this.v.getUint16(this.p);
    this.p += 2;
    return x;
  }
  u32(field: string): number {
    this.need(4, field);
    const x = this.v.getUint32(this.p);
    this.p += 4;
    return x;
  }
  u64(field: string): bigint {
    this.need(8, field);
    const x = this.v.getBigUint64(this.p);
    this.p += 8;
    return x;
  }
  bytes(n: number, field: string): Uint8Array {
    this.need(n, field);
    const x = this.b.subarray(this.p, this.p + n);
    this.p += n;
    return x;
  }
  bytes16(field: string): Uint8Array {
    return this.bytes(this.u16(`${field}_len`), field);
  }
  bytes32(field: string): Uint8Array {
    return this.bytes(this.u32(`${field}_len`), field);
  }
  /** Fails when bytes remain: v0 frames carry no undeclared trailer. */
  done<F>(f: F): F {
    if (this.p !== this.b.length) {
      throw malformed(this.op, `${this.b.length - this.p} trailing bytes after the last field`);
    }
    return f;
  }
}

function malformed(op: number, detail: string): MortarError {
  return new MortarError(ErrorCode.MALFORMED_PAYLOAD, `${OP_NAMES[op] ?? op} payload: ${detail}`, op);
}

/**
 * The error for an op byte that is not one of the 15 v0 ops, or null when it is.
 * 0x00/0xFF → ILLEGAL_OP; 0x10–0xFE → UNKNOWN_OP.
 */
export function opError(op: number): MortarError | null {
  const cls = classifyOp(op);
  if (cls === "known") return null;
  const hex = "0x" + op.toString(16).padStart(2, "0");
  if (cls === "illegal") return new MortarError(ErrorCode.ILLEGAL_OP, `op ${hex} is illegal`, op);
  return new MortarError(ErrorCode.UNKNOWN_OP, `op ${hex} is reserved (${cls})`, op);
}

/**
 * Decodes the payload of a frame whose op byte is `op`. Byte fields are views
 * into `payload`.
 * @throws MortarError ILLEGAL_OP / UNKNOWN_OP for a bad op byte;
 *   MALFORMED_PAYLOAD when the payload is short, has trailing bytes, or an
 *   inner length field overruns it. Never throws anything else.
 */
export function decodeFrame(op: number, payload: Uint8Array): Frame {
  const bad = opError(op);
  if (bad) throw bad;
  const r = new Reader(payload, op);
  switch (op) {
    case Op.CONNECT:
      return r.done({
        op: Op.CONNECT,
        protocolVersion: r.u8("protocol_version"),
        clientFlags: r.u16("client_flags"),
        token: r.bytes16("token"),
        reserved: r.u32("reserved"),
      });
    case Op.DECLARE: {
      const topic = r.bytes16("topic");
      const partitionCount = r.u16("partition_count");
      const flags = r.u16("flags");
      if (!(flags & DeclareFlags.RETENTION)) return r.done({ op: Op.DECLARE, topic, partitionCount, flags });
      // The tail announced by the RETENTION flag (spec §4: optional fields appended, declared by a flags bit).
      const retention = {
        fields: r.u8("fields"),
        retentionMs: r.u64("retention_ms"),
        retentionBytes: r.u64("retention_bytes"),
        retentionMessages: r.u64("retention_messages"),
        discard: r.u8("discard"),
      };
      return r.done({ op: Op.DECLARE, topic, partitionCount, flags, retention });
    }
    case Op.PUB:
      return r.done({
        op: Op.PUB,
        topicId: r.u16("topic_id"),
        partition: r.u16("partition"),
        producerId: r.u64("producer_id"),
        producerSeq: r.u64("producer_seq"),
        flags: r.u16("flags"),
        key: r.bytes16("key"),
        value: r.bytes32("value"),
      });
    case Op.SUB:
      return r.done({
        op: Op.SUB,
        group: r.bytes16("group"),
        topicId: r.u16("topic_id"),
        partition: r.u16("partition"),
        startPolicy: r.u8("start_policy"),
        creditCount: r.u16("credit_count"),
        creditBytes: r.u32("credit_bytes"),
        flags: r.u16("flags"),
      });
    case Op.ACK:
    case Op.NACK: {
      const ref = {
        subscriptionId: r.u16("subscription_id"),
        topicId: r.u16("topic_id"),
        partition: r.u16("partition"),
        seq: r.u64("seq"),
        deliveryId: r.u64("delivery_id"),
        ownershipEpoch: r.u64("ownership_epoch"),
      };
      return op === Op.ACK
        ? r.done({ op: Op.ACK, ...ref, flags: r.u16("flags") })
        : r.done({ op: Op.NACK, ...ref, reason: r.u8("reason"), flags: r.u16("flags") });
    }
    case Op.PING:
      return r.done({ op: Op.PING });
    case Op.ERR:
      return r.done({
        op: Op.ERR,
        code: r.u16("code"),
        requestOp: r.u8("request_op"),
        message: r.bytes16("message"),
      });
    case Op.OK:
      return r.done({ op: Op.OK, requestOp: r.u8("request_op"), result: r.bytes32("result") });
    case Op.MSG:
      return r.done({
        op: Op.MSG,
        subscriptionId: r.u16("subscription_id"),
        topicId: r.u16("topic_id"),
        partition: r.u16("partition"),
        sequence: r.u64("sequence"),
        deliveryId: r.u64("delivery_id"),
        attempt: r.u16("attempt"),
        ownershipEpoch: r.u64("ownership_epoch"),
        producerId: r.u64("producer_id"),
        producerSeq: r.u64("producer_seq"),
        flags: r.u16("flags"),
        key: r.bytes16("key"),
        value: r.bytes32("value"),
      });
    case Op.PULL: {
      const subscriptionId = r.u16("subscription_id");
      const memberId = r.u64("member_id");
      const membershipEpoch = r.u32("membership_epoch");
      const assignmentEpoch = r.u32("assignment_epoch");
      const n = r.u16("ownership_epochs_len");
      r.need(8 * n, "ownership_epochs");
      const ownershipEpochs = new Array<bigint>(n);
      for (let i = 0; i < n; i++) ownershipEpochs[i] = r.u64("ownership_epochs[]");
      return r.done({
        op: Op.PULL,
        subscriptionId, memberId, membershipEpoch, assignmentEpoch, ownershipEpochs,
        maxMsgs: r.u16("max_msgs"),
        maxBytes: r.u32("max_bytes"),
        waitMs: r.u16("wait_ms"),
        minBytes: r.u32("min_bytes"),
      });
    }
    case Op.HEARTBEAT:
      return r.done({
        op: Op.HEARTBEAT,
        subscriptionId: r.u16("subscription_id"),
        memberId: r.u64("member_id"),
        membershipEpoch: r.u32("membership_epoch"),
        assignmentEpoch: r.u32("assignment_epoch"),
        state: r.u8("state"),
      });
    case Op.NOTICE:
      return r.done({
        op: Op.NOTICE,
        noticeId: r.u64("notice_id"),
        kind: r.u8("kind"),
        groupId: r.u16("group_id"),
        membershipEpoch: r.u32("membership_epoch"),
        assignmentEpoch: r.u32("assignment_epoch"),
        ownershipEpoch: r.u64("ownership_epoch"),
        topicId: r.u16("topic_id"),
        partition: r.u16("partition"),
        memberId: r.u64("member_id"),
      });
    case Op.CONTROL_ACK:
      return r.done({
        op: Op.CONTROL_ACK,
        noticeId: r.u64("notice_id"),
        noticeKind: r.u8("notice_kind"),
        groupId: r.u16("group_id"),
        membershipEpoch: r.u32("membership_epoch"),
        assignmentEpoch: r.u32("assignment_epoch"),
        ownershipEpoch: r.u64("ownership_epoch"),
        result: r.u8("result"),
      });
    default: // Op.CREDIT — opError() rejected everything else
      return r.done({
        op: Op.CREDIT,
        subscriptionId: r.u16("subscription_id"),
        membershipEpoch: r.u32("membership_epoch"),
        ownershipEpoch: r.u64("ownership_epoch"),
        mode: r.u8("mode"),
        creditCount: r.u16("credit_count"),
        creditBytes: r.u32("credit_bytes"),
        reserved: r.u32("reserved"),
      });
  }
}

/**
 * Decodes exactly one whole frame (length prefix included).
 * @throws MortarError FRAME_LENGTH_INVALID when the prefix is 0, above
 *   MAX_FRAME_LEN, or disagrees with `bytes.length`; otherwise as decodeFrame.
 */
export function decodeFrameBytes(bytes: Uint8Array): Frame {
  if (bytes.length < FRAME_HEADER_LEN + 1) {
    throw new MortarError(ErrorCode.FRAME_LENGTH_INVALID, `frame is ${bytes.length} bytes, shorter than header + op`);
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = v.getUint32(0);
  if (length === 0 || length > MAX_FRAME_LEN || length !== bytes.length - FRAME_HEADER_LEN) {
    throw new MortarError(
      ErrorCode.FRAME_LENGTH_INVALID,
      `length prefix ${length} does not match ${bytes.length - FRAME_HEADER_LEN} bytes (valid 1..${MAX_FRAME_LEN})`,
    );
  }
  return decodeFrame(bytes[FRAME_HEADER_LEN]!, bytes.subarray(FRAME_HEADER_LEN + 1));
}
