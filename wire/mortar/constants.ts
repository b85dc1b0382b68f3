/**
 * MortarMQ v0 constants: wire limits and timers (spec §1), the op table
 * (spec §2), and the protocol decisions the spec leaves open (flag bits,
 * enum values, defaults — documented in docs/protocol.md).
 *
 * Pure: no platform imports. Sizes are bytes, durations are milliseconds.
 */

// ---------------------------------------------------------------- §1 limits

/** Bytes of the `u32_be length` prefix in front of every frame. */
export const FRAME_HEADER_LEN = 4;
/** Max value of `length` (op byte + payload), bytes: 16 MiB. Never raised. */
export const MAX_FRAME_LEN = 16_777_216;
/** Max PUB/MSG value, bytes: 16 MiB − 1 KiB (leaves room for headers and the key). */
export const MAX_VALUE_LEN = 16_776_192;
/** Max key, bytes (UTF-8 not enforced). */
export const MAX_KEY_LEN = 255;
/** Max topic name, bytes of UTF-8. */
export const MAX_TOPIC_LEN = 255;
/** Max ERR diagnostic text, bytes of UTF-8. */
export const MAX_ERR_MESSAGE = 512;
/** Max OK `result`, bytes: MAX_FRAME_LEN − op − request_op − result_len. */
export const MAX_OK_RESULT_LEN = 16_777_210;
/** `protocol_version` a v0 CONNECT must carry. */
export const WIRE_VERSION = 1;

/** Keepalive interval, ms. A client sends at least one frame (e.g. PING) this often. */
export const KEEPALIVE_MS = 30_000;
/** The server closes after 1.5 × KEEPALIVE_MS without a complete frame, ms. */
export const KEEPALIVE_CLOSE_MS = 45_000;
/** The server closes when a partial frame stays buffered this long, ms. */
export const HALF_FRAME_TIMEOUT_MS = 10_000;
/**
 * The server closes a connection that has not completed CONNECT this long
 * after it opened, ms (an extension of the spec's timers; docs/protocol.md
 * "Timers"). PING before CONNECT does not extend it.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------- §2 ops

/** Op byte values: 9 core ops (0x01–0x09) + 6 extension ops (0x0A–0x0F). */
export const Op = {
  CONNECT: 0x01,
  DECLARE: 0x02,
  PUB: 0x03,
  SUB: 0x04,
  ACK: 0x05,
  NACK: 0x06,
  PING: 0x07,
  ERR: 0x08,
  OK: 0x09,
  MSG: 0x0a,
  PULL: 0x0b,
  HEARTBEAT: 0x0c,
  NOTICE: 0x0d,
  CONTROL_ACK: 0x0e,
  CREDIT: 0x0f,
} as const;
export type OpName = keyof typeof Op;
export type OpCode = (typeof Op)[OpName];

/** Op value → name, for diagnostics. */
export const OP_NAMES: Readonly<Record<number, OpName>> = Object.fromEntries(
  Object.entries(Op).map(([name, value]) => [value, name as OpName]),
);

/** Ops a client may send: every op except the server pushes MSG and NOTICE (ERR/OK flow both ways). */
export const CLIENT_OPS: ReadonlySet<number> = new Set([
  Op.CONNECT, Op.DECLARE, Op.PUB, Op.SUB, Op.ACK, Op.NACK, Op.PING, Op.ERR, Op.OK,
  Op.PULL, Op.HEARTBEAT, Op.CONTROL_ACK, Op.CREDIT,
]);
/** Requests: client ops that take a slot in the per-connection response FIFO (all but ERR/OK). */
export const REQUEST_OPS: ReadonlySet<number> = new Set([
  Op.CONNECT, Op.DECLARE, Op.PUB, Op.SUB, Op.ACK, Op.NACK, Op.PING,
  Op.PULL, Op.HEARTBEAT, Op.CONTROL_ACK, Op.CREDIT,
]);
/** Ops allowed before CONNECT succeeds (spec §2.1 "authenticate first"). */
export const PRE_CONNECT_OPS: ReadonlySet<number> = new Set([Op.CONNECT, Op.PING, Op.ERR]);

/** How the op byte is classified (spec §2): 0x00/0xFF illegal, 0x10–0x7F and 0x80–0xFE reserved. */
export type OpClass = "known" | "illegal" | "reserved-business" | "reserved-admin";

/** Classifies an op byte (0..255). */
export function classifyOp(op: number): OpClass {
  if (op >= Op.CONNECT && op <= Op.CREDIT) return "known";
  if (op === 0x00 || op === 0xff) return "illegal";
  return op <= 0x7f ? "reserved-business" : "reserved-admin";
}

// ------------------------------------------------- protocol decisions (docs/protocol.md)

/** CONNECT client_flags: no bits defined in v0; unknown bits are ignored (spec §4). */
export const CONNECT_CLIENT_FLAGS_NONE = 0;
/**
 * CONNECT client_flags (extension, docs/protocol.md "Extensions"). Bit0
 * FEATURES: the client asks which extensions the broker speaks; the CONNECT
 * OK result is then `features:u32` (ServerFeatures). A broker without
 * extensions ignores the bit and answers an empty result, so the client
 * knows not to send extension tails.
 */
export const ConnectClientFlags = { FEATURES: 0x0001 } as const;
/** CONNECT OK `features` bits (only when the CONNECT set ConnectClientFlags.FEATURES). Bit0 RETENTION: DECLARE takes the retention tail. */
export const ServerFeatures = { RETENTION: 0x0000_0001 } as const;

/**
 * DECLARE flags. Bit0 DELETE deletes the topic and its `.dlq` twin. Bit1
 * RETENTION (extension) announces the retention tail after `flags`
 * (DECLARE_RETENTION_TAIL_LEN bytes) and asks for the settings in force in
 * the OK result (docs/protocol.md "Topic retention"). Other bits must be 0.
 */
export const DeclareFlags = { DELETE: 0x0001, RETENTION: 0x0002 } as const;
export const DECLARE_FLAGS_DEFINED = DeclareFlags.DELETE | DeclareFlags.RETENTION;

/**
 * DECLARE retention tail `fields:u8`: which of the values that follow the
 * request sets (the others keep their current value, or their default for
 * a new topic). Bits 4–7 are reserved.
 */
export const RetentionFields = { MS: 0x01, BYTES: 0x02, MESSAGES: 0x04, DISCARD: 0x08 } as const;
export const RETENTION_FIELDS_DEFINED = 0x0f;
/** Retention `discard`: OLD deletes the oldest whole segments to make room; NEW refuses PUBs while full (PARTITION_FULL). */
export const Discard = { OLD: 0, NEW: 1 } as const;
/** Default topic retention by age when the deployment sets none (Worker var MORTAR_RETENTION_MS): 7 days, ms. */
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;
/**
 * Default per-partition byte retention when the deployment sets none
 * (Worker var MORTAR_RETENTION_BYTES): 8 GiB of keys + values, below a
 * Durable Object's 10 GB storage cap with room for the log's indexes,
 * ledger and dedupe rows.
 */
export const DEFAULT_RETENTION_BYTES = 8 * 1024 ** 3;

/**
 * DECLARE OK `created`. ALTERED (extension) is answered only to a DECLARE
 * with the RETENTION flag whose values changed the stored settings of an
 * existing topic.
 */
export const DeclareCreated = { CREATED: 0, IDEMPOTENT_OK: 1, ALTERED: 2 } as const;

/** PUB flags: none defined in v0; all bits reserved, must be 0. */
export const PUB_FLAGS_DEFINED = 0;
/** PUB OK `durability`: where the append was committed when the OK was sent. */
export const Durability = { LOCAL: 1, REPLICATED: 2 } as const;
/** PUB OK `result_flags`. Bit0: a duplicate; `sequence` is the original one. */
export const PubResultFlags = { DEDUPLICATED: 0x01 } as const;

/** SUB flags. Bit0 PULL_MODE: no push; deliveries only through PULL. Other bits must be 0. */
export const SubFlags = { PULL_MODE: 0x0001 } as const;
export const SUB_FLAGS_DEFINED = SubFlags.PULL_MODE;
/** SUB `partition` in v0: the coordinator assigns partitions (spec §2.1). */
export const SUB_PARTITION_ANY = 0xffff;
/** SUB `start_policy` for a group with no committed position yet. */
export const StartPolicy = { EARLIEST: 0, LATEST: 1 } as const;

/** ACK flags. Bit0 PROGRESS: extend the work deadline; no attempt used, no credit returned. */
export const AckFlags = { PROGRESS: 0x0001 } as const;
export const ACK_FLAGS_DEFINED = AckFlags.PROGRESS;
/** NACK flags: none defined in v0; all bits reserved, must be 0. */
export const NACK_FLAGS_DEFINED = 0;
/** NACK `reason`. 2 is reserved (error); SLOW=3 is reserved and rejected as unsupported. */
export const NackReason = { RETRY: 0, REJECT: 1, RESERVED_2: 2, SLOW: 3 } as const;

/** MSG flags: none defined in v0; the broker sends 0, clients ignore unknown bits. */
export const MSG_FLAGS_DEFINED = 0;

/** HEARTBEAT `state`. */
export const HeartbeatState = { ACTIVE: 0, LEAVE: 1 } as const;
/** NOTICE `kind` (echoed as CONTROL_ACK `notice_kind`). */
export const NoticeKind = { ASSIGN: 0, REVOKE: 1 } as const;
/** CONTROL_ACK `result`. */
export const ControlAckResult = { OK: 0, STALE: 1, ERROR: 2 } as const;
/** CREDIT `mode`: SET replaces the window, ADD grows it. */
export const CreditMode = { SET: 0, ADD: 1 } as const;

// ---------------------------------------------------------------- defaults

/** Credit window when SUB/CREDIT credit_count is 0: messages. */
export const DEFAULT_CREDIT_COUNT = 256;
/** Credit window when SUB/CREDIT credit_bytes is 0: bytes (2 MiB). */
export const DEFAULT_CREDIT_BYTES = 2 * 1024 * 1024;
/** Ack wait (work deadline) per delivery before redelivery, ms. */
export const DEFAULT_ACK_WAIT_MS = 30_000;
/** Delivery attempts before a message is dead-lettered to the `.dlq` twin. */
export const MAX_DELIVERY_ATTEMPTS = 5;
/** Consumer group: a member with no HEARTBEAT (or other request) this long is removed, ms. */
export const GROUP_SESSION_TIMEOUT_MS = 45_000;
/**
 * Consumer group: recommended HEARTBEAT interval, ms — a third of the
 * session timeout (as Kafka advises for heartbeat.interval.ms), so two
 * HEARTBEATs may be lost before a member expires; also within the spec's
 * keepalive (a complete frame at least every 45 s). The SDK's default.
 */
export const GROUP_HEARTBEAT_INTERVAL_MS = 15_000;
/** Consumer group: a REVOKE NOTICE not confirmed by CONTROL_ACK this long is forced, ms. */
export const REVOCATION_TIMEOUT_MS = 10_000;
/** Largest credit window a subscription may hold: messages (granted_count is a u16). */
export const MAX_CREDIT_COUNT = 0xffff;
/** Largest credit window a subscription may hold: value bytes (64 MiB). CREDIT above it → CREDIT_LIMIT_EXCEEDED. */
export const MAX_CREDIT_BYTES = 64 * 1024 * 1024;
/** PULL `max_msgs` when the request sends 0. */
export const DEFAULT_PULL_MAX_MSGS = 256;
/** PULL `max_bytes` when the request sends 0: value bytes (2 MiB). */
export const DEFAULT_PULL_MAX_BYTES = 2 * 1024 * 1024;
/** Cap on one PULL answer, value bytes (8 MiB; the first message is always whole, even when larger). */
export const MAX_PULL_BYTES = 8 * 1024 * 1024;
/**
 * Producer dedupe window per (topic_id, partition, producer_id): the
 * producer_seq values in (highest − 1024, highest], highest being the
 * largest appended. In the window, a seq that was appended is a duplicate
 * (answered with its original sequence) and one that was not is appended
 * (gap fill); a seq ≤ highest − 1024 is rejected
 * (PRODUCER_SEQ_OUT_OF_WINDOW); a seq > highest is appended.
 */
export const PRODUCER_DEDUPE_WINDOW = 1024;

// ---------------------------------------------------------------- names / ids

/**
 * Default cap on partition_count for a new topic (Worker var
 * MORTAR_MAX_PARTITIONS_PER_TOPIC overrides it, up to 65535). Every
 * partition is its own Durable Object.
 */
export const DEFAULT_MAX_PARTITIONS_PER_TOPIC = 1024;

/** Suffix reserved for dead-letter twins. */
export const DLQ_SUFFIX = ".dlq";
/** Topic registry capacity in (source, twin) pairs: odd ids for sources, even for twins. */
export const MAX_TOPIC_PAIRS = 32_767;
/** Max consumer group name, bytes of UTF-8 (decision; the wire allows u16). */
export const MAX_GROUP_LEN = 255;

/** Largest u64, for range checks. */
export const MAX_U64 = 0xffff_ffff_ffff_ffffn;
