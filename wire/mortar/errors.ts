/**
 * THE MortarMQ v0 error-code registry (spec §3): the spec's 51 codes in four
 * segments — 0x0xxx protocol/session, 0x2xxx metadata, 0x4xxx
 * backpressure/quota, 0x6001–0x600c replication — plus the codes added by
 * compatible extensions (rows with `extension`; docs/protocol.md
 * "Extensions"): 0x4006 PARTITION_FULL (topic retention), 0x002a
 * PERMISSION_DENIED (scoped tokens). This table is the
 * single source; docs/errors.md is rendered from it (wire/mortar/errors-doc.ts)
 * and a unit test fails when they drift.
 *
 * Rules (spec §4): codes are only ever added; a published code never changes
 * meaning and is never reused. 0x000a/0x000b (BACKPRESSURE/QUOTA_EXCEEDED in
 * drafts, moved to 0x4001/0x4002) are left unassigned.
 *
 * Also here: `MortarError` (a thrown/sent protocol error) and ERR-frame helpers.
 */
import { MAX_ERR_MESSAGE, Op } from "./constants";
import type { ErrFrame } from "./frames";

/** What a client should do when it receives the code. */
export type ClientAction =
  | "retry-with-backoff" // transient: resend the same request after a backoff
  | "reconnect" // the connection is closed: open a new one (CONNECT again)
  | "fix-request" // the request is wrong: change it; resending as-is fails again
  | "give-up" // not recoverable by this client: surface to the application / operator
  | "refresh-metadata" // topic ids changed: DECLARE again to learn current ids
  | "refresh-assignment" // apply pending NOTICEs, then retry with the current epochs
  | "rejoin-group" // membership lost: SUB again to get a new member_id / epochs
  | "discard-delivery"; // the delivery is no longer yours: stop work; it is redelivered to the owner

/** Human descriptions of each action, for docs. */
export const CLIENT_ACTIONS: Readonly<Record<ClientAction, string>> = {
  "retry-with-backoff": "Transient. Resend the same request after an exponential backoff (idempotent producers make PUB retries safe).",
  reconnect: "The broker closes the connection. Open a new one and CONNECT again; then resend what was not answered.",
  "fix-request": "The request itself is wrong. Change it; resending it unchanged fails the same way.",
  "give-up": "Not recoverable by the client. Surface the error to the application or operator.",
  "refresh-metadata": "Cached topic metadata is stale. DECLARE the topic again to learn its current id and partition count.",
  "refresh-assignment": "Apply the pending NOTICEs (CONTROL_ACK them), then retry with the current epochs.",
  "rejoin-group": "Group membership was lost. SUB again to obtain a new member_id and epochs.",
  "discard-delivery": "The delivery is no longer owned by this consumer. Stop working on it; the broker redelivers it to the current owner.",
};

/** One registered segment of code space. */
export interface ErrorSegment {
  readonly name: string;
  readonly first: number;
  readonly last: number;
}

/** The four registered segments (spec §3); everything else is reserved. */
export const ERROR_SEGMENTS: readonly ErrorSegment[] = [
  { name: "protocol / session", first: 0x0000, last: 0x0fff },
  { name: "metadata", first: 0x2000, last: 0x2fff },
  { name: "backpressure / quota", first: 0x4000, last: 0x4fff },
  { name: "replication", first: 0x6001, last: 0x600c },
];

/** One registry row. */
export interface ErrorSpec {
  readonly code: number;
  readonly name: string;
  readonly meaning: string;
  readonly action: ClientAction;
  /** The broker closes the connection after sending this ERR. */
  readonly closes: boolean;
  /** Set for a code added beyond spec §3 by a compatible extension: which one. */
  readonly extension?: string;
}

/** Codes spec §3 registers (the registry holds these plus the extensions' codes). */
export const SPEC_ERROR_COUNT = 51;

const row = <N extends string>(code: number, name: N, action: ClientAction, closes: boolean, meaning: string, extension?: string) =>
  (extension === undefined ? { code, name, meaning, action, closes } : { code, name, meaning, action, closes, extension }) as ErrorSpec & { readonly name: N };

/** The registry, ordered by code. */
export const ERROR_REGISTRY = [
  // ---- 0x0xxx protocol / session
  row(0x0001, "FRAME_LENGTH_INVALID", "reconnect", true, "Frame `length` is 0 or larger than MAX_FRAME_LEN (16777216). The stream cannot be resynchronised."),
  row(0x0002, "ILLEGAL_OP", "reconnect", true, "Op byte 0x00 or 0xFF, which are illegal in every version."),
  row(0x0003, "UNKNOWN_OP", "reconnect", true, "Op byte in a reserved range (0x10–0x7F business, 0x80–0xFE admin/internal) or an op the receiver never accepts from this side (e.g. MSG or NOTICE sent by a client)."),
  row(0x0004, "UNSUPPORTED_WIRE_VERSION", "give-up", true, "CONNECT `protocol_version` is not WIRE_VERSION (1)."),
  row(0x0005, "MALFORMED_PAYLOAD", "reconnect", true, "The payload does not parse for its op: too short, trailing bytes, or an inner length field that overruns the frame."),
  row(0x0006, "AUTH_FAILED", "give-up", true, "CONNECT token is missing, unknown or revoked."),
  row(0x0007, "ALREADY_CONNECTED", "fix-request", false, "A second CONNECT on a connection that is already connected; the first one stays in force."),
  row(0x0008, "UNKNOWN_TOPIC", "refresh-metadata", false, "The topic (name or topic_id) is not registered for this tenant. SUB never declares implicitly."),
  row(0x0009, "NOT_CONNECTED", "reconnect", true, "A request other than CONNECT/PING/ERR arrived before CONNECT succeeded."),
  row(0x000c, "CONNECTION_TIMEOUT", "reconnect", true, "No successful CONNECT within 10 s of opening the connection, no complete frame for 1.5 × keepalive (45 s), or a partial frame stayed buffered for 10 s. Sent only when the stream can still carry it."),
  row(0x000f, "INTERNAL_ERROR", "retry-with-backoff", false, "The broker failed unexpectedly while handling the request; nothing was committed for it."),
  row(0x0010, "PARTITION_OUT_OF_RANGE", "refresh-metadata", false, "`partition` is not below the topic's partition_count."),
  row(0x0011, "KEY_TOO_LONG", "fix-request", false, "Key longer than MAX_KEY_LEN (255 bytes)."),
  row(0x0012, "VALUE_TOO_LONG", "fix-request", false, "Value longer than MAX_VALUE_LEN (16776192 bytes)."),
  row(0x0013, "INVALID_PRODUCER_FIELDS", "fix-request", false, "PUB with producer_id = 0 and producer_seq > 0 (non-idempotent publishes must send producer_seq = 0)."),
  row(0x0014, "PRODUCER_SEQ_OUT_OF_WINDOW", "give-up", false, "PUB producer_seq is at or below highest − 1024, where highest is the largest producer_seq appended for (topic, partition, producer_id): older than the dedupe window, so it cannot be told apart from a new message. Nothing was appended. (A seq inside the window that was never appended, e.g. one refused with BACKPRESSURE, is appended, not refused.)"),
  row(0x0015, "INVALID_FLAGS", "fix-request", false, "Reserved bits set in a flags field (DECLARE, PUB, SUB, ACK, NACK), or a selector byte outside its defined values (CREDIT mode, HEARTBEAT state, CONTROL_ACK result); for the DECLARE retention tail (extension) also reserved `fields` bits, a `discard` other than 0/1, a value above 2^53 − 1, or RETENTION combined with DELETE."),
  row(0x0020, "UNKNOWN_SUBSCRIPTION", "rejoin-group", false, "`subscription_id` (or the NOTICE `group_id` echoed in CONTROL_ACK) is not open on this connection."),
  row(0x0021, "STALE_ASSIGNMENT_EPOCH", "refresh-assignment", false, "`assignment_epoch` (or the PULL ownership_epochs list) does not match the group's current assignment."),
  row(0x0022, "UNKNOWN_DELIVERY", "discard-delivery", false, "No in-flight delivery with this (partition, seq, delivery_id): already acknowledged, expired and redelivered, or never sent."),
  row(0x0023, "STALE_OWNERSHIP_EPOCH", "discard-delivery", false, "Fenced: `ownership_epoch` is older than the partition's current ownership epoch; another member owns it now."),
  row(0x0024, "INVALID_PARTITION_SELECTOR", "fix-request", false, "SUB `partition` is not 0xFFFF; in v0 the group coordinator assigns partitions."),
  row(0x0025, "INVALID_START_POLICY", "fix-request", false, "SUB `start_policy` is not 0 (EARLIEST) or 1 (LATEST)."),
  row(0x0026, "STALE_MEMBERSHIP_EPOCH", "rejoin-group", false, "`member_id` is no longer in the group (session timed out or left) or `membership_epoch` is older than the member's current one."),
  row(0x0027, "NOT_OWNER", "discard-delivery", false, "The member does not own the partition named in the request under the current assignment."),
  row(0x0028, "UNKNOWN_NOTICE", "refresh-assignment", false, "CONTROL_ACK `notice_id` is unknown, already confirmed, or its notice_kind/epochs do not match the NOTICE sent."),
  row(0x0029, "UNSUPPORTED_NACK_REASON", "fix-request", false, "NACK `reason` is not 0 (RETRY) or 1 (REJECT); 2 is reserved and 3 (SLOW) is reserved but not implemented — use ACK with the PROGRESS flag."),
  row(0x002a, "PERMISSION_DENIED", "give-up", false, "The connection's token has scopes (docs/tenants.md \"Permissions\") and none allows this operation on this topic or group, or a deny scope refuses it; the message names the operation and resource. Nothing was done; the connection stays open. Only a token issued with scopes ever receives it.", "scoped tokens"),
  // ---- 0x2xxx metadata
  row(0x2001, "INVALID_TOPIC_NAME", "fix-request", false, "Topic name is empty, longer than MAX_TOPIC_LEN (255 bytes), or not valid UTF-8."),
  row(0x2002, "INVALID_GROUP_NAME", "fix-request", false, "Consumer group name is empty, longer than 255 bytes, or not valid UTF-8."),
  row(0x2003, "PARTITION_COUNT_MISMATCH", "refresh-metadata", false, "DECLARE of an existing topic with a different partition_count."),
  row(0x2004, "TOPIC_NAME_RESERVED", "fix-request", false, "Topic names ending in `.dlq` are reserved for dead-letter twins: DECLARE creates a twin only with its source topic (declaring `<source>.dlq` of an existing source returns the twin's id) and deletes it only with its source."),
  row(0x2005, "TOPIC_DELETED", "refresh-metadata", false, "The topic_id belonged to a topic that was deleted (DECLARE with the DELETE flag)."),
  row(0x2006, "INVALID_PARTITION_COUNT", "fix-request", false, "DECLARE (without DELETE, or RETENTION which alters an existing topic) with partition_count = 0, or creating a topic with more partitions than the broker allows (MORTAR_MAX_PARTITIONS_PER_TOPIC, default 1024)."),
  row(0x2007, "MUTATION_NOT_PACKABLE", "give-up", false, "The metadata mutation cannot be packed into the paired topic_id space: no free (odd source, even `.dlq` twin) pair is left — the registry is full at 32767 pairs."),
  // ---- 0x4xxx backpressure / quota
  row(0x4001, "BACKPRESSURE", "retry-with-backoff", false, "The broker or the target object is overloaded (a Durable Object call failed as overloaded). Nothing was committed."),
  row(0x4002, "QUOTA_EXCEEDED", "retry-with-backoff", false, "A tenant quota (publish rate, stored bytes, connections, mailboxes, topic partitions) or a broker limit (consumer groups per topic, subscriptions per connection) is exhausted. Nothing was committed. Rate quotas refill within a second; the others need data deleted, connections closed or a higher quota, so give up after a few retries."),
  row(0x4003, "RATE_LIMITED", "retry-with-backoff", false, "Reserved for a broker-wide request-rate limit (not sent by the v0 broker: tenant publish-rate quotas answer QUOTA_EXCEEDED). Nothing was committed."),
  row(0x4004, "STORAGE_FULL", "retry-with-backoff", false, "The partition's storage is full and retention cannot free space yet. Nothing was appended."),
  row(0x4005, "CREDIT_LIMIT_EXCEEDED", "fix-request", false, "CREDIT would raise the window above the broker's per-subscription maximum (count or bytes)."),
  row(0x4006, "PARTITION_FULL", "give-up", false, "The partition holds its topic's retention_bytes or retention_messages and the topic discards new messages (retention discard = new): this PUB would exceed the limit and was refused; nothing was appended. Space frees only as records pass retention_ms or when the limits are raised (DECLARE with the RETENTION flag), so an immediate retry fails the same way: surface it to the application.", "topic retention"),
  // ---- 0x6001–0x600c replication
  row(0x6001, "LEADER_CHANGED", "retry-with-backoff", false, "The object serving the partition was reset or moved mid-call (a Durable Object `retryable` failure). The request may not have committed; retry (idempotent PUBs are deduplicated)."),
  row(0x6002, "NOT_LEADER", "retry-with-backoff", false, "The request reached a replica that is not the current leader for the partition."),
  row(0x6003, "LEADER_NOT_AVAILABLE", "retry-with-backoff", false, "The partition has no leader right now (its object is starting or recovering)."),
  row(0x6004, "REPLICATION_TIMEOUT", "retry-with-backoff", false, "The write was not confirmed by replicated storage in time; its outcome is unknown. Retry with the same producer_seq."),
  row(0x6005, "NOT_ENOUGH_REPLICAS", "retry-with-backoff", false, "Too few replicas are in sync to commit the write; nothing was committed."),
  row(0x6006, "LEADER_FENCED", "retry-with-backoff", false, "A newer leader_epoch exists; the old leader refused the request."),
  row(0x6007, "REPLICA_LAGGING", "retry-with-backoff", false, "The replica serving the read is behind the requested position."),
  row(0x6008, "LOG_TRUNCATED", "retry-with-backoff", false, "A new leader discarded uncommitted entries after its commit point; the write did not commit."),
  row(0x6009, "COMMIT_UNKNOWN", "retry-with-backoff", false, "The leader lost its storage before confirming the commit; the outcome is unknown. Retry with the same producer_seq."),
  row(0x600a, "STORAGE_UNAVAILABLE", "retry-with-backoff", false, "Replicated storage rejected the operation (e.g. a Durable Object storage operation failed or timed out)."),
  row(0x600b, "PARTITION_RELOCATING", "retry-with-backoff", false, "The partition is being moved to another location; requests are refused until the move completes."),
  row(0x600c, "ELECTION_TIMEOUT", "retry-with-backoff", false, "No answer from the partition's leader within the call deadline (no leader elected in time)."),
] as const satisfies readonly ErrorSpec[];

/** Every registered error name. */
export type ErrorName = (typeof ERROR_REGISTRY)[number]["name"];

/** Name → code, e.g. `ErrorCode.UNKNOWN_TOPIC === 0x0008`. */
export const ErrorCode = Object.freeze(
  Object.fromEntries(ERROR_REGISTRY.map((e) => [e.name, e.code])),
) as { readonly [N in ErrorName]: number };

const BY_CODE = new Map<number, ErrorSpec>(ERROR_REGISTRY.map((e) => [e.code, e]));
const BY_NAME = new Map<string, ErrorSpec>(ERROR_REGISTRY.map((e) => [e.name, e]));

/** The registry row for `code`, or undefined when the code is not registered. */
export function errorByCode(code: number): ErrorSpec | undefined {
  return BY_CODE.get(code);
}

/** The registry row for `name`, or undefined when the name is not registered. */
export function errorByName(name: string): ErrorSpec | undefined {
  return BY_NAME.get(name);
}

/** The segment holding `code`, or undefined when it lies in reserved space. */
export function errorSegment(code: number): ErrorSegment | undefined {
  return ERROR_SEGMENTS.find((s) => code >= s.first && code <= s.last);
}

/** `0x0008`-style rendering of a code. */
export function formatErrorCode(code: number): string {
  return "0x" + code.toString(16).padStart(4, "0");
}

// ---------------------------------------------------------------- MortarError

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/**
 * UTF-8 bytes of `text`, cut to at most `maxBytes` without splitting a
 * character (a cut never leaves a partial multi-byte sequence).
 */
export function truncateUtf8(text: string, maxBytes: number): Uint8Array {
  const bytes = utf8Encoder.encode(text);
  if (bytes.length <= maxBytes) return bytes;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a boundary.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/**
 * A protocol error carrying a registry code. `name` is the registry name
 * (e.g. "UNKNOWN_TOPIC"; `UNREGISTERED_0x1234` for codes this build does not
 * know), `message` is at most MAX_ERR_MESSAGE (512) bytes of UTF-8, and
 * `requestOp` is the op of the request it answers (0 when none).
 */
export class MortarError extends Error {
  readonly code: number;
  readonly requestOp: number;
  /** The registry row; undefined for a code this build does not know. */
  readonly spec: ErrorSpec | undefined;
  override readonly name: string;

  /**
   * @param code registry code (u16) or registry name
   * @param message diagnostic text; truncated to MAX_ERR_MESSAGE bytes
   * @param requestOp op of the request this error answers (u8, default 0)
   */
  constructor(code: number | ErrorName, message = "", requestOp = 0) {
    const spec = typeof code === "number" ? errorByCode(code) : errorByName(code);
    const numeric = typeof code === "number" ? code : (spec?.code ?? 0);
    const bytes = truncateUtf8(message, MAX_ERR_MESSAGE);
    super(bytes.length === message.length ? message : utf8Decoder.decode(bytes));
    this.code = numeric;
    this.requestOp = requestOp;
    this.spec = spec;
    this.name = spec?.name ?? `UNREGISTERED_${formatErrorCode(numeric)}`;
  }

  /** What the client should do (give-up for unregistered codes). */
  get action(): ClientAction {
    return this.spec?.action ?? "give-up";
  }

  /** Whether the broker closes the connection after this error. */
  get closes(): boolean {
    return this.spec?.closes ?? false;
  }

  /** This error as an ERR frame. */
  toFrame(): ErrFrame {
    return errFrame(this.code, this.requestOp, this.message);
  }

  /** The error an ERR frame carries. */
  static fromFrame(frame: ErrFrame): MortarError {
    return new MortarError(frame.code, utf8Decoder.decode(frame.message), frame.requestOp);
  }
}

/** True when `e` is a MortarError. */
export function isMortarError(e: unknown): e is MortarError {
  return e instanceof MortarError;
}

/**
 * Builds an ERR frame. `message` is UTF-8 encoded and truncated to
 * MAX_ERR_MESSAGE bytes on a character boundary.
 */
export function errFrame(code: number, requestOp: number, message = ""): ErrFrame {
  return { op: Op.ERR, code, requestOp, message: truncateUtf8(message, MAX_ERR_MESSAGE) };
}

/** The diagnostic text of an ERR frame (invalid UTF-8 replaced with U+FFFD). */
export function errFrameText(frame: ErrFrame): string {
  return utf8Decoder.decode(frame.message);
}
