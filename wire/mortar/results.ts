/**
 * OK `result` layouts (spec §2) for DECLARE, PUB, SUB and CREDIT, plus
 * builders for OK frames. Other requests answer with an empty result —
 * except the extensions (docs/protocol.md "Extensions"): a CONNECT with
 * ConnectClientFlags.FEATURES is answered `features:u32`, and a DECLARE with
 * DeclareFlags.RETENTION gets the retention settings in force appended.
 * The layouts are the RESULT_LAYOUTS tables (layouts.ts); the code that
 * reads and writes them is generated (codec.gen.ts).
 */
import {
  readConnectResult, readCreditResult, readDeclareResult, readPubResult, readSubResult, sizeConnectResult, sizeCreditResult,
  sizeDeclareResult, sizePubResult, sizeSubResult, writeConnectResult, writeCreditResult, writeDeclareResult, writePubResult,
  writeSubResult,
} from "./codec.gen";
import { Op } from "./constants";
import { ErrorCode, MortarError } from "./errors";
import type { OkFrame, RetentionValues } from "./frames";
import { RESULT_LAYOUTS, fixedBytes, tailBytes } from "./layouts";

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

/** CONNECT OK when the CONNECT set ConnectClientFlags.FEATURES: features:u32 (ServerFeatures). 4 bytes. */
export interface ConnectResult {
  features: number;
}

export const DECLARE_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.DECLARE.fields);
/** OK result tail of a DECLARE with RETENTION (settings in force): retention_ms:u64, retention_bytes:u64, retention_messages:u64, discard:u8. */
export const DECLARE_RETENTION_RESULT_TAIL_LEN = tailBytes(RESULT_LAYOUTS.DECLARE);
export const PUB_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.PUB.fields);
export const SUB_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.SUB.fields);
export const CREDIT_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.CREDIT.fields);
/** Bytes of the CONNECT OK result with features: `features:u32`. */
export const CONNECT_FEATURES_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.CONNECT.fields);

/** An empty result (PING, ACK, NACK, HEARTBEAT, CONTROL_ACK, CONNECT, PULL). */
export const EMPTY_RESULT: Uint8Array = new Uint8Array(0);

/** Builds an OK frame answering `requestOp`. */
export function okFrame(requestOp: number, result: Uint8Array = EMPTY_RESULT): OkFrame {
  return { op: Op.OK, requestOp, result };
}

/** Encodes `o` with a generated writer into a buffer of its `size`. */
function encode<T>(o: T, size: (o: T) => number, write: (v: DataView, o: T) => void): Uint8Array {
  const b = new Uint8Array(size(o));
  write(new DataView(b.buffer), o);
  return b;
}

/** A view of a `what` OK result, which must be `size` (or `orSize`) bytes long. @throws MortarError MALFORMED_PAYLOAD otherwise */
function reader(bytes: Uint8Array, what: string, size: number, orSize = size): DataView {
  if (bytes.length !== size && bytes.length !== orSize) {
    const expected = size === orSize ? `${size}` : `${size} or ${orSize}`;
    throw new MortarError(ErrorCode.MALFORMED_PAYLOAD, `${what} OK result is ${bytes.length} bytes, expected ${expected}`, Op.OK);
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Encodes a DECLARE result (with its retention tail when `r.retention` is set). @throws RangeError when a field does not fit. */
export function encodeDeclareResult(r: DeclareResult): Uint8Array {
  return encode(r, sizeDeclareResult, writeDeclareResult);
}

/**
 * Decodes a DECLARE result: 5 bytes, or 30 with the retention tail (the
 * answer to a DECLARE with the RETENTION flag).
 * @throws MortarError MALFORMED_PAYLOAD on any other size
 */
export function decodeDeclareResult(bytes: Uint8Array): DeclareResult {
  return readDeclareResult(reader(bytes, "DECLARE", DECLARE_RESULT_LEN, DECLARE_RESULT_LEN + DECLARE_RETENTION_RESULT_TAIL_LEN));
}

/** Encodes the CONNECT OK result of a CONNECT with ConnectClientFlags.FEATURES: `features:u32` (ServerFeatures). @throws RangeError when it does not fit */
export function encodeConnectFeatures(features: number): Uint8Array {
  return encode({ features }, sizeConnectResult, writeConnectResult);
}

/**
 * The broker's extension bits (ServerFeatures) from a CONNECT OK result: 0
 * for an empty result (a broker without extensions ignores the FEATURES
 * client flag).
 * @throws MortarError MALFORMED_PAYLOAD for a result that is neither empty nor 4 bytes
 */
export function decodeConnectFeatures(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0;
  return readConnectResult(reader(bytes, "CONNECT", CONNECT_FEATURES_RESULT_LEN)).features;
}

/** Encodes a PUB result. @throws RangeError when a field does not fit. */
export function encodePubResult(r: PubResult): Uint8Array {
  return encode(r, sizePubResult, writePubResult);
}

/** Decodes a PUB result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodePubResult(bytes: Uint8Array): PubResult {
  return readPubResult(reader(bytes, "PUB", PUB_RESULT_LEN));
}

/** Encodes a SUB result. @throws RangeError when a field does not fit. */
export function encodeSubResult(r: SubResult): Uint8Array {
  return encode(r, sizeSubResult, writeSubResult);
}

/** Decodes a SUB result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodeSubResult(bytes: Uint8Array): SubResult {
  return readSubResult(reader(bytes, "SUB", SUB_RESULT_LEN));
}

/** Encodes a CREDIT result. @throws RangeError when a field does not fit. */
export function encodeCreditResult(r: CreditResult): Uint8Array {
  return encode(r, sizeCreditResult, writeCreditResult);
}

/** Decodes a CREDIT result. @throws MortarError MALFORMED_PAYLOAD on a wrong size. */
export function decodeCreditResult(bytes: Uint8Array): CreditResult {
  return readCreditResult(reader(bytes, "CREDIT", CREDIT_RESULT_LEN));
}
