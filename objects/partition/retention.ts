/**
 * Retention decisions for one partition log, pure (docs/protocol.md "Topic
 * retention"). The log is a list of segments (log-store.ts), each a run of
 * records appended together, with its first/last sequence, record count,
 * encoded bytes and append time; retention only ever deletes whole
 * segments, oldest first, deciding on that metadata alone.
 *
 * - Age (`ms` > 0): a segment whose append time is `ms` or more ago goes.
 * - Size (`bytes` / `messages` > 0): while the log holds more than the
 *   limit, the oldest segment goes — but never the newest one, so retained
 *   ≤ limit, or one segment larger than it. Applies whatever `discard` says
 *   (a lowered limit shrinks a `discard = new` log too).
 * - `discard = new` refuses records that would take the log past a size
 *   limit (appendRoom); `old` makes room by the rule above.
 */
import type { Retention } from "../shared/retention-config";

/** One segment row's metadata (log-store.ts `oldest`): what retention decides on, no value. */
export interface SegmentInfo {
  firstSeq: number;
  lastSeq: number;
  count: number;
  /** Encoded bytes (whole PUB frames). */
  bytes: number;
  /** Append time of its records, ms since the epoch. */
  ts: number;
}

/** Records and keys + values the log holds. */
export interface LogLevel {
  records: number;
  /** Keys + values, bytes. */
  bytes: number;
}

/** The oldest segments to delete now (`segments` = 0: none). */
export interface Deletion {
  segments: number;
  /** first_seq of the last segment to delete. */
  lastFirstSeq: number;
  /** Sequence of the first record kept (= the new log start when something is kept). */
  nextSeq: number;
  records: number;
  /** Encoded bytes of the deleted segments. */
  encodedBytes: number;
  /** Keys + values of the deleted records. */
  bytes: number;
}

/**
 * Which of `oldest` (the oldest segments, ascending; possibly only a page
 * of them) to delete at `now` (ms) under `limits`, for a log at `level`.
 * `overhead` is the encoded bytes of a record beyond its key and value.
 */
export function planDeletion(oldest: readonly SegmentInfo[], level: LogLevel, limits: Retention, now: number, overhead: number): Deletion {
  const out: Deletion = { segments: 0, lastFirstSeq: 0, nextSeq: 0, records: 0, encodedBytes: 0, bytes: 0 };
  let records = level.records;
  let bytes = level.bytes;
  for (const s of oldest) {
    const expired = limits.ms > 0 && s.ts + limits.ms <= now;
    const over = (limits.messages > 0 && records > limits.messages) || (limits.bytes > 0 && bytes > limits.bytes);
    const newest = records === s.count;
    if (!expired && !(over && !newest)) break;
    const payload = s.bytes - s.count * overhead;
    records -= s.count;
    bytes -= payload;
    out.segments++;
    out.lastFirstSeq = s.firstSeq;
    out.nextSeq = s.lastSeq + 1;
    out.records += s.count;
    out.encodedBytes += s.bytes;
    out.bytes += payload;
  }
  return out;
}

/** When the oldest segment left (append time `oldestTs`) expires under `limits`, or null when retention by age is off or the log is empty. */
export function nextExpiry(oldestTs: number | null, limits: Retention): number | null {
  return limits.ms > 0 && oldestTs !== null ? oldestTs + limits.ms : null;
}

/** What may still be appended to a `discard = new` log: records and keys + values; Infinity where unlimited. */
export interface AppendRoom {
  records: number;
  bytes: number;
}

/**
 * The room left under `limits` for a log at `level` when the topic refuses
 * new records at its limits (`discard = new`), or null when nothing is
 * refused (discard `old`, or no size limit).
 */
export function appendRoom(level: LogLevel, limits: Retention): AppendRoom | null {
  if (limits.discard !== "new" || (limits.bytes === 0 && limits.messages === 0)) return null;
  return {
    records: limits.messages > 0 ? Math.max(0, limits.messages - level.records) : Infinity,
    bytes: limits.bytes > 0 ? Math.max(0, limits.bytes - level.bytes) : Infinity,
  };
}

/** Takes one record of `bytes` keys + values from `room`; false (room unchanged) when it does not fit. */
export function takeRoom(room: AppendRoom, bytes: number): boolean {
  if (room.records < 1 || room.bytes < bytes) return false;
  room.records--;
  room.bytes -= bytes;
  return true;
}
