/**
 * SQLite layout of a tenant's MailboxIndex (MailboxIndex.ts): one row per
 * mailbox the tenant has, keyed by address, so the list pages in address
 * order with a keyset cursor (never an OFFSET scan).
 *
 *   mailboxes(address TEXT PRIMARY KEY, created_ms, expires_ms, materialized)
 *   index mailboxes_expiry(expires_ms) — the index's one alarm expires rows
 *   index_state(k, v) — 'sealed' while the tenant's purge runs (MailboxIndex.seal)
 *
 * A row is the mailbox (docs/mq9.md "Mailbox index"): a CREATE writes only
 * the row (`materialized` 0); the Mailbox object takes it over on its first
 * request (`claim` sets `materialized` 1). Rows written before this column
 * existed came from Mailbox objects: they read as materialized.
 *
 * Every update carries the mailbox's creation time: an add replaces a row
 * only with a creation time at least as new, a remove deletes a row only
 * up to its creation time — so a late or repeated update never undoes a
 * newer one (CREATE → TTL expiry → CREATE again of the same address).
 */

export type { IndexedMailbox, IndexRow, MailboxPage } from "./rpc";
import type { IndexedMailbox, IndexRow, MailboxPage } from "./rpc";

/** Largest page. */
export const MAX_PAGE = 1000;

type Row = { address: string; created_ms: number; expires_ms: number | null; materialized: number };

export class MailboxIndexStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS mailboxes(address TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, expires_ms INTEGER, materialized INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID");
    if (!sql.exec("SELECT * FROM mailboxes LIMIT 0").columnNames.includes("materialized")) {
      // an index from before index-only CREATEs: every row was written by its Mailbox object
      sql.exec("ALTER TABLE mailboxes ADD COLUMN materialized INTEGER NOT NULL DEFAULT 1");
    }
    sql.exec("CREATE INDEX IF NOT EXISTS mailboxes_expiry ON mailboxes(expires_ms) WHERE expires_ms IS NOT NULL");
  }

  /** Whether the index was sealed (its tenant's purge has begun; seal). */
  sealed(): boolean {
    if (this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'index_state'").toArray().length === 0) return false;
    return this.sql.exec("SELECT 1 FROM index_state WHERE k = 'sealed'").toArray().length > 0;
  }

  /** Seals the index (table `index_state`, one row; gone with the purge's deleteAll). */
  seal(): void {
    this.sql.exec("CREATE TABLE IF NOT EXISTS index_state(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID");
    this.sql.exec("INSERT OR REPLACE INTO index_state(k, v) VALUES ('sealed', 1)");
  }

  /** Records a mailbox its Mailbox object created (idempotent; an older creation time never replaces a newer one). */
  add(m: IndexedMailbox): void {
    this.sql.exec(`INSERT INTO mailboxes(address, created_ms, expires_ms, materialized) VALUES (?, ?, ?, 1)
      ON CONFLICT(address) DO UPDATE SET created_ms = excluded.created_ms, expires_ms = excluded.expires_ms, materialized = 1
      WHERE excluded.created_ms >= mailboxes.created_ms`, m.address, m.created_ms, m.expires_ms);
  }

  /** A CREATE's row, not materialized (replaces an expired row of the same address: the caller checked). */
  insert(m: IndexedMailbox): void {
    this.sql.exec("INSERT OR REPLACE INTO mailboxes(address, created_ms, expires_ms, materialized) VALUES (?, ?, ?, 0)",
      m.address, m.created_ms, m.expires_ms);
  }

  /** Marks the row of `address` materialized. */
  markMaterialized(address: string): void {
    this.sql.exec("UPDATE mailboxes SET materialized = 1 WHERE address = ?", address);
  }

  /** Forgets the mailbox created at `createdMs` (or earlier) at `address`; a newer one stays. Returns the row deleted, or null. */
  remove(address: string, createdMs: number): IndexRow | null {
    const r = this.get(address);
    if (!r || r.created_ms > createdMs) return null;
    this.sql.exec("DELETE FROM mailboxes WHERE address = ?", address);
    return r;
  }

  /** The row of `address`, or null. */
  get(address: string): IndexRow | null {
    const r = this.sql.exec<Row>("SELECT address, created_ms, expires_ms, materialized FROM mailboxes WHERE address = ?", address).toArray()[0];
    return r ? toRow(r) : null;
  }

  /** Whether `address` is listed. */
  has(address: string): boolean {
    return this.sql.exec("SELECT 1 FROM mailboxes WHERE address = ?", address).toArray().length > 0;
  }

  /**
   * Deletes up to `limit` rows whose TTL ended at or before `now` (ms) and
   * returns them (so the caller can count what was materialized).
   */
  expireDue(now: number, limit: number): IndexRow[] {
    const rows = this.sql.exec<Row>(
      "SELECT address, created_ms, expires_ms, materialized FROM mailboxes WHERE expires_ms IS NOT NULL AND expires_ms <= ? ORDER BY expires_ms LIMIT ?",
      now, limit).toArray().map(toRow);
    for (const r of rows) this.sql.exec("DELETE FROM mailboxes WHERE address = ?", r.address);
    return rows;
  }

  /** The earliest TTL end of any row (ms), or null when none expires. */
  earliestExpiry(): number | null {
    return this.sql.exec<{ e: number | null }>("SELECT min(expires_ms) AS e FROM mailboxes WHERE expires_ms IS NOT NULL").one().e;
  }

  /**
   * Up to `limit` (1..MAX_PAGE) mailboxes with an address after `after`
   * (null = from the start) that starts with `prefix` ("" = any), by
   * address: a range on the primary key (addresses are `[a-z0-9.]`, so
   * every address with the prefix sorts below `prefix + "~"`).
   */
  page(after: string | null, limit: number, prefix = ""): MailboxPage {
    const rows = this.rows(after, limit, prefix);
    return { mailboxes: rows.rows.map((r) => ({ address: r.address, created_ms: r.created_ms, expires_ms: r.expires_ms })), next: rows.next };
  }

  /** {@link page} with each row's state (the tenant purge skips mailboxes no object holds). */
  rows(after: string | null, limit: number, prefix = ""): { rows: IndexRow[]; next: string | null } {
    const n = Math.max(1, Math.min(MAX_PAGE, Math.floor(limit)));
    const from = after !== null && after >= prefix ? after : null;
    const upper = prefix === "" ? "" : " AND address < ?";
    const args: SqlStorageValue[] = [from ?? prefix, ...(prefix === "" ? [] : [prefix + "~"]), n + 1];
    const rows = this.sql.exec<Row>(
      `SELECT address, created_ms, expires_ms, materialized FROM mailboxes WHERE address ${from !== null ? ">" : ">="} ?${upper} ORDER BY address LIMIT ?`, ...args).toArray();
    const more = rows.length > n;
    const page = rows.slice(0, n).map(toRow);
    return { rows: page, next: more ? page[page.length - 1]!.address : null };
  }

  /** Indexed mailboxes. */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM mailboxes").one().n;
  }

  /** Indexed mailboxes no Mailbox object holds yet (created, never used). */
  unmaterializedCount(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM mailboxes WHERE materialized = 0").one().n;
  }
}

function toRow(r: Row): IndexRow {
  return { address: r.address, created_ms: r.created_ms, expires_ms: r.expires_ms, materialized: r.materialized !== 0 };
}
