/**
 * The MortarMQ v0 payload layouts, each stated once: a field table per op
 * (spec §2, "field order = byte order") and per OK result layout. Size,
 * encode and decode are derived from these tables: `npm run gen:codec`
 * (client/scripts/gen-codec.ts, rendering with codegen.ts) writes them as
 * straight-line code into codec.gen.ts, which a unit test keeps equal to
 * what the tables render. The code is generated ahead of time rather than
 * interpreted per call because the codec is on the PUB hot path: a table
 * walked per frame reads and writes properties by computed name, measured
 * 0.59–0.75× the straight-line code (bench/results/experiments/codec-table-ab.json),
 * and Workers forbid generating code at run time (`new Function`).
 *
 * Field kinds (integers big-endian, spec §1):
 * - `u8`, `u16`, `u32` → `number`; `u64` → `bigint`;
 * - `bytes16` / `bytes32` → `Uint8Array` after a u16 / u32 length prefix
 *   (UTF-8 text — topic, group, ERR message — travels as bytes; validate.ts
 *   checks it);
 * - `u64s16` → `bigint[]` after a u16 count (PULL ownership_epochs).
 *
 * A layout may end with one optional tail of fixed-width fields (spec §4:
 * optional fields are appended and announced by a flags bit), held in a
 * nested object. With `flag`, the tail is announced by that bit of the
 * layout's own `flags` field (DECLARE with RETENTION); without it, by its
 * presence (an OK result whose request set the flag: the tail is there
 * when the bytes are).
 *
 * Field names are the frames' camelCase property names; the wire name
 * (error messages) is derived from them: `topicId` → `topic_id`.
 */
import { DeclareFlags, type OpName } from "./constants";
import type {
  AckFrame, ConnectFrame, ControlAckFrame, CreditFrame, DeclareFrame, ErrFrame, HeartbeatFrame, MsgFrame, NackFrame,
  NoticeFrame, OkFrame, PingFrame, PubFrame, PullFrame, SubFrame,
} from "./frames";
import type { ConnectResult, CreditResult, DeclareResult, PubResult, SubResult } from "./results";

/** The wire kinds a field can have. */
export type Kind = "u8" | "u16" | "u32" | "u64" | "bytes16" | "bytes32" | "u64s16";

interface KindValue {
  u8: number;
  u16: number;
  u32: number;
  u64: bigint;
  bytes16: Uint8Array;
  bytes32: Uint8Array;
  u64s16: bigint[];
}

/** The kinds whose value type is exactly `V`. */
type KindsOf<V> = { [K in Kind]: [KindValue[K]] extends [V] ? ([V] extends [KindValue[K]] ? K : never) : never }[Kind];

/** One field of `T`: a property name and a kind matching its type (the compiler checks both). */
export type FieldSpec<T> = { [K in keyof T & string]-?: readonly [K, KindsOf<T[K]>] }[keyof T & string];

/** The optional tail of `T`: a property of object type, its fields, and the flags bit announcing it (if any). */
export type TailSpec<T> = {
  [K in keyof T & string]-?: NonNullable<T[K]> extends Uint8Array | bigint | number | unknown[]
    ? never
    : { name: K; fields: readonly FieldSpec<NonNullable<T[K]>>[]; flag?: number };
}[keyof T & string];

/** A layout: fields in byte order, then at most one tail. */
export interface LayoutSpec<T> {
  fields: readonly FieldSpec<T>[];
  tail?: TailSpec<T>;
}

/** Untyped view of a layout, for code that walks any of them. */
export interface AnyLayout {
  fields: readonly (readonly [string, Kind])[];
  tail?: { name: string; fields: readonly (readonly [string, Kind])[]; flag?: number };
}

const layout = <T>(spec: LayoutSpec<T>): LayoutSpec<T> => spec;

/** The fields every delivery reference (ACK, NACK) starts with. */
const DELIVERY_REF = [
  ["subscriptionId", "u16"], ["topicId", "u16"], ["partition", "u16"], ["seq", "u64"], ["deliveryId", "u64"], ["ownershipEpoch", "u64"],
] as const;

/** Each op's payload after the op byte (spec §2). */
export const FRAME_LAYOUTS = {
  CONNECT: layout<ConnectFrame>({
    fields: [["protocolVersion", "u8"], ["clientFlags", "u16"], ["token", "bytes16"], ["reserved", "u32"]],
  }),
  DECLARE: layout<DeclareFrame>({
    fields: [["topic", "bytes16"], ["partitionCount", "u16"], ["flags", "u16"]],
    // extension: docs/protocol.md "Topic retention"
    tail: {
      name: "retention",
      flag: DeclareFlags.RETENTION,
      fields: [["fields", "u8"], ["retentionMs", "u64"], ["retentionBytes", "u64"], ["retentionMessages", "u64"], ["discard", "u8"]],
    },
  }),
  PUB: layout<PubFrame>({
    fields: [
      ["topicId", "u16"], ["partition", "u16"], ["producerId", "u64"], ["producerSeq", "u64"], ["flags", "u16"],
      ["key", "bytes16"], ["value", "bytes32"],
    ],
  }),
  SUB: layout<SubFrame>({
    fields: [
      ["group", "bytes16"], ["topicId", "u16"], ["partition", "u16"], ["startPolicy", "u8"], ["creditCount", "u16"],
      ["creditBytes", "u32"], ["flags", "u16"],
    ],
  }),
  ACK: layout<AckFrame>({ fields: [...DELIVERY_REF, ["flags", "u16"]] }),
  NACK: layout<NackFrame>({ fields: [...DELIVERY_REF, ["reason", "u8"], ["flags", "u16"]] }),
  PING: layout<PingFrame>({ fields: [] }),
  ERR: layout<ErrFrame>({ fields: [["code", "u16"], ["requestOp", "u8"], ["message", "bytes16"]] }),
  OK: layout<OkFrame>({ fields: [["requestOp", "u8"], ["result", "bytes32"]] }),
  MSG: layout<MsgFrame>({
    fields: [
      ["subscriptionId", "u16"], ["topicId", "u16"], ["partition", "u16"], ["sequence", "u64"], ["deliveryId", "u64"],
      ["attempt", "u16"], ["ownershipEpoch", "u64"], ["producerId", "u64"], ["producerSeq", "u64"], ["flags", "u16"],
      ["key", "bytes16"], ["value", "bytes32"],
    ],
  }),
  PULL: layout<PullFrame>({
    fields: [
      ["subscriptionId", "u16"], ["memberId", "u64"], ["membershipEpoch", "u32"], ["assignmentEpoch", "u32"],
      ["ownershipEpochs", "u64s16"], ["maxMsgs", "u16"], ["maxBytes", "u32"], ["waitMs", "u16"], ["minBytes", "u32"],
    ],
  }),
  HEARTBEAT: layout<HeartbeatFrame>({
    fields: [["subscriptionId", "u16"], ["memberId", "u64"], ["membershipEpoch", "u32"], ["assignmentEpoch", "u32"], ["state", "u8"]],
  }),
  NOTICE: layout<NoticeFrame>({
    fields: [
      ["noticeId", "u64"], ["kind", "u8"], ["groupId", "u16"], ["membershipEpoch", "u32"], ["assignmentEpoch", "u32"],
      ["ownershipEpoch", "u64"], ["topicId", "u16"], ["partition", "u16"], ["memberId", "u64"],
    ],
  }),
  CONTROL_ACK: layout<ControlAckFrame>({
    fields: [
      ["noticeId", "u64"], ["noticeKind", "u8"], ["groupId", "u16"], ["membershipEpoch", "u32"], ["assignmentEpoch", "u32"],
      ["ownershipEpoch", "u64"], ["result", "u8"],
    ],
  }),
  CREDIT: layout<CreditFrame>({
    fields: [
      ["subscriptionId", "u16"], ["membershipEpoch", "u32"], ["ownershipEpoch", "u64"], ["mode", "u8"],
      ["creditCount", "u16"], ["creditBytes", "u32"], ["reserved", "u32"],
    ],
  }),
} satisfies Record<OpName, unknown>;

/**
 * OK `result` layouts (spec §2, and the extensions of docs/protocol.md):
 * the answers with a non-empty result, by the op they answer.
 */
export const RESULT_LAYOUTS = {
  /** Only answering a CONNECT with ConnectClientFlags.FEATURES (others get an empty result). */
  CONNECT: layout<ConnectResult>({ fields: [["features", "u32"]] }),
  DECLARE: layout<DeclareResult>({
    fields: [["topicId", "u16"], ["partitionCount", "u16"], ["created", "u8"]],
    // only answering a DECLARE with DeclareFlags.RETENTION: the settings in force
    tail: {
      name: "retention",
      fields: [["retentionMs", "u64"], ["retentionBytes", "u64"], ["retentionMessages", "u64"], ["discard", "u8"]],
    },
  }),
  PUB: layout<PubResult>({
    fields: [["sequence", "u64"], ["durability", "u8"], ["leaderEpoch", "u64"], ["commitSeq", "u64"], ["resultFlags", "u8"]],
  }),
  SUB: layout<SubResult>({
    fields: [["subscriptionId", "u16"], ["memberId", "u64"], ["membershipEpoch", "u32"], ["assignmentEpoch", "u32"]],
  }),
  CREDIT: layout<CreditResult>({
    fields: [["grantedCount", "u16"], ["grantedBytes", "u32"], ["outstandingCount", "u16"], ["outstandingBytes", "u32"], ["creditEpoch", "u64"]],
  }),
} satisfies Partial<Record<OpName, unknown>>;

/** Bytes of a kind on the wire (of its length prefix, for the variable ones). */
export const KIND_BYTES: Readonly<Record<Kind, number>> = { u8: 1, u16: 2, u32: 4, u64: 8, bytes16: 2, bytes32: 4, u64s16: 2 };

/** Bytes of `fields`' fixed parts (length prefixes included). */
export function fixedBytes(fields: AnyLayout["fields"]): number {
  return fields.reduce((n, [, kind]) => n + KIND_BYTES[kind], 0);
}

/** Bytes of a layout's tail (0 without one). */
export function tailBytes(l: AnyLayout): number {
  return l.tail ? fixedBytes(l.tail.fields) : 0;
}
