/**
 * Stateless checks of a decoded client frame against the v0 limits and the
 * protocol decisions (docs/protocol.md): caps, reserved flag bits, enum
 * values, names. A frame that decodes but fails here gets an ERR and the
 * connection stays open (unless the code `closes`). Checks that need state
 * (unknown topic, stale epochs, …) belong to the broker.
 */
import {
  ACK_FLAGS_DEFINED, DECLARE_FLAGS_DEFINED, DLQ_SUFFIX, DeclareFlags, Discard, MAX_GROUP_LEN, MAX_KEY_LEN, RETENTION_FIELDS_DEFINED, RetentionFields,
  MAX_TOPIC_LEN, MAX_VALUE_LEN, NACK_FLAGS_DEFINED, NackReason, OP_NAMES, Op, PUB_FLAGS_DEFINED,
  SUB_FLAGS_DEFINED, SUB_PARTITION_ANY, WIRE_VERSION, CLIENT_OPS,
} from "./constants";
import { ErrorCode, MortarError } from "./errors";
import type { DeclareRetention, Frame } from "./frames";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8 = new TextEncoder();

/** `bytes` as a string when it is valid UTF-8, else null. */
export function decodeUtf8Strict(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/** UTF-8 bytes of `text` (for topic, group, token fields). */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}

/**
 * Parses a DECLARE topic name: 1..MAX_TOPIC_LEN bytes of valid UTF-8.
 * Returns the name or an INVALID_TOPIC_NAME error. A name ending in `.dlq`
 * parses (DECLARE of an existing twin returns the twin's id); whether it may
 * be created is the registry's call — see dlqSourceName().
 */
export function parseTopicName(bytes: Uint8Array): string | MortarError {
  return parseName(bytes, MAX_TOPIC_LEN, "topic", ErrorCode.INVALID_TOPIC_NAME, Op.DECLARE);
}

/** A 1..`max`-byte UTF-8 name, or the error saying which rule it breaks (length, or not valid UTF-8). */
function parseName(bytes: Uint8Array, max: number, what: string, code: number, op: number): string | MortarError {
  if (bytes.length < 1 || bytes.length > max) {
    return new MortarError(code, `${what} name must be 1..${max} bytes of UTF-8 (got ${bytes.length} bytes)`, op);
  }
  const name = decodeUtf8Strict(bytes);
  if (name === null) return new MortarError(code, `${what} name is not valid UTF-8 (${bytes.length} bytes)`, op);
  return name;
}

/**
 * For a reserved dead-letter twin name `<source>.dlq`, the source topic's
 * name; null for an ordinary name. (`.dlq` alone has an empty source and is
 * reserved too: returns "".)
 */
export function dlqSourceName(name: string): string | null {
  return name.endsWith(DLQ_SUFFIX) ? name.slice(0, -DLQ_SUFFIX.length) : null;
}

/** Parses a SUB group name: 1..MAX_GROUP_LEN bytes of valid UTF-8; else INVALID_GROUP_NAME. */
export function parseGroupName(bytes: Uint8Array): string | MortarError {
  return parseName(bytes, MAX_GROUP_LEN, "group", ErrorCode.INVALID_GROUP_NAME, Op.SUB);
}

function err(name: keyof typeof ErrorCode, op: number, message: string): MortarError {
  return new MortarError(ErrorCode[name], message, op);
}

function reservedBits(op: number, field: string, value: number, defined: number): MortarError | null {
  if ((value & ~defined) === 0) return null;
  return err("INVALID_FLAGS", op, `${OP_NAMES[op]} ${field} 0x${value.toString(16)} sets reserved bits (defined: 0x${defined.toString(16)})`);
}

/**
 * Checks a DECLARE retention tail (docs/protocol.md "Topic retention"):
 * reserved `fields` bits (4–7), a `discard` other than OLD (0) / NEW (1), or
 * a set value above 2^53 − 1 → INVALID_FLAGS. Values of fields the request
 * does not set are ignored. Returns null when the tail is acceptable.
 */
export function retentionTailError(t: DeclareRetention): MortarError | null {
  const bad = reservedBits(Op.DECLARE, "retention fields", t.fields, RETENTION_FIELDS_DEFINED);
  if (bad) return bad;
  if (t.fields & RetentionFields.DISCARD && t.discard !== Discard.OLD && t.discard !== Discard.NEW) {
    return err("INVALID_FLAGS", Op.DECLARE, `retention discard ${t.discard} is not 0 (old) or 1 (new)`);
  }
  const values: [number, string, bigint][] = [
    [RetentionFields.MS, "retention_ms", t.retentionMs],
    [RetentionFields.BYTES, "retention_bytes", t.retentionBytes],
    [RetentionFields.MESSAGES, "retention_messages", t.retentionMessages],
  ];
  for (const [bit, name, v] of values) {
    if (t.fields & bit && v > BigInt(Number.MAX_SAFE_INTEGER)) {
      return err("INVALID_FLAGS", Op.DECLARE, `${name} ${v} is above 2^53 − 1 (use 0 for unlimited)`);
    }
  }
  return null;
}

function notIn(op: number, field: string, value: number, max: number): MortarError | null {
  return value <= max ? null : err("INVALID_FLAGS", op, `${OP_NAMES[op]} ${field} ${value} is not defined (0..${max})`);
}

/**
 * Checks a decoded frame received from a client. Returns the error to send
 * (its `requestOp` is the frame's op) or null when the frame is acceptable.
 * MSG and NOTICE from a client → UNKNOWN_OP (closes the connection).
 * CONNECT: protocol_version must be WIRE_VERSION; client_flags and reserved
 * are ignored (spec §4). DECLARE with DELETE ignores partition_count and
 * may not name a `.dlq` twin (TOPIC_NAME_RESERVED); creating a `.dlq` name
 * is refused by the registry, which alone knows whether the source exists.
 * DECLARE with RETENTION (extension) may not be combined with DELETE, may
 * send partition_count 0 (alter an existing topic), and its tail is checked
 * by retentionTailError.
 */
export function checkClientFrame(f: Frame): MortarError | null {
  if (!CLIENT_OPS.has(f.op)) return err("UNKNOWN_OP", f.op, `${OP_NAMES[f.op]} is sent only by the server`);
  switch (f.op) {
    case Op.CONNECT:
      return f.protocolVersion === WIRE_VERSION
        ? null
        : err("UNSUPPORTED_WIRE_VERSION", f.op, `protocol_version ${f.protocolVersion} is not supported (this broker speaks ${WIRE_VERSION})`);
    case Op.DECLARE: {
      const name = parseTopicName(f.topic);
      if (typeof name !== "string") return name;
      if (dlqSourceName(name) !== null && (f.flags & DeclareFlags.DELETE) !== 0) {
        return err("TOPIC_NAME_RESERVED", f.op, `a "${DLQ_SUFFIX}" twin is deleted with its source topic, not on its own`);
      }
      const bad = reservedBits(f.op, "flags", f.flags, DECLARE_FLAGS_DEFINED);
      if (bad) return bad;
      const retention = (f.flags & DeclareFlags.RETENTION) !== 0;
      if (retention && (f.flags & DeclareFlags.DELETE) !== 0) {
        return err("INVALID_FLAGS", f.op, "DECLARE flags set both DELETE and RETENTION; a delete takes no retention settings");
      }
      if ((f.flags & DeclareFlags.DELETE) === 0 && f.partitionCount === 0 && !retention) {
        return err("INVALID_PARTITION_COUNT", f.op, "partition_count must be at least 1");
      }
      return f.retention ? retentionTailError(f.retention) : null;
    }
    case Op.PUB:
      if (f.producerId === 0n && f.producerSeq !== 0n) {
        return err("INVALID_PRODUCER_FIELDS", f.op, "producer_id 0 requires producer_seq 0");
      }
      if (f.key.length > MAX_KEY_LEN) return err("KEY_TOO_LONG", f.op, `key is ${f.key.length} bytes, max ${MAX_KEY_LEN}`);
      if (f.value.length > MAX_VALUE_LEN) return err("VALUE_TOO_LONG", f.op, `value is ${f.value.length} bytes, max ${MAX_VALUE_LEN}`);
      return reservedBits(f.op, "flags", f.flags, PUB_FLAGS_DEFINED);
    case Op.SUB: {
      const name = parseGroupName(f.group);
      if (typeof name !== "string") return name;
      if (f.partition !== SUB_PARTITION_ANY) {
        return err("INVALID_PARTITION_SELECTOR", f.op, `partition must be 0xffff in v0 (got ${f.partition})`);
      }
      if (f.startPolicy > 1) return err("INVALID_START_POLICY", f.op, `start_policy ${f.startPolicy} is not 0 (EARLIEST) or 1 (LATEST)`);
      return reservedBits(f.op, "flags", f.flags, SUB_FLAGS_DEFINED);
    }
    case Op.ACK:
      return reservedBits(f.op, "flags", f.flags, ACK_FLAGS_DEFINED);
    case Op.NACK:
      if (f.reason !== NackReason.RETRY && f.reason !== NackReason.REJECT) {
        const why = f.reason === NackReason.SLOW ? "SLOW (3) is reserved and not implemented; use ACK with PROGRESS" : "reserved";
        return err("UNSUPPORTED_NACK_REASON", f.op, `NACK reason ${f.reason}: ${why}`);
      }
      return reservedBits(f.op, "flags", f.flags, NACK_FLAGS_DEFINED);
    case Op.HEARTBEAT:
      return notIn(f.op, "state", f.state, 1);
    case Op.CONTROL_ACK:
      if (f.noticeKind > 1) return err("UNKNOWN_NOTICE", f.op, `notice_kind ${f.noticeKind} is not ASSIGN (0) or REVOKE (1)`);
      return notIn(f.op, "result", f.result, 2);
    case Op.CREDIT:
      return notIn(f.op, "mode", f.mode, 1);
    default: // PING, PULL, ERR, OK: nothing stateless to check
      return null;
  }
}
