/**
 * The TenantDirectory's directory role (docs/tenants.md): a directory
 * tenant's record, its quotas as the admin API sets them, and its issued
 * tokens (SHA-256 only). Every transport that meets an issued token checks
 * it here (`checkToken`) — the token names its tenant and token id
 * (wire/admin/tenants.ts), so there is no global lookup.
 *
 * Synchronous over the object's store; the glue (TenantDirectory.ts) tells
 * the admission role when the quotas changed and arms the purge after a
 * delete.
 */
import { UNLIMITED, timingSafeEqualStr, tokenExpiryError, type Quotas, type TenantDoc, type IssuedToken, type TokenInfo } from "../../wire/admin/tenants";
import { newIssuedToken } from "./crypto";
import { newPurge, purgeDoc } from "./purge";
import type { AdminResult, ConnectAnswer, DirectoryRow, ScopeLists } from "./rpc";
import type { TenantRecord, TenantStore, TokenRow } from "./store";
import type { Jurisdiction } from "../../wire/admin/tenants";

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** Records and tokens of one tenant (`tenants/<id>`). */
export class Directory {
  /** `staticJurisdiction`: the tenant's jurisdiction in TENANT_JURISDICTION (static tenants), else null. */
  constructor(private readonly store: TenantStore, private readonly tenant: string, private readonly staticJurisdiction: Jurisdiction | null = null) {}

  /** The jurisdiction of the tenant's objects: the record's, else TENANT_JURISDICTION's; null = none. */
  jurisdiction(): Jurisdiction | null {
    return this.store.record()?.jurisdiction ?? this.staticJurisdiction;
  }

  /**
   * Creates the directory tenant. 409 when it exists, or when the id belonged
   * to a deleted tenant whose data is still being purged; once that purge is
   * done the id may be taken again and the new tenant starts empty (no
   * topics, groups, mailboxes, agents, usage or tokens: docs/tenants.md).
   */
  create(name: string, quotas: Quotas | null, now: number, jurisdiction: Jurisdiction | null = null): AdminResult<TenantDoc> {
    const existing = this.store.record();
    if (existing) {
      if (existing.deleted_at === null) return { ok: false, status: 409, error: `tenant ${this.tenant} already exists` };
      const p = this.store.purge();
      if (p && p.phase !== "done") {
        return { ok: false, status: 409, error: `tenant id ${this.tenant} belonged to a deleted tenant whose data is still being purged (${p.phase}); it can be reused once \`mortarmq admin tenants describe ${this.tenant}\` shows the purge done` };
      }
    }
    this.store.tx(() => {
      this.store.dropTokens();
      this.store.dropLeases();
      this.store.setPurge(null);
      this.store.setRecord({ id: this.tenant, name, created_at: now, deleted_at: null, jurisdiction });
      this.store.setQuotas(quotas ?? { ...UNLIMITED });
    });
    return { ok: true, value: this.doc(this.store.record()!) };
  }

  /** The tenant document. `implicit`: the tenant is configured outside the directory (AUTH_TOKENS / open broker). */
  describe(implicit: boolean): AdminResult<TenantDoc> {
    const rec = this.store.record();
    if (rec) return { ok: true, value: this.doc(rec) };
    if (!implicit) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    return { ok: true, value: this.doc(null) };
  }

  /**
   * Marks the tenant deleted: every token revoked and every lease dropped
   * in one transaction with the purge's state (purge.ts, starting
   * `purgeDelayMs` later). A tenant deleted again keeps its record; one
   * deleted before purging existed gets its purge state now. The caller
   * arms the purge. 404 for a tenant that never existed.
   */
  remove(now: number, purgeDelayMs: number): AdminResult<TenantDoc> {
    const rec = this.store.record();
    if (!rec) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    let next = rec;
    if (rec.deleted_at === null) {
      next = { ...rec, deleted_at: now };
      this.store.tx(() => {
        this.store.setRecord(next);
        this.store.revokeAll(now);
        this.store.dropLeases();
        this.store.setPurge(newPurge(now, purgeDelayMs));
      });
    } else if (!this.store.purge()) {
      this.store.setPurge(newPurge(now, purgeDelayMs)); // deleted before purging existed
    }
    return { ok: true, value: this.doc(next) };
  }

  /**
   * Issues a token: the answer is the only place the token ever appears.
   * `expiresAt` (unix ms, null = never): from then on the token is refused
   * like a revoked one (400 when it is not in the future or more than 10
   * years ahead: tokenExpiryError). `scopes`: already validated by the
   * caller (parseScopes); empty lists = full tenant access.
   */
  async issueToken(label: string, expiresAt: number | null, now: number, scopes: ScopeLists = { allow: [], deny: [] }): Promise<AdminResult<IssuedToken>> {
    const rec = this.store.record();
    if (!rec || rec.deleted_at !== null) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    const bad = expiresAt === null ? null : tokenExpiryError(expiresAt, now);
    if (bad !== null) return { ok: false, status: 400, error: bad };
    const t = await newIssuedToken(this.tenant);
    if (this.store.token(t.tokenId)) return { ok: false, status: 409, error: "token id collision; issue again" };
    this.store.addToken({ token_id: t.tokenId, hash: t.hash, label, created_at: now, revoked_at: null, expires_at: expiresAt, last_used_at: null, ...scopeColumns(scopes) });
    return { ok: true, value: { tenant: this.tenant, token_id: t.tokenId, token: t.token, label, created_at: iso(now)!, expires_at: iso(expiresAt), allow: scopes.allow, deny: scopes.deny } };
  }

  /** The tenant's issued tokens (never their secrets), with expiry and last use. */
  listTokens(): AdminResult<TokenInfo[]> {
    if (!this.store.record()) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    return { ok: true, value: this.store.tokens().map(tokenInfo) };
  }

  /** Revokes a token (idempotent). New connections and requests are refused at once. */
  revokeToken(tokenId: string, now: number): AdminResult<TokenInfo> {
    const rec = this.store.record();
    if (!rec) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    if (!this.store.token(tokenId)) return { ok: false, status: 404, error: `token ${tokenId} does not exist in tenant ${this.tenant}` };
    this.store.revokeToken(tokenId, now);
    return { ok: true, value: tokenInfo(this.store.token(tokenId)!) };
  }

  /**
   * Replaces a token's scopes (validated by the caller; empty lists = full
   * tenant access). Open connections take them at their next re-check
   * (TENANT_REVALIDATE_MS), other isolates' HTTP checks within TOKEN_CACHE_MS.
   */
  setTokenScopes(tokenId: string, scopes: ScopeLists): AdminResult<TokenInfo> {
    const rec = this.store.record();
    if (!rec || rec.deleted_at !== null) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    if (!this.store.token(tokenId)) return { ok: false, status: 404, error: `token ${tokenId} does not exist in tenant ${this.tenant}` };
    const c = scopeColumns(scopes);
    this.store.setTokenScopes(tokenId, c.allow_scopes, c.deny_scopes);
    return { ok: true, value: tokenInfo(this.store.token(tokenId)!) };
  }

  /** Replaces the quotas. `implicit` as in describe. */
  putQuotas(q: Quotas, implicit: boolean): AdminResult<Quotas> {
    const rec = this.store.record();
    if (rec?.deleted_at != null || (!rec && !implicit)) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    this.store.setQuotas(q);
    return { ok: true, value: q };
  }

  /** The expiry of token `tokenId` (unix ms; null: it never expires or does not exist). */
  tokenExpiry(tokenId: string): number | null {
    return this.store.token(tokenId)?.expires_at ?? null;
  }

  /** The scopes of token `tokenId` (undefined: none — full tenant access — or no such token). */
  tokenScopes(tokenId: string | undefined): ScopeLists | undefined {
    if (tokenId === undefined) return undefined;
    const row = this.store.token(tokenId);
    return row ? scopeLists(row) : undefined;
  }

  /** The tenant's row for the directory index (null: never created). */
  directoryRow(): DirectoryRow | null {
    const rec = this.store.record();
    return rec ? { id: rec.id, name: rec.name, created_at: rec.created_at, deleted_at: rec.deleted_at, jurisdiction: rec.jurisdiction ?? null } : null;
  }

  /**
   * Moves the tenant's future objects to jurisdiction `j` (null: none).
   * Unchanged → the document. 404 for no (or a deleted) directory tenant;
   * 409 for a static tenant (TENANT_JURISDICTION decides), and while the
   * tenant `holdsData` (its objects in the current jurisdiction would be
   * left behind: docs/tenants.md "Jurisdiction").
   */
  setJurisdiction(j: Jurisdiction | null, holdsData: boolean): AdminResult<TenantDoc> {
    const rec = this.store.record();
    if (!rec || rec.deleted_at !== null) {
      if (!rec && this.staticJurisdiction !== null) return { ok: false, status: 409, error: `tenant ${this.tenant} is configured statically: its jurisdiction is set in TENANT_JURISDICTION` };
      return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    }
    const current = rec.jurisdiction ?? null;
    if (current === j) return { ok: true, value: this.doc(rec) };
    if (holdsData) {
      return { ok: false, status: 409, error: `tenant ${this.tenant} holds data in ${current ?? "no jurisdiction"}: its jurisdiction cannot change to ${j ?? "none"} (delete its topics, mailboxes and agents first, or create a new tenant)` };
    }
    const next = { ...rec, jurisdiction: j };
    this.store.setRecord(next);
    return { ok: true, value: this.doc(next) };
  }

  /**
   * Null when the token (if any) is good — then its use is recorded (at most
   * one write per token per TOKEN_USE_GRANULARITY_MS); otherwise the refusal:
   * unknown, revoked, expired (`expires_at` ≤ now), or the tenant deleted.
   * `tokenHash` undefined: the token was checked by hash before (a re-check
   * by id of an open connection).
   */
  checkToken(tokenId: string | undefined, tokenHash: string | undefined, now: number): Extract<ConnectAnswer, { ok: false }> | null {
    const rec = this.store.record();
    if (rec && rec.deleted_at !== null) return { ok: false, reason: "deleted", message: `tenant ${this.tenant} was deleted` };
    if (tokenId === undefined) return null;
    const row = rec ? this.store.token(tokenId) : null;
    if (!row || (tokenHash !== undefined && !timingSafeEqualStr(row.hash, tokenHash))) {
      return { ok: false, reason: "invalid", message: "invalid token" };
    }
    if (row.revoked_at !== null) return { ok: false, reason: "revoked", message: "token revoked" };
    if (row.expires_at !== null && row.expires_at <= now) return { ok: false, reason: "expired", message: `token expired at ${iso(row.expires_at)}` };
    this.store.touchToken(row, now);
    return null;
  }

  /** The admin document of the tenant (`rec` null: a tenant outside the directory). */
  private doc(rec: TenantRecord | null): TenantDoc {
    const purge = rec ? this.store.purge() : null;
    return {
      purge: purge ? purgeDoc(purge, Date.now()) : null,
      id: this.tenant,
      name: rec?.name ?? "",
      source: rec ? "directory" : "static",
      created_at: iso(rec?.created_at ?? null),
      deleted_at: iso(rec?.deleted_at ?? null),
      quotas: this.store.quotas(),
      tokens: this.store.tokens().map(tokenInfo),
      jurisdiction: rec ? rec.jurisdiction ?? null : this.staticJurisdiction,
    };
  }
}

/** A stored token as the admin API shows it (times as ISO strings, never the hash). */
function tokenInfo(r: TokenRow): TokenInfo {
  return {
    token_id: r.token_id, label: r.label, created_at: iso(r.created_at)!, revoked_at: iso(r.revoked_at),
    expires_at: iso(r.expires_at), last_used_at: iso(r.last_used_at),
    allow: r.allow_scopes ? (JSON.parse(r.allow_scopes) as string[]) : [], deny: r.deny_scopes ? (JSON.parse(r.deny_scopes) as string[]) : [],
  };
}

/** Scope lists as the store's columns (an empty list: null). */
function scopeColumns(s: ScopeLists): { allow_scopes: string | null; deny_scopes: string | null } {
  return { allow_scopes: s.allow.length ? JSON.stringify(s.allow) : null, deny_scopes: s.deny.length ? JSON.stringify(s.deny) : null };
}

/** A row's scopes, or undefined when it has none (full tenant access). */
function scopeLists(r: TokenRow): ScopeLists | undefined {
  if (r.allow_scopes === null && r.deny_scopes === null) return undefined;
  return { allow: r.allow_scopes ? (JSON.parse(r.allow_scopes) as string[]) : [], deny: r.deny_scopes ? (JSON.parse(r.deny_scopes) as string[]) : [] };
}
