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
 *
 * Reads page through segments; nothing loads a whole log.
 */
import { FrameDecoder } from "../../wire/mortar/stream";
import type { PubFrame } from "../../wire/mortar/frames";
import type { StoredRecord } from "./rpc";
import { segmentBytes, type Segment } from "./segments";

/**
 * Max bytes of a row's blob; larger segments continue in `log_chunk`. Not
 * below SEGMENT_BYTES, so a segment of several records fits one row.
 */
export const CHUNK_BYTES = 1024 * 1024;

/** Creates the log tables if missing. */
export function ensureLogSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS log(
    first_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, count INTEGER NOT NULL,
    bytes INTEGER NOT NULL, ts INTEGER NOT NULL, data BLOB NOT NULL)`);
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

/** SQL access to one partition log. */
export class LogStore {
  private readonly cache = new Map<number, PubFrame[]>();

  constructor(private readonly sql: SqlStorage) {}

  /** Highest stored sequence, 0 when empty. */
  lastSequence(): number {
    return this.sql.exec<{ s: number | null }>("SELECT max(last_seq) AS s FROM log").one().s ?? 0;
  }

  /** Lowest stored sequence, 0 when empty. */
  firstSequence(): number {
    return this.sql.exec<{ s: number | null }>("SELECT min(first_seq) AS s FROM log").one().s ?? 0;
  }

  /** Stored records and their encoded bytes (whole PUB frames). */
  totals(): { count: number; bytes: number } {
    const r = this.sql.exec<{ n: number | null; b: number | null }>("SELECT sum(count) AS n, sum(bytes) AS b FROM log").one();
    return { count: r.n ?? 0, bytes: r.b ?? 0 };
  }

  /** Number of stored records. */
  count(): number {
    return this.sql.exec<{ n: number | null }>("SELECT sum(count) AS n FROM log").one().n ?? 0;
  }

  /**
   * Stores the records of `batch` as laid out in `segments` (segments.ts):
   * one row (plus chunks) per segment. Call inside `transactionSync`.
   */
  appendSegments(batch: Uint8Array, segments: readonly Segment[], ts: number): void {
    for (const s of segments) this.appendSegment(s.firstSeq, s.count, segmentBytes(batch, s), ts);
  }

  /**
   * Stores one segment: `frames` = `count` whole PUB frames back to back,
   * the first with sequence `firstSeq`. Call inside `transactionSync`.
   */
  appendSegment(firstSeq: number, count: number, frames: Uint8Array, ts: number): void {
    this.sql.exec("INSERT INTO log(first_seq, last_seq, count, bytes, ts, data) VALUES (?,?,?,?,?,?)",
      firstSeq, firstSeq + count - 1, count, frames.length, ts, frames.subarray(0, CHUNK_BYTES));
    for (let off = CHUNK_BYTES, idx = 1; off < frames.length; off += CHUNK_BYTES, idx++) {
      this.sql.exec("INSERT INTO log_chunk(first_seq, idx, data) VALUES (?,?,?)", firstSeq, idx, frames.subarray(off, off + CHUNK_BYTES));
    }
  }

  /**
   * Reads records with sequence ≥ `fromSeq`, in order: at most `maxRecords`,
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
   * Visits the stored records with sequence ≥ `fromSeq` in order until
   * `visit` returns false or the log ends. The frame's key/value are views
   * into a (possibly cached) segment: copy them to keep them. Recently read
   * segments (≤ CHUNK_BYTES) stay decoded in a small cache, so a tailing
   * reader decodes each segment once.
   */
  scan(fromSeq: number, visit: (sequence: number, f: PubFrame, ts: number) => boolean): void {
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
   * Deletes up to `limit` of the oldest segments (and their chunks). Returns
   * how many segments were deleted; used by the purge of a deleted topic.
   */
  deleteOldest(limit: number): number {
    const { n, s: last } = this.sql.exec<{ n: number; s: number | null }>(
      "SELECT count(*) AS n, max(first_seq) AS s FROM (SELECT first_seq FROM log ORDER BY first_seq LIMIT ?)", limit).one();
    if (last === null) return 0;
    this.cache.clear();
    this.sql.exec("DELETE FROM log_chunk WHERE first_seq <= ?", last);
    this.sql.exec("DELETE FROM log WHERE first_seq <= ?", last);
    return n;
  }
}
