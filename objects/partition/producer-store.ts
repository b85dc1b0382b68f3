/**
 * Idempotent-producer state in SQLite (rules in dedupe.ts):
 * - `producer_window(pid, highest, seen)`: per producer, the highest
 *   producer_seq appended and the window bitmap (which values in
 *   (highest − 1024, highest] were appended); one upsert per producer per batch.
 * - `producer_appends(pid, first_pseq, last_pseq, count, entries)`: the
 *   idempotent appends of one producer in one batch, packed as `count` ×
 *   (producer_seq u64, sequence u64) sorted by producer_seq — ONE row per
 *   producer per batch, so a duplicate can be answered with its ORIGINAL
 *   sequence without a row per record. first/last_pseq are the smallest and
 *   largest producer_seq of the row (rows of gap fills may overlap others).
 *   Rows whose largest producer_seq left the window (≤ highest − 1024) are
 *   pruned each time the producer's highest crosses a multiple of 1024.
 * pid/pseq are 8-byte big-endian blobs (u64 does not fit SQLite's signed
 * INTEGER; big-endian blobs sort like the numbers). Writes happen inside the
 * Partition's append transaction.
 *
 * Objects created before the window bitmap (tables `producers` /
 * `producer_runs`, window = last 1024 appends) are migrated once at start:
 * the bitmap is rebuilt from the stored appends.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";
import { bitmapBytes, type ProducerState } from "./dedupe";
import type { ProducerAppend } from "./plan";

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

/** Creates the producer tables if missing (migrating the pre-bitmap tables once). */
export function ensureProducerSchema(storage: DurableObjectStorage, window = PRODUCER_DEDUPE_WINDOW): void {
  const sql = storage.sql;
  storage.transactionSync(() => {
    sql.exec(`CREATE TABLE IF NOT EXISTS producer_window(
      pid BLOB PRIMARY KEY, highest BLOB NOT NULL, seen BLOB NOT NULL) WITHOUT ROWID`);
    sql.exec(`CREATE TABLE IF NOT EXISTS producer_appends(
      pid BLOB NOT NULL, first_pseq BLOB NOT NULL, last_pseq BLOB NOT NULL,
      count INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY(pid, first_pseq)) WITHOUT ROWID`);
    const old = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'producers'").toArray().length > 0;
    if (!old) return;
    // Old runs were appended with strictly increasing producer_seq: already sorted.
    sql.exec(`INSERT INTO producer_appends(pid, first_pseq, last_pseq, count, entries)
      SELECT pid, first_pseq, last_pseq, count, entries FROM producer_runs`);
    const store = new ProducerStore(sql, window);
    for (const r of sql.exec<{ pid: ArrayBuffer; highest: ArrayBuffer }>("SELECT pid, highest FROM producers").toArray()) {
      const pid = bytesU64(r.pid);
      store.put(pid, store.rebuild(pid, bytesU64(r.highest)));
    }
    sql.exec("DROP TABLE producer_runs; DROP TABLE producers;");
  });
}

export class ProducerStore {
  constructor(private readonly sql: SqlStorage, private readonly window = PRODUCER_DEDUPE_WINDOW) {}

  /** Producers with dedupe state (one row each). */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM producer_window").one().n;
  }

  /** Committed state of `pid`, or undefined. */
  state(pid: bigint): ProducerState | undefined {
    for (const r of this.sql.exec<{ highest: ArrayBuffer; seen: ArrayBuffer }>(
      "SELECT highest, seen FROM producer_window WHERE pid = ?", u64Bytes(pid))) {
      return { highest: bytesU64(r.highest), seen: new Uint8Array(r.seen) };
    }
    return undefined;
  }

  /** Partition sequence of the committed append (pid, pseq), if still stored. */
  stored(pid: bigint, pseq: bigint): number | undefined {
    const pseqBytes = u64Bytes(pseq);
    for (const r of this.sql.exec<{ count: number; entries: ArrayBuffer }>(
      `SELECT count, entries FROM producer_appends
       WHERE pid = ? AND first_pseq <= ? AND last_pseq >= ? ORDER BY first_pseq DESC`,
      u64Bytes(pid), pseqBytes, pseqBytes)) {
      const v = new DataView(r.entries);
      let lo = 0;
      let hi = r.count - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const at = v.getBigUint64(mid * ENTRY_BYTES);
        if (at === pseq) return Number(v.getBigUint64(mid * ENTRY_BYTES + 8));
        if (at < pseq) lo = mid + 1;
        else hi = mid - 1;
      }
    }
    return undefined;
  }

  /**
   * Writes a batch's idempotent appends (one row per producer) and the new
   * producer states, and prunes rows that left the window. `before` gives
   * each producer's highest before the batch (undefined for a new one).
   * Call inside `transactionSync`.
   */
  commit(appends: readonly ProducerAppend[], states: ReadonlyMap<bigint, ProducerState>, before: (pid: bigint) => bigint | undefined): void {
    const byProducer = new Map<bigint, ProducerAppend[]>();
    for (const a of appends) {
      const list = byProducer.get(a.producerId);
      if (list) list.push(a);
      else byProducer.set(a.producerId, [a]);
    }
    for (const [pid, list] of byProducer) {
      // Gap fills can arrive in any order: sort so a lookup can binary-search.
      let sorted = true;
      for (let i = 1; i < list.length && sorted; i++) sorted = list[i - 1]!.producerSeq < list[i]!.producerSeq;
      if (!sorted) list.sort((a, b) => (a.producerSeq < b.producerSeq ? -1 : 1));
      const entries = new Uint8Array(list.length * ENTRY_BYTES);
      const v = new DataView(entries.buffer);
      list.forEach((a, i) => {
        v.setBigUint64(i * ENTRY_BYTES, a.producerSeq);
        v.setBigUint64(i * ENTRY_BYTES + 8, BigInt(a.sequence));
      });
      const last = (list.length - 1) * ENTRY_BYTES;
      this.sql.exec(
        "INSERT INTO producer_appends(pid, first_pseq, last_pseq, count, entries) VALUES (?,?,?,?,?)",
        u64Bytes(pid), entries.subarray(0, 8), entries.subarray(last, last + 8), list.length, entries);
    }
    const w = BigInt(this.window);
    for (const [pid, s] of states) {
      this.put(pid, s);
      const prev = before(pid);
      if (prev !== undefined && s.highest / w > prev / w && s.highest >= w) {
        this.sql.exec("DELETE FROM producer_appends WHERE pid = ? AND last_pseq <= ?", u64Bytes(pid), u64Bytes(s.highest - w));
      }
    }
  }

  /** Forgets every producer's dedupe state (the purge of a deleted topic). */
  clear(): void {
    this.sql.exec("DELETE FROM producer_appends; DELETE FROM producer_window;");
  }

  /** Upserts the state of `pid`. */
  put(pid: bigint, s: ProducerState): void {
    // An upsert updates the row in place (one row written); INSERT OR REPLACE would delete and insert it.
    this.sql.exec("INSERT INTO producer_window(pid, highest, seen) VALUES (?,?,?) ON CONFLICT(pid) DO UPDATE SET highest = excluded.highest, seen = excluded.seen",
      u64Bytes(pid), u64Bytes(s.highest), s.seen);
  }

  /** The window bitmap of `pid` at `highest`, rebuilt from its stored appends (migration). */
  rebuild(pid: bigint, highest: bigint): ProducerState {
    const w = BigInt(this.window);
    const seen = new Uint8Array(bitmapBytes(this.window));
    const floor = highest >= w ? highest - w : -1n; // values > floor are in the window
    for (const r of this.sql.exec<{ count: number; entries: ArrayBuffer }>(
      "SELECT count, entries FROM producer_appends WHERE pid = ? AND last_pseq >= ?", u64Bytes(pid), u64Bytes(floor + 1n))) {
      const v = new DataView(r.entries);
      for (let i = 0; i < r.count; i++) {
        const p = v.getBigUint64(i * ENTRY_BYTES);
        if (p <= floor || p > highest) continue;
        const b = Number(p % w);
        seen[b >>> 3] |= 1 << (b & 7);
      }
    }
    return { highest, seen };
  }
}
