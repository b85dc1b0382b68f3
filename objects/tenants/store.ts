/**
 * SQLite layout of the TenantDirectory object (both roles; see
 * TenantDirectory.ts). Tables are created on first use.
 *
 * Tenant role (`tenants/<id>`):
 *   meta(k, v)          rows `record` ({id, name, created_at, deleted_at} JSON), `quotas` (Quotas JSON)
 *                       and, for a deleted tenant, `purge` (purge.ts PurgeState JSON)
 *   tokens(token_id, hash, label, created_at, revoked_at, expires_at, last_used_at, allow_scopes, deny_scopes)
 *                       hash = SHA-256 of the token, hex; expires_at null = never;
 *                       last_used_at written at most once per TOKEN_USE_GRANULARITY_MS;
 *                       allow_scopes / deny_scopes: JSON arrays of scope strings (wire/admin/scopes.ts),
 *                       null = none (rows from before scopes: full tenant access)
 *   leases(lease_id, protocol, expires_at)   open connections, only while a connection quota is set
 * Index role (`tenants-index/all`):
 *   directory(id, name, created_at, deleted_at, jurisdiction)
 * Times are unix ms.
 *
 * Tables are created by the first write only: a token naming a tenant that
 * does not exist reaches this object (the token names it), and such reads
 * must leave no storage behind.
 */
import { UNLIMITED, type Quotas } from "../../wire/admin/tenants";
import type { PurgeState } from "./purge";
import type { DirectoryRow } from "./rpc";
import type { Jurisdiction } from "../../wire/admin/tenants";

/** A directory tenant's record. */
export interface TenantRecord {
  id: string;
  name: string;
  created_at: number;
  deleted_at: number | null;
  /** The jurisdiction of the tenant's objects (absent in records from before jurisdictions: none). */
  jurisdiction?: Jurisdiction | null;
}

/** A stored token (the hash never leaves the object). */
export interface TokenRow extends Record<string, SqlStorageValue> {
  token_id: string;
  hash: string;
  label: string;
  created_at: number;
  revoked_at: number | null;
  /** Refused from this time on (unix ms); null = never expires. */
  expires_at: number | null;
  /** Last authentication with the token (unix ms, at most TOKEN_USE_GRANULARITY_MS stale); null = never used. */
  last_used_at: number | null;
  /** JSON array of allowed scopes; null = none. */
  allow_scopes: string | null;
  /** JSON array of denied scopes; null = none. */
  deny_scopes: string | null;
}

/** `last_used_at` is rewritten only when it is at least this old (one write per token per minute at most), ms. */
export const TOKEN_USE_GRANULARITY_MS = 60_000;

/** One row of the index (rpc.ts DirectoryRow) as SQLite returns it. */
interface DirectorySqlRow extends Record<string, SqlStorageValue>, Omit<DirectoryRow, "jurisdiction"> {
  jurisdiction: Jurisdiction | null;
}

export class TenantStore {
  private readonly sql: SqlStorage;
  private ready: boolean;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
    this.ready = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
    if (this.ready) this.migrate();
  }

  /** Objects written before token expiry (or scopes) existed get the new token columns. */
  private migrate(): void {
    const cols = new Set(this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('tokens')").toArray().map((r) => r.name));
    if (!cols.has("expires_at")) this.sql.exec("ALTER TABLE tokens ADD COLUMN expires_at INTEGER");
    if (!cols.has("last_used_at")) this.sql.exec("ALTER TABLE tokens ADD COLUMN last_used_at INTEGER");
    if (!cols.has("allow_scopes")) this.sql.exec("ALTER TABLE tokens ADD COLUMN allow_scopes TEXT");
    if (!cols.has("deny_scopes")) this.sql.exec("ALTER TABLE tokens ADD COLUMN deny_scopes TEXT");
    const dir = this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('directory')").toArray();
    if (dir.length > 0 && !dir.some((r) => r.name === "jurisdiction")) this.sql.exec("ALTER TABLE directory ADD COLUMN jurisdiction TEXT");
  }

  /** Creates the tables (before the first write). */
  private ensure(): void {
    if (this.ready) return;
    this.ready = true;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS tokens(token_id TEXT PRIMARY KEY, hash TEXT NOT NULL, label TEXT NOT NULL,
        created_at INTEGER NOT NULL, revoked_at INTEGER, expires_at INTEGER, last_used_at INTEGER,
        allow_scopes TEXT, deny_scopes TEXT);
      CREATE TABLE IF NOT EXISTS leases(lease_id TEXT PRIMARY KEY, protocol TEXT NOT NULL, expires_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS directory(id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL, deleted_at INTEGER, jurisdiction TEXT)`);
  }

  // ---------------------------------------------------------------- tenant role

  record(): TenantRecord | null {
    if (!this.ready) return null;
    const r = this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'record'").toArray()[0];
    return r ? (JSON.parse(r.v) as TenantRecord) : null;
  }

  setRecord(rec: TenantRecord): void {
    this.ensure();
    this.sql.exec("INSERT OR REPLACE INTO meta VALUES ('record', ?)", JSON.stringify(rec));
  }

  quotas(): Quotas {
    if (!this.ready) return { ...UNLIMITED };
    const r = this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'quotas'").toArray()[0];
    return r ? { ...UNLIMITED, ...(JSON.parse(r.v) as Partial<Quotas>) } : { ...UNLIMITED };
  }

  setQuotas(q: Quotas): void {
    this.ensure();
    this.sql.exec("INSERT OR REPLACE INTO meta VALUES ('quotas', ?)", JSON.stringify(q));
  }

  token(tokenId: string): TokenRow | null {
    if (!this.ready) return null;
    return this.sql.exec<TokenRow>("SELECT * FROM tokens WHERE token_id = ?", tokenId).toArray()[0] ?? null;
  }

  tokens(): TokenRow[] {
    if (!this.ready) return [];
    return this.sql.exec<TokenRow>("SELECT * FROM tokens ORDER BY created_at, token_id").toArray();
  }

  addToken(row: TokenRow): void {
    this.ensure();
    this.sql.exec("INSERT INTO tokens(token_id, hash, label, created_at, revoked_at, expires_at, last_used_at, allow_scopes, deny_scopes) VALUES (?,?,?,?,?,?,?,?,?)",
      row.token_id, row.hash, row.label, row.created_at, row.revoked_at, row.expires_at, row.last_used_at, row.allow_scopes, row.deny_scopes);
  }

  /** Records a use of the token at `now` when the stored time is older than TOKEN_USE_GRANULARITY_MS (or unset). */
  touchToken(row: TokenRow, now: number): void {
    if (row.last_used_at !== null && now - row.last_used_at < TOKEN_USE_GRANULARITY_MS) return;
    this.sql.exec("UPDATE tokens SET last_used_at = ? WHERE token_id = ?", now, row.token_id);
    row.last_used_at = now;
  }

  /** Replaces a token's scopes (JSON arrays; null = none). */
  setTokenScopes(tokenId: string, allow: string | null, deny: string | null): void {
    if (!this.ready) return;
    this.sql.exec("UPDATE tokens SET allow_scopes = ?, deny_scopes = ? WHERE token_id = ?", allow, deny, tokenId);
  }

  /** Marks a token revoked (keeps the first revocation time). */
  revokeToken(tokenId: string, now: number): void {
    if (!this.ready) return;
    this.sql.exec("UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL", now, tokenId);
  }

  revokeAll(now: number): void {
    if (!this.ready) return;
    this.sql.exec("UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL", now);
  }

  /** Leases not expired at `now` (expired ones are deleted first). */
  liveLeases(now: number): number {
    if (!this.ready) return 0;
    this.sql.exec("DELETE FROM leases WHERE expires_at <= ?", now);
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM leases").one().n;
  }

  hasLease(leaseId: string): boolean {
    if (!this.ready) return false;
    return this.sql.exec("SELECT 1 FROM leases WHERE lease_id = ?", leaseId).toArray().length > 0;
  }

  putLease(leaseId: string, protocol: string, expiresAt: number): void {
    this.ensure();
    this.sql.exec("INSERT OR REPLACE INTO leases VALUES (?,?,?)", leaseId, protocol, expiresAt);
  }

  dropLease(leaseId: string): void {
    if (!this.ready) return;
    this.sql.exec("DELETE FROM leases WHERE lease_id = ?", leaseId);
  }

  dropLeases(): void {
    if (!this.ready) return;
    this.sql.exec("DELETE FROM leases");
  }

  /** Forgets every token (a purged tenant's; a tenant re-created with its id starts without). */
  dropTokens(): void {
    if (!this.ready) return;
    this.sql.exec("DELETE FROM tokens");
  }

  /** A deleted tenant's purge state (meta row `purge`), or null. */
  purge(): PurgeState | null {
    if (!this.ready) return null;
    const r = this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'purge'").toArray()[0];
    return r ? (JSON.parse(r.v) as PurgeState) : null;
  }

  setPurge(s: PurgeState | null): void {
    this.ensure();
    if (s === null) this.sql.exec("DELETE FROM meta WHERE k = 'purge'");
    else this.sql.exec("INSERT OR REPLACE INTO meta VALUES ('purge', ?)", JSON.stringify(s));
  }

  // ---------------------------------------------------------------- index role

  upsertDirectory(row: DirectoryRow): void {
    this.ensure();
    this.sql.exec("INSERT OR REPLACE INTO directory(id, name, created_at, deleted_at, jurisdiction) VALUES (?,?,?,?,?)",
      row.id, row.name, row.created_at, row.deleted_at, row.jurisdiction ?? null);
  }

  directory(): DirectoryRow[] {
    if (!this.ready) return [];
    return this.sql.exec<DirectorySqlRow>("SELECT * FROM directory ORDER BY id").toArray();
  }

  /** Runs `fn` in one transaction. */
  tx<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }
}
