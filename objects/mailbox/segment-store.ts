/**
 * The SQL of a Mailbox's visible messages (docs/mq9.md "Storage"): one
 * row per segment — the messages of one SEND group commit packed in one
 * blob (segment-pack.ts) — so a commit writes one row however many
 * messages it carries (issue #26 (c)–(e)); plus a `keys` row only for a
 * message with a key (key compaction), and one `schedule` row per
 * segment holding messages with a TTL (its earliest live expiry).
 *
 * Tables:
 * - `segments(seg_id INTEGER PRIMARY KEY, last_id, lanes, live, bytes,
 *   counts, first_ms, last_ms, min_exp, body)`: the segment of msg_ids
 *   [seg_id, last_id] (ids of removed messages stay inside the range);
 *   `lanes` a bitmask (1 << lane) of the lanes of its live messages,
 *   `live` their number, `bytes` their stored bytes (MailboxStore.storedBytes'
 *   measure), `counts` "n0,n1,n2,b0,b1,b2" (messages and payload bytes per
 *   lane), `first_ms`/`last_ms` the least/greatest create time, `min_exp`
 *   the earliest expiry (null: none expires). No secondary index: every
 *   lookup is a range of the primary key.
 * - `keys(key TEXT PRIMARY KEY, msg_id) WITHOUT ROWID`: the message holding
 *   each key (at most one, key compaction).
 *
 * A segment is rewritten when some of its messages are deleted, replaced
 * by a newer message with the same key or expire, and removed with its
 * last live message. Callers wrap multi-statement changes in a transaction.
 */
import type { Lane } from "../../wire/mq9";
import { utf8Length } from "../../wire/nats";
import { cutSegments, decodeSegment, encodeSegment, type SegmentEntry } from "./segment-pack";
import { ScheduleKind } from "./schedule";

/** The schema of the segment tables (created with a new mailbox, or on load of a mailbox from before them). */
export const SEGMENT_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS segments (seg_id INTEGER PRIMARY KEY, last_id INTEGER NOT NULL, lanes INTEGER NOT NULL,
     live INTEGER NOT NULL, bytes INTEGER NOT NULL, counts TEXT NOT NULL, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
     min_exp INTEGER, body BLOB NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, msg_id INTEGER NOT NULL) WITHOUT ROWID`,
];
export const SEGMENT_TABLES = ["segments", "keys"];

/** Bytes one entry adds to the mailbox's stored bytes (byte-cap.ts storedSize of the message). */
export function entryStoredBytes(e: SegmentEntry): number {
  let n = e.payload.byteLength;
  if (e.key !== null) n += utf8Length(e.key);
  if (e.tags !== null) n += utf8Length(e.tags);
  if (e.replyTo !== null) n += e.replyTo.length;
  if (e.correlationId !== null) n += e.correlationId.length;
  return n;
}

/** A segment read back: its range, its earliest expiry as stored, and its live messages. */
interface Segment {
  segId: number;
  lastId: number;
  minExp: number | null;
  entries: readonly SegmentEntry[];
}

type Row = Record<string, SqlStorageValue>;

/** Most segments one read of {@link SegmentStore.ascending} takes (≤ 16 MiB of bodies). */
const PAGE_MAX = 16;

/** The segment and key tables of one mailbox. */
export class SegmentStore {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * Stores `entries` (msg_id ascending, above every stored id) as new
   * segments of ≤ SEGMENT_MAX_BYTES: the newest message with a key
   * replaces the older one with that key (stored, or earlier in
   * `entries`: that one is not stored), and segments with a TTL get their
   * schedule row.
   */
  append(entries: readonly SegmentEntry[]): void {
    let kept: readonly SegmentEntry[] = entries;
    let newest: Map<string, number> | null = null;
    for (const e of entries) if (e.key !== null) (newest ??= new Map()).set(e.key, e.msgId);
    if (newest) {
      kept = entries.filter((e) => e.key === null || newest!.get(e.key) === e.msgId);
      const older: number[] = [];
      for (const key of newest.keys()) {
        const r = this.sql.exec("SELECT msg_id FROM keys WHERE key = ?", key).toArray()[0];
        if (r) older.push(r.msg_id as number);
      }
      if (older.length) this.remove(older, false);
      for (const [key, msgId] of newest) {
        this.sql.exec("INSERT INTO keys (key, msg_id) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET msg_id = excluded.msg_id", key, msgId);
      }
    }
    for (const run of cutSegments(kept)) this.adopt(run);
  }

  /** Stores `run` (msg_id ascending, above every stored id, ≤ SEGMENT_MAX_BYTES or one message) as one new segment, as it is (no key compaction). */
  adopt(run: readonly SegmentEntry[]): void {
    this.write({ segId: run[0]!.msgId, lastId: run[run.length - 1]!.msgId, minExp: null, entries: run }, true);
  }

  /**
   * Removes the messages `ids` that are stored (others are ignored),
   * rewriting or deleting their segments; `dropKeys`: also their `keys`
   * rows (false when a newer message takes the key over). Returns the ids
   * removed.
   */
  remove(ids: readonly number[], dropKeys = true): number[] {
    const gone: number[] = [];
    const sorted = [...ids].sort((a, b) => a - b);
    let i = 0;
    while (i < sorted.length) {
      const seg = this.segmentOf(sorted[i]!);
      if (!seg) {
        i++;
        continue;
      }
      const drop = new Set<number>();
      while (i < sorted.length && sorted[i]! <= seg.lastId) drop.add(sorted[i++]!);
      const removed = seg.entries.filter((e) => drop.has(e.msgId));
      if (!removed.length) continue;
      for (const e of removed) {
        gone.push(e.msgId);
        if (dropKeys && e.key !== null) this.sql.exec("DELETE FROM keys WHERE key = ? AND msg_id = ?", e.key, e.msgId);
      }
      this.write({ ...seg, entries: seg.entries.filter((e) => !drop.has(e.msgId)) }, false);
    }
    return gone;
  }

  /**
   * Removes the messages whose TTL ended at `nowMs` from up to `limit`
   * segments whose expiry is due (schedule kind `expire`, ref = seg_id);
   * returns how many segments were handled. Each handled segment's
   * schedule row moves to its next expiry or goes.
   */
  expireDue(nowMs: number, limit: number): number {
    const refs = this.sql.exec("SELECT ref FROM schedule WHERE kind = ? AND due_ms <= ? ORDER BY due_ms LIMIT ?", ScheduleKind.expire, nowMs, limit).toArray();
    for (const r of refs) {
      const segId = r.ref as number;
      const row = this.sql.exec("SELECT seg_id, last_id, min_exp, body FROM segments WHERE seg_id = ?", segId).toArray()[0];
      if (!row) {
        this.setExpiry(segId, null); // an orphan row: drop it so the alarm cannot spin on it
        continue;
      }
      const seg = toSegment(row);
      const expired = seg.entries.filter((e) => e.expiresMs !== null && e.expiresMs <= nowMs);
      for (const e of expired) if (e.key !== null) this.sql.exec("DELETE FROM keys WHERE key = ? AND msg_id = ?", e.key, e.msgId);
      const left = expired.length ? seg.entries.filter((e) => !(e.expiresMs !== null && e.expiresMs <= nowMs)) : seg.entries;
      if (expired.length) this.write({ ...seg, entries: left }, false); // moves the schedule row with the earliest expiry
      else this.setExpiry(segId, minExpiry(left)); // a stale row: move it to the segment's earliest expiry
    }
    return refs.length;
  }

  /** The stored message `msgId` (expired or not), or null. */
  entry(msgId: number): SegmentEntry | null {
    return this.segmentOf(msgId)?.entries.find((e) => e.msgId === msgId) ?? null;
  }

  /** The message holding `key`, or null. */
  keyed(key: string): SegmentEntry | null {
    const r = this.sql.exec("SELECT msg_id FROM keys WHERE key = ?", key).toArray()[0];
    return r ? this.entry(r.msg_id as number) : null;
  }

  /**
   * Stored messages with msg_id ≥ `fromId` in msg_id order, of the lanes
   * in `laneMask` (1 << lane), from segments whose create times reach
   * `sinceMs`; read lazily, in pages of 1, 2, 4 … 16 segments (each page
   * read whole, so no SQL cursor stays open when the caller stops early).
   */
  *ascending(fromId: number, laneMask: number, sinceMs = 0): Generator<SegmentEntry> {
    let from = (this.sql.exec("SELECT MAX(seg_id) AS s FROM segments WHERE seg_id <= ?", fromId).one().s as number | null) ?? fromId;
    for (let page = 1; ; page = Math.min(2 * page, PAGE_MAX)) {
      const rows = this.sql.exec(
        "SELECT seg_id, last_id, min_exp, body FROM segments WHERE seg_id >= ? AND (lanes & ?) <> 0 AND last_ms >= ? ORDER BY seg_id LIMIT ?",
        from, laneMask, sinceMs, page,
      ).toArray();
      for (const row of rows) {
        for (const e of toSegment(row).entries) if (e.msgId >= fromId && (laneMask & (1 << e.lane)) !== 0) yield e;
      }
      if (rows.length < page) return;
      from = (rows[rows.length - 1]!.seg_id as number) + 1;
    }
  }

  /** Stored messages of segments whose create times reach `sinceMs`, newest first; read lazily in pages as {@link ascending}. */
  *descending(sinceMs: number): Generator<SegmentEntry> {
    let below = Number.MAX_SAFE_INTEGER;
    for (let page = 1; ; page = Math.min(2 * page, PAGE_MAX)) {
      const rows = this.sql.exec(
        "SELECT seg_id, last_id, min_exp, body FROM segments WHERE seg_id < ? AND last_ms >= ? ORDER BY seg_id DESC LIMIT ?", below, sinceMs, page,
      ).toArray();
      for (const row of rows) {
        const es = toSegment(row).entries;
        for (let i = es.length - 1; i >= 0; i--) yield es[i]!;
      }
      if (rows.length < page) return;
      below = rows[rows.length - 1]!.seg_id as number;
    }
  }

  /** Stored messages not expired at `nowMs` with msg_id ≥ `floors[lane]` in their lane (a group's backlog); decodes the segments from the lowest floor. */
  countFrom(floors: readonly number[], nowMs: number): number {
    const floor = (lane: number) => floors[lane] ?? 0;
    let n = 0;
    for (const e of this.ascending(Math.min(floor(0), floor(1), floor(2)), 7)) {
      if (e.msgId >= floor(e.lane) && (e.expiresMs === null || e.expiresMs > nowMs)) n++;
    }
    return n;
  }

  /** Highest stored msg_id of `lane`, or -1. */
  laneTop(lane: Lane): number {
    const row = this.sql.exec("SELECT seg_id, last_id, min_exp, body FROM segments WHERE (lanes & ?) <> 0 ORDER BY seg_id DESC LIMIT 1", 1 << lane).toArray()[0];
    if (!row) return -1;
    let top = -1;
    for (const e of toSegment(row).entries) if (e.lane === lane) top = e.msgId;
    return top;
  }

  /** Highest msg_id any segment covers, or -1. */
  lastId(): number {
    return (this.sql.exec("SELECT MAX(last_id) AS t FROM segments").one().t as number | null) ?? -1;
  }

  /** Stored bytes of all segments (entryStoredBytes summed). */
  storedBytes(): number {
    return (this.sql.exec("SELECT sum(bytes) AS b FROM segments").one().b as number | null) ?? 0;
  }

  /** Unexpired messages and payload bytes per lane at `nowMs`: from each segment's counts, decoding only segments with a message expired. */
  laneCounts(nowMs: number, lanes: number): { messages: number; bytes: number }[] {
    const out = Array.from({ length: lanes }, () => ({ messages: 0, bytes: 0 }));
    for (const r of this.sql.exec("SELECT seg_id, last_id, min_exp, counts, CASE WHEN min_exp <= ?1 THEN body END AS body FROM segments", nowMs)) {
      if (r.body === null) {
        const c = (r.counts as string).split(",").map(Number);
        for (let l = 0; l < lanes; l++) {
          out[l]!.messages += c[l] ?? 0;
          out[l]!.bytes += c[lanes + l] ?? 0;
        }
        continue;
      }
      for (const e of toSegment(r).entries) {
        if (e.expiresMs !== null && e.expiresMs <= nowMs) continue;
        out[e.lane]!.messages++;
        out[e.lane]!.bytes += e.payload.byteLength;
      }
    }
    return out;
  }

  /** The segment holding msg_id `msgId` in its range, or null. */
  private segmentOf(msgId: number): Segment | null {
    const row = this.sql.exec("SELECT seg_id, last_id, min_exp, body FROM segments WHERE seg_id <= ? ORDER BY seg_id DESC LIMIT 1", msgId).toArray()[0];
    if (!row || (row.last_id as number) < msgId) return null;
    return toSegment(row);
  }

  /**
   * Writes segment `seg` with its `entries` (a new row when `fresh`, else
   * its row rewritten, or deleted when no entry is left) and moves its
   * schedule row when its earliest expiry changed.
   */
  private write(seg: Segment, fresh: boolean): void {
    const es = seg.entries;
    if (es.length === 0) {
      this.sql.exec("DELETE FROM segments WHERE seg_id = ?", seg.segId);
      if (seg.minExp !== null) this.setExpiry(seg.segId, null);
      return;
    }
    let lanes = 0;
    let bytes = 0;
    let firstMs = Infinity;
    let lastMs = -Infinity;
    const counts = [0, 0, 0, 0, 0, 0];
    for (const e of es) {
      lanes |= 1 << e.lane;
      bytes += entryStoredBytes(e);
      counts[e.lane]!++;
      counts[3 + e.lane]! += e.payload.byteLength;
      if (e.createMs < firstMs) firstMs = e.createMs;
      if (e.createMs > lastMs) lastMs = e.createMs;
    }
    const minExp = minExpiry(es);
    const body = encodeSegment(seg.segId, es);
    const args = [lanes, es.length, bytes, counts.join(","), firstMs, lastMs, minExp, body.buffer as ArrayBuffer];
    if (fresh) {
      this.sql.exec(
        "INSERT INTO segments (seg_id, last_id, lanes, live, bytes, counts, first_ms, last_ms, min_exp, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        seg.segId, seg.lastId, ...args,
      );
    } else {
      this.sql.exec(
        "UPDATE segments SET lanes = ?, live = ?, bytes = ?, counts = ?, first_ms = ?, last_ms = ?, min_exp = ?, body = ? WHERE seg_id = ?",
        ...args, seg.segId,
      );
    }
    if (minExp !== seg.minExp) this.setExpiry(seg.segId, minExp);
  }

  /** Sets (or with null deletes) segment `segId`'s expiry schedule row. */
  private setExpiry(segId: number, dueMs: number | null): void {
    if (dueMs === null) this.sql.exec("DELETE FROM schedule WHERE kind = ? AND ref = ?", ScheduleKind.expire, segId);
    else {
      this.sql.exec(
        "INSERT INTO schedule (kind, ref, due_ms) VALUES (?, ?, ?) ON CONFLICT (kind, ref) DO UPDATE SET due_ms = excluded.due_ms",
        ScheduleKind.expire, segId, dueMs,
      );
    }
  }
}

/** The earliest expiry of `es`, or null when none expires. */
function minExpiry(es: readonly SegmentEntry[]): number | null {
  let min: number | null = null;
  for (const e of es) if (e.expiresMs !== null && (min === null || e.expiresMs < min)) min = e.expiresMs;
  return min;
}

function toSegment(row: Row): Segment {
  const segId = row.seg_id as number;
  return { segId, lastId: row.last_id as number, minExp: row.min_exp as number | null, entries: decodeSegment(segId, row.body as ArrayBuffer) };
}
