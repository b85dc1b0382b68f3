/**
 * Retention decisions for one partition log, pure (docs/protocol.md "Topic
 * retention"). The log is a list of segments (log-store.ts), each a run of
 * records appended together, with its first/last sequence, record count,
 * encoded bytes and append time, and a log start (the first visible
 * sequence) that may lie inside the oldest segment. Retention moves the log
 * start up and deletes the oldest whole segments, deciding on that metadata
 * alone (no value is read).
 *
 * - Count (`messages` > 0): exactly the newest `messages` records stay
 *   visible — the log start moves to high watermark − messages + 1 (never
 *   down); a segment is deleted once it lies wholly below the log start.
 * - Bytes (`bytes` > 0): the oldest segment goes only while the segments
 *   after it still hold at least `bytes` of keys + values — never below the
 *   limit (Kafka's rule): the log keeps ≥ the limit once that much was
 *   written, and exceeds it by less than its oldest segment (≤ 1 MiB of
 *   frames, or one larger record).
 * - Age (`ms` > 0): a segment whose append time is `ms` or more ago goes,
 *   the newest one too.
 * - Deleting a segment moves the log start past it. Size rules apply
 *   whatever `discard` says (a lowered limit shrinks a `discard = new` log
 *   too); `discard = new` refuses records that would take the log past a
 *   size limit (appendRoom).
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
  /** Visible records (at or above the log start). */
  records: number;
  /** Keys + values stored, bytes (records below the log start in a segment not yet deleted included). */
  bytes: number;
}

/** Where the visible log is: its start and its newest sequence (0 when nothing is stored). */
export interface LogBounds {
  /** The first visible sequence (the log start); when nothing is stored, the next sequence. */
  start: number;
  /** The high watermark: the newest sequence appended (0 before any). */
  last: number;
}

/** What to delete now: the oldest segments (`segments` = 0: none) and where the log start goes. */
export interface Deletion {
  segments: number;
  /** first_seq of the last segment to delete. */
  lastFirstSeq: number;
  /** Sequence of the first record kept after the deleted segments (= the new log start when nothing else hides records). */
  nextSeq: number;
  /** Records stored in the deleted segments (visible or not). */
  records: number;
  /** Encoded bytes of the deleted segments. */
  encodedBytes: number;
  /** Keys + values of the deleted records. */
  bytes: number;
  /** The new log start (≥ bounds.start): nothing below it is visible afterwards. */
  logStart: number;
}

/** The log start retention by count asks for: high watermark − messages + 1, or `bounds.start` when the count is within the limit (never down). */
export function countStart(bounds: LogBounds, limits: Retention): number {
  if (limits.messages <= 0) return bounds.start;
  return Math.max(bounds.start, bounds.last - limits.messages + 1);
}

/**
 * Which of `oldest` (the oldest stored segments, ascending; possibly only a
 * page of them) to delete at `now` (ms) under `limits`, and the new log
 * start, for a log at `level` within `bounds`. `overhead` is the encoded
 * bytes of a record beyond its key and value. Pages: call again with the
 * next page, the level less what this one deleted, and `bounds.start` =
 * the returned logStart.
 */
export function planDeletion(oldest: readonly SegmentInfo[], level: LogLevel, bounds: LogBounds, limits: Retention, now: number, overhead: number): Deletion {
  let start = countStart(bounds, limits);
  const out: Deletion = { segments: 0, lastFirstSeq: 0, nextSeq: 0, records: 0, encodedBytes: 0, bytes: 0, logStart: start };
  let bytes = level.bytes;
  for (const s of oldest) {
    const payload = s.bytes - s.count * overhead;
    const below = s.lastSeq < start;
    const expired = limits.ms > 0 && s.ts + limits.ms <= now;
    const overBytes = limits.bytes > 0 && bytes - payload >= limits.bytes;
    if (!below && !expired && !overBytes) break;
    bytes -= payload;
    out.records += s.count;
    start = Math.max(start, s.lastSeq + 1);
    out.segments++;
    out.lastFirstSeq = s.firstSeq;
    out.nextSeq = s.lastSeq + 1;
    out.encodedBytes += s.bytes;
    out.bytes += payload;
  }
  out.logStart = start;
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
