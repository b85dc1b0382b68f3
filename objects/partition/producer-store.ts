/**
 * Idempotent-producer state in SQLite (rules in dedupe.ts):
 * - `producers(pid, highest, ordinal)`: per producer, the highest
 *   producer_seq appended and its append count; one upsert per producer per batch.
 * - `producer_runs(pid, first_pseq, last_pseq, first_ordinal, count, entries)`:
 *   the idempotent appends of one producer in one batch, packed as
 *   `count` × (producer_seq u64, sequence u64) in append order — ONE row per
 *   producer per batch, so a duplicate can be answered with its ORIGINAL
 *   sequence without a row per record. Entry i has ordinal first_ordinal + i.
 *   Runs that left the window (last ordinal ≤ latest − 1024) are pruned each
 *   time the producer's ordinal crosses a multiple of the window size.
 * pid/pseq are 8-byte big-endian blobs (u64 does not fit SQLite's signed
 * INTEGER; big-endian blobs sort like the numbers). Writes happen inside the
 * Partition's append transaction.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";
import type { ProducerState } from "./dedupe";
import type { ProducerAppend, StoredAppend } from "./plan";

const ENTRY_BYTES = 16;

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
  sql.exec(`CREATE TABLE IF NOT EXISTS producer_runs(
    pid BLOB NOT NULL, first_pseq BLOB NOT NULL, last_pseq BLOB NOT NULL, first_ordinal INTEGER NOT NULL,
    count INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY(pid, first_pseq)) WITHOUT ROWID`);
}

export class ProducerStore {
  constructor(private readonly sql: SqlStorage, private readonly window = PRODUCER_DEDUPE_WINDOW) {}

  /** Producers with dedupe state (one row each). */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM producers").one().n;
  }

  /** Committed state of `pid`, or undefined. */
  state(pid: bigint): ProducerState | undefined {
    for (const r of this.sql.exec<{ highest: ArrayBuffer; ordinal: number }>(
      "SELECT highest, ordinal FROM producers WHERE pid = ?", u64Bytes(pid))) {
      return { highest: bytesU64(r.highest), ordinal: r.ordinal };
    }
    return undefined;
  }

  /** The committed append (pid, pseq), if its run is still stored. */
  stored(pid: bigint, pseq: bigint): StoredAppend | undefined {
    const pseqBytes = u64Bytes(pseq);
    for (const r of this.sql.exec<{ first_ordinal: number; count: number; entries: ArrayBuffer }>(
      `SELECT first_ordinal, count, entries FROM producer_runs
       WHERE pid = ? AND first_pseq <= ? AND last_pseq >= ? ORDER BY first_pseq DESC LIMIT 1`,
      u64Bytes(pid), pseqBytes, pseqBytes)) {
      const v = new DataView(r.entries);
      let lo = 0;
      let hi = r.count - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const at = v.getBigUint64(mid * ENTRY_BYTES);
        if (at === pseq) return { sequence: Number(v.getBigUint64(mid * ENTRY_BYTES + 8)), ordinal: r.first_ordinal + mid };
        if (at < pseq) lo = mid + 1;
        else hi = mid - 1;
      }
    }
    return undefined;
  }

  /**
   * Writes a batch's idempotent appends (one run row per producer) and the
   * new producer states, and prunes runs that left the window. `before`
   * gives each producer's ordinal before the batch. Call inside `transactionSync`.
   */
  commit(appends: readonly ProducerAppend[], states: ReadonlyMap<bigint, ProducerState>, before: (pid: bigint) => number): void {
    const byProducer = new Map<bigint, ProducerAppend[]>();
    for (const a of appends) {
      const list = byProducer.get(a.producerId);
      if (list) list.push(a);
      else byProducer.set(a.producerId, [a]);
    }
    for (const [pid, list] of byProducer) {
      const entries = new Uint8Array(list.length * ENTRY_BYTES);
      const v = new DataView(entries.buffer);
      list.forEach((a, i) => {
        v.setBigUint64(i * ENTRY_BYTES, a.producerSeq);
        v.setBigUint64(i * ENTRY_BYTES + 8, BigInt(a.sequence));
      });
      this.sql.exec(
        "INSERT INTO producer_runs(pid, first_pseq, last_pseq, first_ordinal, count, entries) VALUES (?,?,?,?,?,?)",
        u64Bytes(pid), entries.subarray(0, 8), entries.subarray((list.length - 1) * ENTRY_BYTES, (list.length - 1) * ENTRY_BYTES + 8),
        list[0].ordinal, list.length, entries);
    }
    for (const [pid, s] of states) {
      const pidBytes = u64Bytes(pid);
      this.sql.exec("INSERT OR REPLACE INTO producers(pid, highest, ordinal) VALUES (?,?,?)", pidBytes, u64Bytes(s.highest), s.ordinal);
      if (Math.floor(s.ordinal / this.window) > Math.floor(before(pid) / this.window)) {
        this.sql.exec("DELETE FROM producer_runs WHERE pid = ? AND first_ordinal + count - 1 <= ?", pidBytes, s.ordinal - this.window);
      }
    }
  }
}
