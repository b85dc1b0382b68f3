/**
 * SQLite layout of a tenant's MailboxIndex (MailboxIndex.ts): one row per
 * mailbox the tenant has, keyed by address, so the list pages in address
 * order with a keyset cursor (never an OFFSET scan).
 *
 *   mailboxes(address TEXT PRIMARY KEY, created_ms, expires_ms)
 *
 * Every update carries the mailbox's creation time: an add replaces a row
 * only with a creation time at least as new, a remove deletes a row only
 * up to its creation time — so a late or repeated update never undoes a
 * newer one (CREATE → TTL expiry → CREATE again of the same address).
 */

/** One indexed mailbox. */
export interface IndexedMailbox {
  address: string;
  /** When the mailbox was created, unix ms. */
  created_ms: number;
  /** When its TTL deletes it, unix ms; null = never. */
  expires_ms: number | null;
}

/** One page of the index. */
export interface MailboxPage {
  mailboxes: IndexedMailbox[];
  /** Cursor of the next page (the last address of this one); null = this was the last page. */
  next: string | null;
}

/** Largest page. */
export const MAX_PAGE = 1000;

export class MailboxIndexStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS mailboxes(address TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, expires_ms INTEGER) WITHOUT ROWID");
  }

  /** Records a mailbox (idempotent; an older creation time never replaces a newer one). */
  add(m: IndexedMailbox): void {
    this.sql.exec(`INSERT INTO mailboxes(address, created_ms, expires_ms) VALUES (?, ?, ?)
      ON CONFLICT(address) DO UPDATE SET created_ms = excluded.created_ms, expires_ms = excluded.expires_ms
      WHERE excluded.created_ms >= mailboxes.created_ms`, m.address, m.created_ms, m.expires_ms);
  }

  /** Forgets the mailbox created at `createdMs` (or earlier) at `address`; a newer one stays. Returns the rows deleted (0 or 1). */
  remove(address: string, createdMs: number): number {
    return this.sql.exec("DELETE FROM mailboxes WHERE address = ? AND created_ms <= ?", address, createdMs).rowsWritten;
  }

  /** The listed mailbox at `address`, or null. */
  get(address: string): IndexedMailbox | null {
    const r = this.sql.exec<IndexedMailbox & Record<string, SqlStorageValue>>(
      "SELECT address, created_ms, expires_ms FROM mailboxes WHERE address = ?", address).toArray()[0];
    return r ? { address: r.address, created_ms: r.created_ms, expires_ms: r.expires_ms } : null;
  }

  /** Whether `address` is listed. */
  has(address: string): boolean {
    return this.sql.exec("SELECT 1 FROM mailboxes WHERE address = ?", address).toArray().length > 0;
  }

  /**
   * Up to `limit` (1..MAX_PAGE) mailboxes with an address after `after`
   * (null = from the start) that starts with `prefix` ("" = any), by
   * address: a range on the primary key (addresses are `[a-z0-9.]`, so
   * every address with the prefix sorts below `prefix + "~"`).
   */
  page(after: string | null, limit: number, prefix = ""): MailboxPage {
    const n = Math.max(1, Math.min(MAX_PAGE, Math.floor(limit)));
    const from = after !== null && after >= prefix ? after : null;
    const upper = prefix === "" ? "" : " AND address < ?";
    const args: SqlStorageValue[] = [from ?? prefix, ...(prefix === "" ? [] : [prefix + "~"]), n + 1];
    const rows = this.sql.exec<IndexedMailbox & Record<string, SqlStorageValue>>(
      `SELECT address, created_ms, expires_ms FROM mailboxes WHERE address ${from !== null ? ">" : ">="} ?${upper} ORDER BY address LIMIT ?`, ...args).toArray();
    const more = rows.length > n;
    const mailboxes = rows.slice(0, n).map((r) => ({ address: r.address, created_ms: r.created_ms, expires_ms: r.expires_ms }));
    return { mailboxes, next: more ? mailboxes[mailboxes.length - 1]!.address : null };
  }

  /** Indexed mailboxes. */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM mailboxes").one().n;
  }
}
