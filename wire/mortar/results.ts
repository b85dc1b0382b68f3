/**
 * OK `result` layouts (spec §2) for DECLARE, PUB, SUB and CREDIT, plus
 * builders for OK frames. Other requests answer with an empty result —
 * except the extensions (docs/protocol.md "Extensions"): a CONNECT with
 * ConnectClientFlags.FEATURES is answered `features:u32`, and a DECLARE with
 * DeclareFlags.RETENTION gets the retention settings in force appended.
 */
import { CONNECT_FEATURES_RESULT_LEN, DECLARE_RETENTION_RESULT_TAIL_LEN, MAX_U64, Op } from "./constants";
import { ErrorCode, MortarError } from "./errors";
import type { OkFrame, RetentionValues } from "./frames";

/**
 * DECLARE OK: topic_id:u16, partition_count:u16, created:u8 (DeclareCreated),
 * 5 bytes; with `retention` (only answering a DECLARE with the RETENTION
 * flag) followed by retention_ms:u64, retention_bytes:u64,
 * retention_messages:u64, discard:u8 — the settings in force, 30 bytes.
 */
export interface DeclareResult {
  topicId: number;
  partitionCount: number;
  created: number;
  retention?: RetentionValues;
}

/**
 * PUB OK: sequence:u64, durability:u8 (Durability), leader_epoch:u64,
 * commit_seq:u64, result_flags:u8 (PubResultFlags). 26 bytes.
 */
export interface PubResult {
  sequence: bigint;
  durability: number;
  leaderEpoch: bigint;
  commitSeq: bigint;
  resultFlags: number;
}

/** SUB OK: subscription_id:u16, member_id:u64, membership_epoch:u32, assignment_epoch:u32. 18 bytes. */
export interface SubResult {
  subscriptionId: number;
  memberId: bigint;
  membershipEpoch: number;
  assignmentEpoch: number;
}

/**
 * CREDIT OK: granted_count:u16, granted_bytes:u32, outstanding_count:u16,
 * outstanding_bytes:u32, credit_epoch:u64. 20 bytes.
 */
export interface CreditResult {
  grantedCount: number;
  grantedBytes: number;
  outstandingCount: number;
  outstandingBytes: number;
  creditEpoch: bigint;
}

export const DECLARE_RESULT_LEN = 5;
export const PUB_RESULT_LEN = 26;
export const SUB_RESULT_LEN = 18;
export const CREDIT_RESULT_LEN = 20;

/** An empty result (PING, ACK, NACK, HEARTBEAT, CONTROL_ACK, CONNECT, PULL). */
export const EMPTY_RESULT: Uint8Array = new Uint8Array(0);

/** Builds an OK frame answering `requestOp`. */
export function okFrame(requestOp: number, result: Uint8Array = EMPTY_RESULT): OkFrame {
  return { op: Op.OK, requestOp, result };
}

function check(x: number, max: number, field: string): number {
  if (!Number.isInteger(x) || x < 0 || x > max) throw new RangeError(`${field} = ${x} out of range`);
  return x;
}
function check64(x: bigint, field: string): bigint {
  if (typeof x !== "bigint" || x < 0n || x > MAX_U64) throw new RangeError(`${field} = ${String(x)} out of range`);
  return x;
}

function view(bytes: Uint8Array, len: number, what: string): DataView {
  if (bytes.length !== len) {
    throw new MortarError(ErrorCode.MALFORMED_PAYLOAD, `${what} OK result is ${bytes.length} bytes, expected ${len}`, Op.OK);
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Encodes a DECLARE result (with its retention tail when `r.retention` is set). @throws RangeError when a field does not fit. */
export function encodeDeclareResult(r: DeclareResult): Uint8Array {
  const t = r.retention;
  const b = new Uint8Array(DECLARE_RESULT_LEN + (t ? DECLARE_RETENTION_RESULT_TAIL_LEN : 0));
  const v = new DataView(b.buffer);
  v.setUint16(0, check(r.topicId, 0xffff, "topic_id"));
  v.setUint16(2, check(r.partitionCount, 0xffff, "partition_count"));
  v.setUint8(4, check(r.created, 0xff, "created"));
  if (t) {
    v.setBigUint64(5, check64(t.retentionMs, "retention_ms"));
    v.setBigUint64(13, check64(t.retentionBytes, "retention_bytes"));
    v.setBigUint64(21, check64(t.retentionMessages, "retention_messages"));
    v.setUint8(29, check(t.discard, 0xff, "discard"));
  }
  return b;
}

/**
 * Decodes a DECLARE result: 5 bytes, or 30 with the retention tail (the
 * answer to a DECLARE with the RETENTION flag).
 * @throws MortarError MALFORMED_PAYLOAD on any other size
 */
export function decodeDeclareResult(bytes: Uint8Array): DeclareResult {
  const withTail = bytes.length === DECLARE_RESULT_LEN + DECLARE_RETENTION_RESULT_TAIL_LEN;
  const v = withTail ? new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) : view(bytes, DECLARE_RESULT_LEN, "DECLARE");
  const r: DeclareResult = { topicId: v.getUint16(0), partitionCount: v.getUint16(2), created: v.getUint8(4) };
  if (withTail) {
    r.retention = { retentionMs: v.getBigUint64(5), retentionBytes: v.getBigUint64(13), retentionMessages: v.getBigUint64(21), discard: v.getUint8(29) };
  }
  return r;
}

/** Encodes the CONNECT OK result of a CONNECT with ConnectClientFlags.FEATURES: `features:u32` (ServerFeatures). */
export function encodeConnectFeatures(features: number): Uint8Array {
  const b = new Uint8Array(CONNECT_FEATURES_RESULT_LEN);
  new DataView(b.buffer).setUint32(0, check(features, 0xffff_ffff, "features"));
  return b;
}

/**
 * The broker's extension bits (ServerFeatures) from a CONNECT OK result: 0
 * for an empty result (a broker without extensions ignores the FEATURES
 * client flag).
 * @throws MortarError MALFORMED_PAYLOAD for a result that is neither empty nor 4 bytes
 */
export function decodeConnectFeatures(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0;
  return view(bytes, CONNECT_FEATURES_RESULT_LEN, "CONNECT").getUint32(0);
}

/** Encodes a PUB result. @throws RangeError when a field does not fit. */
export function encodePubResult(r: PubResult): Uint8Array {
  const b = new Uint8Array(PUB_RESULT_LEN);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, check64(r.sequence, "sequence"));
  v.setUint8(8, check(r.durability, 0xff, "durability"));
  v.setBigUint64(9, check64(r.leaderEpoch, "leader_epoch"));
  v.setBigUint64(17, check64(r.commitSeq, "commit_seq"));
  v.setUint8(25, check(r.resultFlags, 0xff, "result_flags"));
  return b;
}

/** Decodes a PUB result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodePubResult(bytes: Uint8Array): PubResult {
  const v = view(bytes, PUB_RESULT_LEN, "PUB");
  return {
    sequence: v.getBigUint64(0),
    durability: v.getUint8(8),
    leaderEpoch: v.getBigUint64(9),
    commitSeq: v.getBigUint64(17),
    resultFlags: v.getUint8(25),
  };
}

/** Encodes a SUB result. @throws RangeError when a field does not fit. */
export function encodeSubResult(r: SubResult): Uint8Array {
  const b = new Uint8Array(SUB_RESULT_LEN);
  const v = new DataView(b.buffer);
  v.setUint16(0, check(r.subscriptionId, 0xffff, "subscription_id"));
  v.setBigUint64(2, check64(r.memberId, "member_id"));
  v.setUint32(10, check(r.membershipEpoch, 0xffff_ffff, "membership_epoch"));
  v.setUint32(14, check(r.assignmentEpoch, 0xffff_ffff, "assignment_epoch"));
  return b;
}

/** Decodes a SUB result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodeSubResult(bytes: Uint8Array): SubResult {
  const v = view(bytes, SUB_RESULT_LEN, "SUB");
  return {
    subscriptionId: v.getUint16(0),
    memberId: v.getBigUint64(2),
    membershipEpoch: v.getUint32(10),
    assignmentEpoch: v.getUint32(14),
  };
}

/** Encodes a CREDIT result. @throws RangeError when a field does not fit. */
export function encodeCreditResult(r: CreditResult): Uint8Array {
  const b = new Uint8Array(CREDIT_RESULT_LEN);
  const v = new DataView(b.buffer);
  v.setUint16(0, check(r.grantedCount, 0xffff, "granted_count"));
  v.setUint32(2, check(r.grantedBytes, 0xffff_ffff, "granted_bytes"));
  v.setUint16(6, check(r.outstandingCount, 0xffff, "outstanding_count"));
  v.setUint32(8, check(r.outstandingBytes, 0xffff_ffff, "outstanding_bytes"));
  v.setBigUint64(12, check64(r.creditEpoch, "credit_epoch"));
  return b;
}

/** Decodes a CREDIT result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodeCreditResult(bytes: Uint8Array): CreditResult {
  const v = view(bytes, CREDIT_RESULT_LEN, "CREDIT");
  return {
    grantedCount: v.getUint16(0),
    grantedBytes: v.getUint32(2),
    outstandingCount: v.getUint16(6),
    outstandingBytes: v.getUint32(8),
    creditEpoch: v.getBigUint64(12),
  };
}
