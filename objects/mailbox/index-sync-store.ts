/**
 * The SQL of a Mailbox's pending index update (index-sync.ts): table
 * `index_sync`, created only when an update is owed and at most one row
 * (`k = 0`):
 *
 *   index_sync(k INTEGER PRIMARY KEY CHECK (k = 0), op TEXT ('add' | 'remove'),
 *              address TEXT, created_ms INTEGER, expires_ms INTEGER NULL)
 */

/** An update the tenant's MailboxIndex is owed. */
export interface PendingIndexUpdate {
  op: "add" | "remove";
  address: string;
  createdMs: number;
  expiresMs: number | null;
}

/** The `index_sync` table of one Mailbox. */
export class IndexSyncStore {
  constructor(private readonly sql: SqlStorage) {}

  /** Whether the table exists (it is created by the first `put`). */
  exists(): boolean {
    return this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'index_sync'").toArray().length > 0;
  }

  /** The stored update, or null (call only when the table exists). */
  load(): PendingIndexUpdate | null {
    const r = this.sql.exec<{ op: string; address: string; created_ms: number; expires_ms: number | null }>(
      "SELECT op, address, created_ms, expires_ms FROM index_sync WHERE k = 0").toArray()[0];
    return r ? { op: r.op === "remove" ? "remove" : "add", address: r.address, createdMs: r.created_ms, expiresMs: r.expires_ms } : null;
  }

  /** Stores `p` (replacing the row), creating the table when `create`. */
  put(p: PendingIndexUpdate, create: boolean): void {
    if (create) {
      this.sql.exec(`CREATE TABLE IF NOT EXISTS index_sync(k INTEGER PRIMARY KEY CHECK (k = 0), op TEXT NOT NULL,
        address TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER)`);
    }
    this.sql.exec("INSERT OR REPLACE INTO index_sync(k, op, address, created_ms, expires_ms) VALUES (0, ?, ?, ?, ?)",
      p.op, p.address, p.createdMs, p.expiresMs);
  }

  /** Deletes the row (the table stays). */
  clear(): void {
    this.sql.exec("DELETE FROM index_sync WHERE k = 0");
  }

  /** Drops the table: an expired mailbox leaves no row behind. */
  drop(): void {
    this.sql.exec("DROP TABLE index_sync");
  }
}
