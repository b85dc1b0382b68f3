/**
 * Idempotent-producer state in SQLite (rules in dedupe.ts):
 * - `producers(pid, highest, ordinal)`: per producer, the highest
 *   producer_seq appended and its append count; one upsert per producer per batch.
 * - `producer_seqs(pid, pseq, ordinal, seq)`: one row per idempotent append,
 *   so a duplicate can be answered with its ORIGINAL sequence. Rows that
 *   left the window (ordinal ≤ latest − 1024) are pruned per producer each
 *   time its ordinal crosses a multiple of the window size.
 * pid/pseq are 8-byte big-endian blobs (u64 does not fit SQLite's signed
 * INTEGER; big-endian blobs sort like the numbers).
 * Writes happen inside the Partition's append transaction.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";
import type { ProducerState } from "./dedupe";
import type { ProducerAppend, StoredAppend } from "./plan";

/** Rows per multi-row INSERT (4 parameters each; SQLite here allows 100). */
const ROWS_PER_INSERT = 25;
const INSERT_1 = "INSERT INTO producer_seqs(pid, pseq, ordinal, seq) VALUES (?,?,?,?)";
const INSERT_N = `INSERT INTO producer_seqs(pid, pseq, ordinal, seq) VALUES ${Array(ROWS_PER_INSERT).fill("(?,?,?,?)").join(",")}`;

/** u64 as 8 big-endian bytes. */
export function u64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v);
  return b;
}

function bytesU64(v: ArrayBuffer): bigint {
  return new DataView(v).getBigUint64(0);
}

/** Creates the producer tables if missing. */
export function ensureProducerSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS producers(
    pid BLOB PRIMARY KEY, highest BLOB NOT NULL, ordinal INTEGER NOT NULL) WITHOUT ROWID`);
  sql.exec(`CREATE TABLE IF NOT EXISTS producer_seqs(
    pid BLOB NOT NULL, pseq BLOB NOT NULL, ordinal INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(pid, pseq)) WITHOUT ROWID`);
}

export class ProducerStore {
  constructor(private readonly sql: SqlStorage, private readonly window = PRODUCER_DEDUPE_WINDOW) {}

  /** Committed state of `pid`, or undefined. */
  state(pid: bigint): ProducerState | undefined {
    for (const r of this.sql.exec<{ highest: ArrayBuffer; ordinal: number }>(
      "SELECT highest, ordinal FROM producers WHERE pid = ?", u64Bytes(pid))) {
      return { highest: bytesU64(r.highest), ordinal: r.ordinal };
    }
    return undefined;
  }

  /** The committed append (pid, pseq), if still stored. */
  stored(pid: bigint, pseq: bigint): StoredAppend | undefined {
    for (const r of this.sql.exec<{ seq: number; ordinal: number }>(
      "SELECT seq, ordinal FROM producer_seqs WHERE pid = ? AND pseq = ?", u64Bytes(pid), u64Bytes(pseq))) {
      return { sequence: r.seq, ordinal: r.ordinal };
    }
    return undefined;
  }

  /**
   * Writes a batch's idempotent appends and the new producer states, and
   * prunes rows that left the window. `before` gives each producer's state
   * before the batch (to detect window crossings). Call inside `transactionSync`.
   */
  commit(appends: readonly ProducerAppend[], states: ReadonlyMap<bigint, ProducerState>, before: (pid: bigint) => number): void {
    const args: unknown[] = new Array(ROWS_PER_INSERT * 4);
    let n = 0;
    for (const a of appends) {
      const o = n * 4;
      args[o] = u64Bytes(a.producerId);
      args[o + 1] = u64Bytes(a.producerSeq);
      args[o + 2] = a.ordinal;
      args[o + 3] = a.sequence;
      if (++n === ROWS_PER_INSERT) {
        this.sql.exec(INSERT_N, ...args);
        n = 0;
      }
    }
    for (let i = 0; i < n; i++) this.sql.exec(INSERT_1, ...args.slice(i * 4, i * 4 + 4));
    for (const [pid, s] of states) {
      const pidBytes = u64Bytes(pid);
      this.sql.exec("INSERT OR REPLACE INTO producers(pid, highest, ordinal) VALUES (?,?,?)", pidBytes, u64Bytes(s.highest), s.ordinal);
      if (Math.floor(s.ordinal / this.window) > Math.floor(before(pid) / this.window)) {
        this.sql.exec("DELETE FROM producer_seqs WHERE pid = ? AND ordinal <= ?", pidBytes, s.ordinal - this.window);
      }
    }
  }
}
