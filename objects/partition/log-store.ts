/**
 * The partition log in SQLite (one Partition object = one log).
 *
 * Tables:
 * - `log(seq PK, pid, pseq, key, value, value_len, ts)`: one row per record.
 *   `pid`/`pseq` are the producer_id/producer_seq as 8-byte big-endian blobs
 *   (u64 does not fit SQLite's signed INTEGER; big-endian blobs sort like the
 *   numbers), NULL for non-idempotent records. The partial index on
 *   (pid, pseq) is the producer dedupe state (see dedupe.ts).
 * - `log_chunk(seq, idx, data)`: a value longer than CHUNK_BYTES keeps its
 *   first CHUNK_BYTES in `log.value` and the rest in chunks of CHUNK_BYTES,
 *   so no row comes near the 2 MB SQLite row limit.
 *
 * Rows are written with multi-row INSERTs (ROWS_PER_INSERT records per
 * statement, under the 100 bound-parameter limit); callers wrap appends in
 * `transactionSync`. Reads page through the log; nothing loads a whole log.
 */

/** Bytes of a value stored per row; larger values continue in `log_chunk`. */
export const CHUNK_BYTES = 1024 * 1024;
/** Records per multi-row INSERT (7 parameters each; SQLite here allows 100). */
const ROWS_PER_INSERT = 14;

const COLS = "(seq, pid, pseq, key, value, value_len, ts)";
const ROW = "(?,?,?,?,?,?,?)";
const INSERT_1 = `INSERT INTO log ${COLS} VALUES ${ROW}`;
const INSERT_N = `INSERT INTO log ${COLS} VALUES ${Array(ROWS_PER_INSERT).fill(ROW).join(",")}`;

/** One record to append. `pid`/`pseq` are 8-byte big-endian, or null for non-idempotent. */
export interface LogRow {
  seq: number;
  pid: Uint8Array | null;
  pseq: Uint8Array | null;
  key: Uint8Array;
  value: Uint8Array;
  ts: number;
}

/** A stored record as read back. */
export interface StoredRecord {
  sequence: number;
  /** producer_id (0 for non-idempotent). */
  producerId: bigint;
  /** producer_seq (0 for non-idempotent). */
  producerSeq: bigint;
  key: Uint8Array;
  value: Uint8Array;
  /** Append time, ms since the epoch. */
  timestamp: number;
}

/** Creates the log tables if missing. */
export function ensureLogSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS log(
    seq INTEGER PRIMARY KEY, pid BLOB, pseq BLOB, key BLOB, value BLOB NOT NULL,
    value_len INTEGER NOT NULL, ts INTEGER NOT NULL)`);
  sql.exec("CREATE INDEX IF NOT EXISTS log_producer ON log(pid, pseq) WHERE pid IS NOT NULL");
  sql.exec(`CREATE TABLE IF NOT EXISTS log_chunk(
    seq INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(seq, idx)) WITHOUT ROWID`);
}

/** u64 as 8 big-endian bytes. */
export function u64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v);
  return b;
}

function bytesU64(v: ArrayBuffer | null): bigint {
  return v ? new DataView(v).getBigUint64(0) : 0n;
}

/** SQL access to one partition log. */
export class LogStore {
  constructor(private readonly sql: SqlStorage) {}

  /** Highest stored sequence, 0 when empty. */
  lastSequence(): number {
    const row = this.sql.exec<{ s: number | null }>("SELECT max(seq) AS s FROM log").one();
    return row.s ?? 0;
  }

  /** Lowest stored sequence, 0 when empty. */
  firstSequence(): number {
    const row = this.sql.exec<{ s: number | null }>("SELECT min(seq) AS s FROM log").one();
    return row.s ?? 0;
  }

  /** Highest producer_seq stored for `pid` (8-byte BE), or undefined. */
  highestProducerSeq(pid: Uint8Array): bigint | undefined {
    for (const r of this.sql.exec<{ pseq: ArrayBuffer }>(
      "SELECT pseq FROM log WHERE pid = ? ORDER BY pseq DESC LIMIT 1", pid)) {
      return bytesU64(r.pseq);
    }
    return undefined;
  }

  /** Sequence of the record with this (pid, pseq) (8-byte BE each), or undefined. */
  sequenceOf(pid: Uint8Array, pseq: Uint8Array): number | undefined {
    for (const r of this.sql.exec<{ seq: number }>("SELECT seq FROM log WHERE pid = ? AND pseq = ?", pid, pseq)) {
      return r.seq;
    }
    return undefined;
  }

  /**
   * Appends rows (sequences must continue the log). Values over CHUNK_BYTES
   * are split into `log_chunk`. Call inside `transactionSync`.
   */
  append(rows: readonly LogRow[]): void {
    const args: unknown[] = new Array(ROWS_PER_INSERT * 7);
    let n = 0;
    const flush = () => {
      if (n === ROWS_PER_INSERT) this.sql.exec(INSERT_N, ...args);
      else for (let i = 0; i < n; i++) this.sql.exec(INSERT_1, ...args.slice(i * 7, i * 7 + 7));
      n = 0;
    };
    for (const r of rows) {
      if (r.value.length > CHUNK_BYTES) {
        this.appendChunked(r);
        continue;
      }
      const o = n * 7;
      args[o] = r.seq;
      args[o + 1] = r.pid;
      args[o + 2] = r.pseq;
      args[o + 3] = r.key.length ? r.key : null;
      args[o + 4] = r.value;
      args[o + 5] = r.value.length;
      args[o + 6] = r.ts;
      if (++n === ROWS_PER_INSERT) flush();
    }
    if (n) flush();
  }

  private appendChunked(r: LogRow): void {
    const v = r.value;
    this.sql.exec(INSERT_1, r.seq, r.pid, r.pseq, r.key.length ? r.key : null, v.subarray(0, CHUNK_BYTES), v.length, r.ts);
    for (let off = CHUNK_BYTES, idx = 1; off < v.length; off += CHUNK_BYTES, idx++) {
      this.sql.exec("INSERT INTO log_chunk(seq, idx, data) VALUES (?,?,?)", r.seq, idx, v.subarray(off, off + CHUNK_BYTES));
    }
  }

  /**
   * Reads records with sequence ≥ `fromSeq`, in order, at most `maxRecords`
   * and stopping before `maxBytes` of values — except that the first record
   * is always returned whole, so one large value can never stall a reader.
   */
  read(fromSeq: number, maxRecords: number, maxBytes: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    let bytes = 0;
    const cursor = this.sql.exec<{
      seq: number; pid: ArrayBuffer | null; pseq: ArrayBuffer | null; key: ArrayBuffer | null;
      value: ArrayBuffer; value_len: number; ts: number;
    }>("SELECT seq, pid, pseq, key, value, value_len, ts FROM log WHERE seq >= ? ORDER BY seq LIMIT ?", fromSeq, maxRecords);
    for (const r of cursor) {
      if (out.length > 0 && bytes + r.value_len > maxBytes) break;
      bytes += r.value_len;
      out.push({
        sequence: r.seq,
        producerId: bytesU64(r.pid),
        producerSeq: bytesU64(r.pseq),
        key: r.key ? new Uint8Array(r.key) : new Uint8Array(0),
        value: r.value_len > r.value.byteLength ? this.assemble(r.seq, r.value, r.value_len) : new Uint8Array(r.value),
        timestamp: r.ts,
      });
    }
    return out;
  }

  private assemble(seq: number, first: ArrayBuffer, len: number): Uint8Array {
    const out = new Uint8Array(len);
    out.set(new Uint8Array(first), 0);
    let off = first.byteLength;
    for (const c of this.sql.exec<{ data: ArrayBuffer }>("SELECT data FROM log_chunk WHERE seq = ? ORDER BY idx", seq)) {
      out.set(new Uint8Array(c.data), off);
      off += c.data.byteLength;
    }
    if (off !== len) throw new Error(`partition log corrupt: record ${seq} has ${off} of ${len} value bytes`);
    return out;
  }

  /** Number of stored records. */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM log").one().n;
  }

  /**
   * Deletes up to `limit` of the oldest records (and their chunks). Returns
   * how many were deleted; used by the purge of a deleted topic.
   */
  deleteOldest(limit: number): number {
    const { n, s: last } = this.sql.exec<{ n: number; s: number | null }>(
      "SELECT count(*) AS n, max(seq) AS s FROM (SELECT seq FROM log ORDER BY seq LIMIT ?)", limit).one();
    if (last === null) return 0;
    this.sql.exec("DELETE FROM log_chunk WHERE seq <= ?", last);
    this.sql.exec("DELETE FROM log WHERE seq <= ?", last);
    return n;
  }
}
