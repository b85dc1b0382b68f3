/**
 * The isolate's positive cache of issued-token checks (docs/tenants.md
 * "Token checks"; DESIGN.md §10: no per-tenant object on a per-request
 * path). mq9 over HTTP, MCP and the HTTP APIs authenticate every request;
 * without a cache each one is a call to the tenant's one TenantDirectory,
 * which caps a tenant's whole HTTP traffic at what one object serves.
 *
 * - A good answer is kept for `TOKEN_CACHE_MS` (default 5000 ms; 0 = no
 *   cache), and never past the token's own expiry: a revoked token is
 *   refused within that bound in every isolate, an expired one at once.
 * - The isolate that revokes a token or deletes a tenant (the admin API)
 *   forgets its entries at once.
 * - Keyed by the token's SHA-256 (the secret itself is not kept), bounded
 *   at MAX_ENTRIES (the oldest entry is dropped first). Refusals are never
 *   cached: a made-up token costs its caller a directory call each time, as
 *   before (the directory's own per-tenant refusals stay the bound).
 * - New connections (MortarMQ, NATS) always ask the directory: they take a
 *   connection lease there; their re-checks follow TENANT_REVALIDATE_MS.
 *
 * Pure apart from the clock, which callers pass.
 */
import type { TenantState } from "./rpc";
import type { Scopes } from "../../wire/admin/scopes";

/** Most entries an isolate keeps. */
export const MAX_ENTRIES = 10_000;

/** What a cached check answers. */
export interface CachedToken {
  tenant: string;
  tokenId: string;
  /** The tenant's quota state at the check (HTTP quotas refresh it on their own schedule too). */
  state?: TenantState;
  /** The token's scopes, parsed (undefined = full tenant access): a scope change reaches cached checks within the TTL. */
  scopes?: Scopes;
}

interface Entry extends CachedToken {
  /** Usable until, unix ms. */
  until: number;
}

/** Token hash → the tenant and token it names, for a bounded time. */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = MAX_ENTRIES) {}

  /** The entry for `hash` if it is still usable at `now`, else undefined (and a stale one is dropped). */
  get(hash: string, now: number): CachedToken | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (now >= e.until) {
      this.entries.delete(hash);
      return undefined;
    }
    return e;
  }

  /**
   * Keeps a good check of `hash` for `ttlMs` from `now`, and not past
   * `expiresAt` (unix ms; null = the token does not expire). No-op for ttlMs 0.
   */
  set(hash: string, token: CachedToken, now: number, ttlMs: number, expiresAt: number | null = null): void {
    if (ttlMs <= 0) return;
    const until = Math.min(now + ttlMs, expiresAt ?? Infinity);
    if (until <= now) return;
    this.entries.delete(hash); // re-inserted last: Map order is insertion order
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { ...token, until });
  }

  /** Forgets `tokenId` of `tenant` (it was revoked here). */
  forgetToken(tenant: string, tokenId: string): void {
    for (const [k, e] of this.entries) if (e.tenant === tenant && e.tokenId === tokenId) this.entries.delete(k);
  }

  /** Forgets every token of `tenant` (it was deleted here). */
  forgetTenant(tenant: string): void {
    for (const [k, e] of this.entries) if (e.tenant === tenant) this.entries.delete(k);
  }

  /** Entries held (tests). */
  get size(): number {
    return this.entries.size;
  }
}
