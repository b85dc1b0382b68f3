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
 * DECLARE OK (layout: RESULT_LAYOUTS.DECLARE): the topic's id and partition
 * count, `created` (DeclareCreated); `retention`, the settings in force,
 * only answering a DECLARE with the RETENTION flag.
 */
export interface DeclareResult {
  topicId: number;
  partitionCount: number;
  created: number;
  retention?: RetentionValues;
}

/** PUB OK (layout: RESULT_LAYOUTS.PUB); `durability` is a Durability, `resultFlags` PubResultFlags. */
export interface PubResult {
  sequence: bigint;
  durability: number;
  leaderEpoch: bigint;
  commitSeq: bigint;
  resultFlags: number;
}

/** SUB OK (layout: RESULT_LAYOUTS.SUB). */
export interface SubResult {
  subscriptionId: number;
  memberId: bigint;
  membershipEpoch: number;
  assignmentEpoch: number;
}

/** CREDIT OK (layout: RESULT_LAYOUTS.CREDIT): the window granted and what is outstanding, counts and bytes. */
export interface CreditResult {
  grantedCount: number;
  grantedBytes: number;
  outstandingCount: number;
  outstandingBytes: number;
  creditEpoch: bigint;
}

/** CONNECT OK when the CONNECT set ConnectClientFlags.FEATURES (layout: RESULT_LAYOUTS.CONNECT): ServerFeatures bits. */
export interface ConnectResult {
  features: number;
}

/** Bytes of each OK result (the DECLARE one without its tail), from the tables. */
export const DECLARE_RESULT_LEN = fixedBytes(RESULT_LAYOUTS.DECLARE.fields);
/** Bytes of the OK result tail of a DECLARE with RETENTION (the settings in force). */
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
