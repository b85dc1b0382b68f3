/**
 * The dead-letter envelope (docs/protocol.md "Dead-letter twins"), pure.
 *
 * A message that is dead-lettered (NACK REJECT, or its last delivery attempt
 * failed) is appended to the same partition index of the topic's `.dlq`
 * twin. The twin record keeps the original key and producer fields; its
 * value is this envelope:
 *
 * ```
 * magic "MQDL" (4 B) | version u8 = 1 | reason u8 | topic_id u16 | partition u16
 * | sequence u64 | attempts u16 | published_at u64 (ms) | dead_lettered_at u64 (ms)
 * | group_len u8 | group (UTF-8) | original value (rest)
 * ```
 *
 * All integers big-endian, like the frames. The header is
 * DEAD_LETTER_HEADER_LEN + group bytes (≤ 292 B), so an envelope around a
 * value near MAX_VALUE_LEN exceeds that cap by at most 292 B; the MSG frame
 * still fits MAX_FRAME_LEN (MAX_VALUE_LEN reserves 1 KiB).
 */

/** First four bytes of every envelope: ASCII "MQDL". */
export const DEAD_LETTER_MAGIC = Uint8Array.of(0x4d, 0x51, 0x44, 0x4c);
/** Envelope layout version. */
export const DEAD_LETTER_VERSION = 1;
/** Fixed header bytes before the group name. */
export const DEAD_LETTER_HEADER_LEN = 37;

/** Why a message was dead-lettered. */
export const DeadLetterReason = {
  /** Its last allowed delivery attempt expired or was NACKed with RETRY. */
  MAX_ATTEMPTS: 1,
  /** A consumer NACKed it with REJECT. */
  REJECTED: 2,
} as const;

/** Where a dead-lettered message came from. */
export interface DeadLetterHeader {
  reason: number; // DeadLetterReason
  /** Source topic_id (odd) and partition. */
  topicId: number;
  partition: number;
  /** Sequence in the source partition. */
  sequence: bigint;
  /** Deliveries made before it was dead-lettered. */
  attempts: number;
  /** Original append time, ms since the epoch. */
  publishedAt: number;
  /** When it was dead-lettered, ms since the epoch. */
  deadLetteredAt: number;
  /** Consumer group that dead-lettered it (≤ 255 B of UTF-8). */
  group: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Wraps `value` in an envelope.
 * @throws RangeError when the group name is longer than 255 bytes or a field does not fit its width.
 */
export function encodeDeadLetter(h: DeadLetterHeader, value: Uint8Array): Uint8Array {
  const group = enc.encode(h.group);
  if (group.length > 255) throw new RangeError(`group name is ${group.length} bytes, max 255`);
  const out = new Uint8Array(DEAD_LETTER_HEADER_LEN + group.length + value.length);
  const v = new DataView(out.buffer);
  out.set(DEAD_LETTER_MAGIC, 0);
  v.setUint8(4, DEAD_LETTER_VERSION);
  v.setUint8(5, h.reason);
  v.setUint16(6, h.topicId);
  v.setUint16(8, h.partition);
  v.setBigUint64(10, h.sequence);
  v.setUint16(18, Math.min(h.attempts, 0xffff));
  v.setBigUint64(20, BigInt(h.publishedAt));
  v.setBigUint64(28, BigInt(h.deadLetteredAt));
  v.setUint8(36, group.length);
  out.set(group, DEAD_LETTER_HEADER_LEN);
  out.set(value, DEAD_LETTER_HEADER_LEN + group.length);
  return out;
}

/**
 * Unwraps an envelope: the header and the original value (a view of
 * `bytes`), or null when `bytes` is not an envelope (no magic, unknown
 * version, or too short).
 */
export function decodeDeadLetter(bytes: Uint8Array): { header: DeadLetterHeader; value: Uint8Array } | null {
  if (bytes.length < DEAD_LETTER_HEADER_LEN) return null;
  for (let i = 0; i < 4; i++) if (bytes[i] !== DEAD_LETTER_MAGIC[i]) return null;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (v.getUint8(4) !== DEAD_LETTER_VERSION) return null;
  const groupLen = v.getUint8(36);
  if (bytes.length < DEAD_LETTER_HEADER_LEN + groupLen) return null;
  return {
    header: {
      reason: v.getUint8(5),
      topicId: v.getUint16(6),
      partition: v.getUint16(8),
      sequence: v.getBigUint64(10),
      attempts: v.getUint16(18),
      publishedAt: Number(v.getBigUint64(20)),
      deadLetteredAt: Number(v.getBigUint64(28)),
      group: dec.decode(bytes.subarray(DEAD_LETTER_HEADER_LEN, DEAD_LETTER_HEADER_LEN + groupLen)),
    },
    value: bytes.subarray(DEAD_LETTER_HEADER_LEN + groupLen),
  };
}
