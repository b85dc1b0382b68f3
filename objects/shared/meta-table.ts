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

  /**
   * Creates `table` if missing. `table` is a fixed identifier chosen by the
   * object (never user input); `valueType` its SQLite column type (INTEGER,
   * or REAL for values that may exceed 2^53 or be fractional).
   */
  constructor(private readonly sql: SqlStorage, table: string, valueType: "INTEGER" | "REAL" = "INTEGER") {
    sql.exec(`CREATE TABLE IF NOT EXISTS ${table}(k TEXT PRIMARY KEY, v ${valueType} NOT NULL)`);
    this.select = `SELECT v FROM ${table} WHERE k = ?`;
    this.upsert = `INSERT OR REPLACE INTO ${table}(k, v) VALUES (?, ?)`;
    this.upsert2 = `INSERT OR REPLACE INTO ${table}(k, v) VALUES (?, ?), (?, ?)`;
  }

  /** The value of `k`, or `dflt` when unset. */
  get(k: string, dflt = 0): number {
    for (const r of this.sql.exec<{ v: number }>(this.select, k)) return r.v;
    return dflt;
  }

  /** Sets `k` to `v` (inside the caller's transaction, if any). */
  set(k: string, v: number): void {
    this.sql.exec(this.upsert, k, v);
  }

  /** Sets `k1` to `v1` and `k2` to `v2` in one statement (a value kept on every append). */
  set2(k1: string, v1: number, k2: string, v2: number): void {
    this.sql.exec(this.upsert2, k1, v1, k2, v2);
  }
}
