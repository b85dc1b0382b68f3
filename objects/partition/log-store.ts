/**
 * The partition log in SQLite (one Partition object = one log), stored as
 * segments: each row holds a run of consecutive records, encoded exactly as
 * their PUB frames (spec §2; the wire format is frozen for v0), so a group
 * commit writes ONE row per ≤ SEGMENT_BYTES of records instead of one row
 * per record. Which records share a segment is decided in segments.ts.
 *
 * Tables:
 * - `log(first_seq PK, last_seq, count, bytes, ts, data)`: record i of the
 *   segment has sequence first_seq + i; `bytes` is the segment's encoded
 *   size. `data` holds the first CHUNK_BYTES of the frames; a segment
 *   larger than that (only a single record over 1 MiB) continues in
 *   `log_chunk(first_seq, idx, data)`, so no row nears the 2 MB row limit.
 * - Producer state (dedupe.ts) lives in producer-store.ts.
 * - Totals (`partition_meta`): `log_count` records and `log_bytes` encoded
 *   bytes of the segments up to the one starting at `log_through`, and
 *   `non_idempotent` (PUBs without a producer id ever appended; a batch's
 *   count is also kept in its first segment's `nonidem` column), stored
 *   with every delete and every TOTALS_EVERY appended segment rows (not
 *   per append: one row fewer per commit); the segments after
 *   `log_through` are summed when the object starts (at most
 *   TOTALS_EVERY primary-key rows, no value read). In memory the totals
 *   are always exact, so size checks (retention, /stats) never scan the
 *   log. A log a release wrote without totals is summed once when the
 *   object starts; one whose totals were exact but had no `log_through`
 *   gets it then.
 * - The log start (`partition_meta.log_start`, docs/protocol.md "Topic
 *   retention"): retention by count hides the records below it, which may
 *   begin inside the oldest stored segment; reads never return them, and
 *   their segment is deleted once it lies wholly below the log start.
 *   `count()` and `firstSequence()` are of the visible records; the
 *   totals and `payloadBytes()` of what is stored.
 *
 * Reads page through segments; nothing loads a whole log. Deleting the
 * oldest segments (retention, purge) is a range delete on the primary key
 * driven by the segment rows' metadata: no value is read.
 */
import { Op } from "../../wire/mortar/constants";
import { frameSize } from "../../wire/mortar/codec";
import { FrameDecoder } from "../../wire/mortar/stream";
import type { PubFrame } from "../../wire/mortar/frames";
import type { MetaTable } from "../shared/meta-table";
import type { StoredRecord } from "./rpc";
import { segmentBytes, type Segment } from "./segments";
import type { SegmentInfo } from "./retention";

/** Encoded bytes of a stored record beyond its key and value (records are whole PUB frames): 33. */
export const PUB_OVERHEAD = frameSize({
  op: Op.PUB, topicId: 0, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new Uint8Array(0),
});

/**
 * Max bytes of a row's blob; larger segments continue in `log_chunk`. Not
 * below SEGMENT_BYTES, so a segment of several records fits one row.
 */
export const CHUNK_BYTES = 1024 * 1024;

/** Creates the log tables if missing. */
export function ensureLogSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS log(
    first_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, count INTEGER NOT NULL,
    bytes INTEGER NOT NULL, ts INTEGER NOT NULL, data BLOB NOT NULL, nonidem INTEGER NOT NULL DEFAULT 0)`);
  // Logs a release wrote before the totals were checkpointed have no nonidem column (their non_idempotent was stored per append).
  if (sql.exec("SELECT 1 FROM pragma_table_info('log') WHERE name = 'nonidem'").toArray().length === 0) {
    sql.exec("ALTER TABLE log ADD COLUMN nonidem INTEGER NOT NULL DEFAULT 0");
  }
  sql.exec(`CREATE TABLE IF NOT EXISTS log_chunk(
    first_seq INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(first_seq, idx)) WITHOUT ROWID`);
}

interface SegmentMeta extends Record<string, SqlStorageValue> {
  first_seq: number;
  last_seq: number;
  count: number;
  bytes: number;
  ts: number;
}


/** Decoded segments kept in memory (each ≤ CHUNK_BYTES). */
const SEGMENT_CACHE = 8;

/** Segment rows appended between two stores of the log totals. */
export const TOTALS_EVERY = 256;

/** SQL access to one partition log. */
export class LogStore {
  private readonly cache = new Map<number, PubFrame[]>();
  /** Stored records and their encoded bytes (mirrors `log_count` / `log_bytes`). */
  private records = 0;
  private encoded = 0;
  /** Lowest stored sequence, 0 when empty. */
  private first = 0;
  /** The log start set by retention (`log_start`): no record below it is visible; 0 = none set. */
  private start = 0;
  /** Highest stored first_seq (the newest segment), 0 when empty. */
  private newest = 0;
  /** Segment rows appended since the totals were last stored. */
  private unsaved = 0;
  /** PUBs without a producer id ever appended (never decreases; `non_idempotent`). */
  private nonIdem = 0;

  /**
   * `meta`: the partition's `partition_meta`, where the totals are kept. A
   * log written without them (no `log_count`, rows in `log`) is summed once;
   * an empty new log writes nothing.
   */
  constructor(private readonly sql: SqlStorage, private readonly meta: MetaTable) {
    if (meta.get("log_count", -1) === -1) {
      const r = sql.exec<{ n: number | null; b: number | null; s: number | null; x: number | null }>(
        "SELECT sum(count) AS n, sum(bytes) AS b, max(first_seq) AS s, sum(nonidem) AS x FROM log").one();
      if ((r.n ?? 0) > 0) {
        meta.setMany([["log_count", r.n!], ["log_bytes", r.b ?? 0], ["log_through", r.s ?? 0], ["non_idempotent", meta.get("non_idempotent") + (r.x ?? 0)]]);
      }
    } else if (meta.get("log_through", -1) === -1) {
      const newest = sql.exec<{ s: number | null }>("SELECT max(first_seq) AS s FROM log").one().s ?? 0;
      if (newest > 0) meta.set("log_through", newest); // totals a release kept with every append: exact through the newest segment
    }
    this.reloadTotals();
  }

  /** Reads the totals back from storage (after a failed transaction rolled back what memory had counted). */
  reloadTotals(): void {
    const after = this.sql.exec<{ rows: number; n: number | null; b: number | null; x: number | null }>(
      "SELECT count(*) AS rows, sum(count) AS n, sum(bytes) AS b, sum(nonidem) AS x FROM log WHERE first_seq > ?", this.meta.get("log_through")).one();
    this.records = this.meta.get("log_count") + (after.n ?? 0);
    this.encoded = this.meta.get("log_bytes") + (after.b ?? 0);
    this.nonIdem = this.meta.get("non_idempotent") + (after.x ?? 0);
    this.unsaved = after.rows;
    const ends = this.sql.exec<{ lo: number | null; hi: number | null }>("SELECT min(first_seq) AS lo, max(first_seq) AS hi FROM log").one();
    this.first = ends.lo ?? 0;
    this.newest = ends.hi ?? 0;
    this.start = this.meta.get("log_start");
  }

  /** Highest stored sequence, 0 when empty. */
  lastSequence(): number {
    return this.sql.exec<{ s: number | null }>("SELECT max(last_seq) AS s FROM log").one().s ?? 0;
  }

  /** Lowest visible sequence (the log start: the lowest stored one, or the retention's log start above it), 0 when nothing is visible. */
  firstSequence(): number {
    return this.records === 0 ? 0 : Math.max(this.first, this.start);
  }

  /** PUBs without a producer id ever appended to this log (the partition's non-idempotent publish counter). */
  nonIdempotent(): number {
    return this.nonIdem;
  }

  /** Stored records and their encoded bytes (whole PUB frames; records hidden below the log start included). */
  totals(): { count: number; bytes: number } {
    return { count: this.records, bytes: this.encoded };
  }

  /** Number of visible records (stored at or above the log start; the stored sequences have no gaps). */
  count(): number {
    return this.records === 0 ? 0 : this.records - (this.firstSequence() - this.first);
  }

  /**
   * Moves the log start up to `seq` (never down): records below it are no
   * longer visible (read, scan, count, firstSequence); their storage goes
   * with their segment (deleteThrough). Call inside `transactionSync`; if
   * that transaction fails, call reloadTotals().
   */
  hideBelow(seq: number): void {
    if (seq <= this.start) return;
    this.meta.set("log_start", seq);
    this.start = seq;
  }

  /** Keys + values of the stored records, bytes (encoded bytes minus PUB_OVERHEAD per record; records hidden below the log start in a segment not yet deleted included). */
  payloadBytes(): number {
    return this.encoded - this.records * PUB_OVERHEAD;
  }

  /**
   * The first stored sequence whose record was appended at or after `ts`
   * (unix ms), or lastSequence() + 1 when none was (a group reset "to a
   * time", docs/groups.md). Records carry their segment's append time, so
   * this is a binary search over segment rows by sequence — O(log records)
   * primary-key lookups of (first_seq, last_seq, ts), no value is read or
   * decoded. Assumes append times do not decrease along the log (one
   * object's clock).
   */
  firstSequenceAtOrAfter(ts: number): number {
    let lo = this.firstSequence();
    let hi = this.lastSequence() + 1;
    if (lo === 0) return hi;
    const at = (q: string, v: number) => this.sql.exec<SegmentMeta>(q, v).toArray()[0];
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      let seg = at("SELECT first_seq, last_seq, count, bytes, ts FROM log WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1", mid);
      if (!seg || seg.last_seq < mid) seg = at("SELECT first_seq, last_seq, count, bytes, ts FROM log WHERE first_seq > ? ORDER BY first_seq LIMIT 1", mid);
      if (!seg) {
        hi = mid; // nothing stored at or after mid
        continue;
      }
      if (seg.ts >= ts) hi = Math.min(hi, seg.first_seq);
      else lo = seg.last_seq + 1;
    }
    return lo;
  }

  /**
   * Stores the records of `batch` as laid out in `segments` (segments.ts):
   * one row (plus chunks) per segment, and the new totals; `nonIdempotent`
   * of the records are PUBs without a producer id (counted). Call inside
   * `transactionSync`; if that transaction fails, call reloadTotals().
   */
  appendSegments(batch: Uint8Array, segments: readonly Segment[], ts: number, nonIdempotent = 0): void {
    let n = 0, b = 0;
    for (const s of segments) {
      const frames = segmentBytes(batch, s);
      this.insertSegment(s.firstSeq, s.count, frames, ts, n === 0 ? nonIdempotent : 0);
      n += s.count;
      b += frames.length;
    }
    if (segments.length > 0) this.counted(n, b, segments[0]!.firstSeq, segments[segments.length - 1]!.firstSeq, segments.length, nonIdempotent);
  }

  /**
   * Stores one segment: `frames` = `count` whole PUB frames back to back,
   * the first with sequence `firstSeq`. Call inside `transactionSync`.
   */
  appendSegment(firstSeq: number, count: number, frames: Uint8Array, ts: number): void {
    this.insertSegment(firstSeq, count, frames, ts, 0);
    this.counted(count, frames.length, firstSeq, firstSeq, 1, 0);
  }

  /**
   * Adds `n` records of `b` encoded bytes in `rows` new segments, the
   * first with sequence `firstSeq`, the newest starting at `newest`, `x`
   * of them without a producer id, to the totals; stores them once
   * TOTALS_EVERY rows went unstored.
   */
  private counted(n: number, b: number, firstSeq: number, newest: number, rows: number, x: number): void {
    if (this.unsaved + rows >= TOTALS_EVERY) this.storeTotals(this.records + n, this.encoded + b, newest, this.nonIdem + x);
    else this.unsaved += rows;
    this.records += n;
    this.encoded += b;
    this.nonIdem += x;
    this.newest = newest;
    if (this.first === 0) this.first = firstSeq;
  }

  /** Writes the totals and the newest segment they count, in one statement. */
  private storeTotals(records: number, encoded: number, through: number, nonIdem: number): void {
    this.meta.setMany([["log_count", records], ["log_bytes", encoded], ["log_through", through], ["non_idempotent", nonIdem]]);
    this.unsaved = 0;
  }

  private insertSegment(firstSeq: number, count: number, frames: Uint8Array, ts: number, nonIdem: number): void {
    this.sql.exec("INSERT INTO log(first_seq, last_seq, count, bytes, ts, data, nonidem) VALUES (?,?,?,?,?,?,?)",
      firstSeq, firstSeq + count - 1, count, frames.length, ts, frames.subarray(0, CHUNK_BYTES), nonIdem);
    for (let off = CHUNK_BYTES, idx = 1; off < frames.length; off += CHUNK_BYTES, idx++) {
      this.sql.exec("INSERT INTO log_chunk(first_seq, idx, data) VALUES (?,?,?)", firstSeq, idx, frames.subarray(off, off + CHUNK_BYTES));
    }
  }

  /**
   * Reads visible records with sequence ≥ `fromSeq`, in order: at most `maxRecords`,
   * stopping before `maxBytes` of values — except that the first record is
   * always returned whole, so one large value can never stall a reader.
   * Key and value are copies (safe to send over RPC).
   */
  read(fromSeq: number, maxRecords: number, maxBytes: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    let bytes = 0;
    this.scan(fromSeq, (sequence, f, ts) => {
      if (out.length >= maxRecords || (out.length > 0 && bytes + f.value.length > maxBytes)) return false;
      bytes += f.value.length;
      out.push({ sequence, producerId: f.producerId, producerSeq: f.producerSeq, key: f.key.slice(), value: f.value.slice(), timestamp: ts });
      return true;
    });
    return out;
  }

  /**
   * Visits the visible records with sequence ≥ `fromSeq` in order until
   * `visit` returns false or the log ends. The frame's key/value are views
   * into a (possibly cached) segment: copy them to keep them. Recently read
   * segments (≤ CHUNK_BYTES) stay decoded in a small cache, so a tailing
   * reader decodes each segment once.
   */
  scan(fromSeq: number, visit: (sequence: number, f: PubFrame, ts: number) => boolean): void {
    fromSeq = Math.max(fromSeq, this.start); // nothing below the log start is ever visible
    let next = this.sql.exec<{ s: number | null }>("SELECT max(first_seq) AS s FROM log WHERE first_seq <= ?", fromSeq).one().s ?? fromSeq;
    for (;;) {
      const seg = this.sql.exec<SegmentMeta>(
        "SELECT first_seq, last_seq, count, bytes, ts FROM log WHERE first_seq >= ? ORDER BY first_seq LIMIT 1", next).toArray()[0];
      if (!seg) return;
      next = seg.last_seq + 1;
      if (seg.last_seq < fromSeq) continue;
      const frames = this.frames(seg);
      for (let i = Math.max(0, fromSeq - seg.first_seq); i < frames.length; i++) {
        if (!visit(seg.first_seq + i, frames[i]!, seg.ts)) return;
      }
    }
  }

  /** A segment's frames, from the cache or decoded (assembling chunks). */
  private frames(seg: SegmentMeta): PubFrame[] {
    const hit = this.cache.get(seg.first_seq);
    if (hit) {
      this.cache.delete(seg.first_seq);
      this.cache.set(seg.first_seq, hit);
      return hit;
    }
    const head = this.sql.exec<{ data: ArrayBuffer }>("SELECT data FROM log WHERE first_seq = ?", seg.first_seq).one().data;
    let data = new Uint8Array(head);
    if (seg.bytes > data.length) {
      const all = new Uint8Array(seg.bytes);
      all.set(data, 0);
      let off = data.length;
      for (const c of this.sql.exec<{ data: ArrayBuffer }>("SELECT data FROM log_chunk WHERE first_seq = ? ORDER BY idx", seg.first_seq)) {
        all.set(new Uint8Array(c.data), off);
        off += c.data.byteLength;
      }
      if (off !== seg.bytes) throw new Error(`partition log corrupt: segment ${seg.first_seq} has ${off} of ${seg.bytes} bytes`);
      data = all;
    }
    const { frames, error } = new FrameDecoder().push(data);
    if (error || frames.length !== seg.count) {
      throw new Error(`partition log corrupt: segment ${seg.first_seq} decodes to ${frames.length}/${seg.count} records${error ? `: ${error.message}` : ""}`);
    }
    if (seg.bytes <= CHUNK_BYTES) {
      this.cache.set(seg.first_seq, frames as PubFrame[]);
      if (this.cache.size > SEGMENT_CACHE) this.cache.delete(this.cache.keys().next().value as number);
    }
    return frames as PubFrame[];
  }

  /**
   * The metadata of up to `limit` of the oldest segments after the one
   * starting at `after` (0: from the oldest), oldest first: a primary-key
   * range read of the rows' leading columns; no value is read.
   */
  oldest(limit: number, after = 0): SegmentInfo[] {
    return this.sql.exec<SegmentMeta>("SELECT first_seq, last_seq, count, bytes, ts FROM log WHERE first_seq > ? ORDER BY first_seq LIMIT ?", after, limit)
      .toArray().map((r) => ({ firstSeq: r.first_seq, lastSeq: r.last_seq, count: r.count, bytes: r.bytes, ts: r.ts }));
  }

  /**
   * Deletes the oldest segments up to and including the one starting at
   * `lastFirstSeq` — they hold `records` records of `bytes` encoded bytes
   * (from oldest()) — with their chunks, and updates the totals; `nextSeq`
   * is the first sequence kept (the next segment's, as the log has no
   * gaps); `chunked` false when none of them is larger than CHUNK_BYTES
   * (so none has chunk rows). Range deletes on primary keys. Call inside
   * `transactionSync`; if that transaction fails, call reloadTotals().
   */
  deleteThrough(lastFirstSeq: number, records: number, bytes: number, nextSeq: number, chunked = true): void {
    if (chunked) this.sql.exec("DELETE FROM log_chunk WHERE first_seq <= ?", lastFirstSeq);
    this.sql.exec("DELETE FROM log WHERE first_seq <= ?", lastFirstSeq);
    this.storeTotals(this.records - records, this.encoded - bytes, this.newest, this.nonIdem);
    this.records -= records;
    this.encoded -= bytes;
    if (this.cache.size > 0) for (const k of [...this.cache.keys()]) if (k <= lastFirstSeq) this.cache.delete(k);
    this.first = this.records === 0 ? 0 : nextSeq;
    if (this.records === 0) this.newest = 0;
  }

  /**
   * Deletes up to `limit` of the oldest segments (and their chunks). Returns
   * how many segments were deleted; used by the purge of a deleted topic.
   */
  deleteOldest(limit: number): number {
    const segs = this.oldest(limit);
    if (segs.length === 0) return 0;
    let n = 0, b = 0;
    for (const s of segs) {
      n += s.count;
      b += s.bytes;
    }
    const last = segs[segs.length - 1]!;
    this.deleteThrough(last.firstSeq, n, b, last.lastSeq + 1);
    return segs.length;
  }
}
