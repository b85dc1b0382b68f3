/**
 * A numeric key/value table `<name>(k TEXT PRIMARY KEY, v <type> NOT NULL)`
 * in one Durable Object's SQLite storage: counters, epochs and flags of the
 * object (`registry_meta`, `partition_meta`, `group_meta`, `agg_meta`).
 * Each object keeps its own table name (that is its storage layout); this
 * module only holds the SQL they share.
 */
export class MetaTable {
  private readonly select: string;
  private readonly upsert: string;
  private readonly upsert2: string;
  private readonly upserts = new Map<number, string>();

  /**
   * Creates `table` if missing. `table` is a fixed identifier chosen by the
   * object (never user input); `valueType` its SQLite column type (INTEGER,
   * or REAL for values that may exceed 2^53 or be fractional).
   */
  constructor(private readonly sql: SqlStorage, table: string, valueType: "INTEGER" | "REAL" = "INTEGER") {
    sql.exec(`CREATE TABLE IF NOT EXISTS ${table}(k TEXT PRIMARY KEY, v ${valueType} NOT NULL)`);
    this.select = `SELECT v FROM ${table} WHERE k = ?`;
    // An upsert updates the row in place (one row written); INSERT OR REPLACE would delete and insert it.
    this.upsertN = (n) => `INSERT INTO ${table}(k, v) VALUES ${Array.from({ length: n }, () => "(?, ?)").join(", ")} ON CONFLICT(k) DO UPDATE SET v = excluded.v`;
    this.upsert = this.upsertN(1);
    this.upsert2 = this.upsertN(2);
  }

  private readonly upsertN: (n: number) => string;

  /** The value of `k`, or `dflt` when unset. */
  get(k: string, dflt = 0): number {
    for (const r of this.sql.exec<{ v: number }>(this.select, k)) return r.v;
    return dflt;
  }

  /** Sets `k` to `v` (inside the caller's transaction, if any). */
  set(k: string, v: number): void {
    this.sql.exec(this.upsert, k, v);
  }

  /** Sets `k1` to `v1` and `k2` to `v2` in one statement. */
  set2(k1: string, v1: number, k2: string, v2: number): void {
    this.sql.exec(this.upsert2, k1, v1, k2, v2);
  }

  /** Sets every key of `entries` to its value in one statement (one row written per key). */
  setMany(entries: readonly (readonly [string, number])[]): void {
    if (entries.length === 0) return;
    let q = this.upserts.get(entries.length);
    if (q === undefined) this.upserts.set(entries.length, (q = this.upsertN(entries.length)));
    this.sql.exec(q, ...entries.flat());
  }
}
