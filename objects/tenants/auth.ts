/**
 * Token → tenant resolution shared by every transport (DESIGN.md §6):
 * MortarMQ CONNECT token, NATS CONNECT auth_token / pass, HTTP
 * `Authorization: Bearer`. docs/tenants.md.
 *
 * Two kinds of tokens, checked in this order:
 * - Static configuration: `AUTH_TOKENS` = comma-separated `token:tenant`
 *   pairs (a bare `token` maps to tenant `default`), compared in constant
 *   time. An entry may carry scopes after its tenant (docs/tenants.md
 *   "Permissions"): `token:tenant:allow=<scope>;allow=<scope>;deny=<scope>`
 *   (`;`-separated rules, each `allow=` or `deny=` one scope). Entries with
 *   an invalid tenant id or a scope that does not parse are skipped (that
 *   token is refused), but a non-empty `AUTH_TOKENS` always keeps the broker
 *   closed (fail closed).
 * - Issued tokens (`mmq.<tenant>.<token_id>.<secret>`, created with the
 *   admin API): the token's SHA-256 is checked by the tenant's
 *   TenantDirectory object on every new connection; a request without a
 *   connection (HTTP) uses the isolate's positive cache of such checks
 *   (token-cache.ts: `TOKEN_CACHE_MS`, 5 s by default, never past the
 *   token's expiry), so a revoked token is refused within that bound.
 *
 * Open broker (local development): no `AUTH_TOKENS` entry AND no
 * `ADMIN_TOKEN` — every caller is tenant `default`. A hosted deployment
 * (ADMIN_TOKEN set) with no tenants yet is closed.
 */
import type { Env } from "../env";
import { TENANT_ID_RE, parseIssuedToken, timingSafeEqualStr } from "../../wire/admin/tenants";
import { parseScopes, type Scopes } from "../../wire/admin/scopes";
import { OPEN_TENANT, parseStaticEntries, parseStaticTokens } from "./static-tokens";
import { tokenHash } from "./crypto";
import { tenantStub } from "./stub";
import type { AuthResult, ConnectionProtocol, ScopeLists } from "./rpc";
import { logOverload } from "../shared/platform-faults";
import { TokenCache } from "./token-cache";
import { tokenCacheMs } from "./config";
import { noteJurisdiction } from "../shared/jurisdiction";

export { TENANT_ID_RE, timingSafeEqualStr };

export { OPEN_TENANT, parseStaticEntries, parseStaticTokens };
export type { StaticToken } from "./static-tokens";

/** Result of authenticating a token (defined with the tenant RPC shapes, so pure code can use it). */
export type { AuthResult };

/** Ask the tenant object to register a connection (connection quota) while authenticating. */
export interface ConnectionRequest {
  leaseId: string;
  protocol: ConnectionProtocol;
}

/** Parses an issued token's stored scopes (validated when issued); undefined = none. A list that no longer parses denies everything (fail closed). */
export function issuedScopes(lists: ScopeLists | undefined): Scopes | undefined {
  if (!lists) return undefined;
  try {
    return parseScopes(lists.allow, lists.deny);
  } catch {
    return parseScopes([], ["*"]);
  }
}

/**
 * True when the broker runs open (tenant `default` for everyone): only when
 * `AUTH_TOKENS` has no entry at all AND `ADMIN_TOKEN` is unset or empty. A
 * configured list whose entries are all invalid keeps the broker closed.
 */
export function isOpen(env: Env): boolean {
  return (env.ADMIN_TOKEN ?? "") === "" && (env.AUTH_TOKENS ?? "").split(",").every((item) => item.trim() === "");
}

/** True when `tenant` is configured outside the directory: named in AUTH_TOKENS, or `default` on an open broker. */
export function isStaticTenant(env: Env, tenant: string): boolean {
  if (isOpen(env)) return tenant === OPEN_TENANT;
  for (const t of parseStaticTokens(env.AUTH_TOKENS).values()) if (t === tenant) return true;
  return false;
}

/** The line logged the first time an isolate serves a request of an open broker. */
export const OPEN_MODE_LOG =
  `mortarmq: running OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured, every client is tenant "${OPEN_TENANT}" ` +
  "(set AUTH_TOKENS, e.g. `mortarmq dev --auth-tokens <token>:<tenant>`, or ADMIN_TOKEN and issue tokens, to require tokens)";

let openModeLogged = false;

/** The isolate's cache of good issued-token checks (token-cache.ts). */
const issuedChecks = new TokenCache();

/** The admin API of this isolate revoked `tokenId` of `tenant`: it is refused here at once. */
export function forgetToken(tenant: string, tokenId: string): void {
  issuedChecks.forgetToken(tenant, tokenId);
}

/** The admin API of this isolate deleted `tenant`: its tokens are refused here at once. */
export function forgetTenant(tenant: string): void {
  issuedChecks.forgetTenant(tenant);
}

/**
 * Resolves a presented token (possibly undefined/empty) to a tenant.
 *
 * - Open broker → `{ok:true, tenant:"default", open:true}`; the first such
 *   request in an isolate logs {@link OPEN_MODE_LOG} (unless the launcher
 *   announced the auth mode itself: AUTH_MODE_ANNOUNCED=1).
 * - A static token → its tenant, no call.
 * - An issued token → one call to its tenant's TenantDirectory
 *   (`authenticate`, or `connect` when `connection` is given, which also
 *   takes a connection slot under a connection quota).
 * - `connection` with an open or static tenant → `connect` too (quotas);
 *   if the tenant object cannot be reached the connection is let in
 *   without quota state (fail open). For an issued token it cannot be
 *   checked then: `unavailable`.
 */
export async function authenticateToken(env: Env, token: string | undefined, connection?: ConnectionRequest): Promise<AuthResult> {
  let tenant: string | undefined;
  let scopes: Scopes | undefined;
  const open = isOpen(env);
  if (open) {
    if (!openModeLogged) {
      openModeLogged = true;
      if (env.AUTH_MODE_ANNOUNCED !== "1") console.warn(OPEN_MODE_LOG); // `mortarmq dev` printed it at startup already
    }
    tenant = OPEN_TENANT;
  } else {
    if (!token) return { ok: false, reason: "missing", message: "a token is required" };
    for (const [t, e] of parseStaticEntries(env.AUTH_TOKENS)) {
      if (timingSafeEqualStr(t, token)) ({ tenant, scopes } = e);
    }
  }
  if (tenant !== undefined) {
    const base = scopes ? { ok: true as const, tenant, open, scopes } : { ok: true as const, tenant, open };
    if (!connection) return base;
    try {
      const a = await tenantStub(env, tenant).openConnection({ leaseId: connection.leaseId, protocol: connection.protocol });
      return a.ok ? { ...base, state: a.state } : { ok: false, reason: a.reason, message: a.message };
    } catch {
      return base;
    }
  }
  const issued = parseIssuedToken(token!);
  if (!issued) return { ok: false, reason: "invalid", message: "invalid token" };
  try {
    const hash = await tokenHash(token!);
    const ttl = connection ? 0 : tokenCacheMs(env);
    if (ttl > 0) {
      const hit = issuedChecks.get(hash, Date.now());
      if (hit) {
        noteJurisdiction(hit.tenant, hit.state?.jurisdiction);
        return { ok: true, tenant: hit.tenant, open: false, tokenId: hit.tokenId, state: hit.state, scopes: hit.scopes };
      }
    }
    const stub = tenantStub(env, issued.tenant);
    const a = connection
      ? await stub.openConnection({ tokenId: issued.tokenId, tokenHash: hash, leaseId: connection.leaseId, protocol: connection.protocol })
      : await stub.authenticate(issued.tokenId, hash);
    if (!a.ok) return { ok: false, reason: a.reason, message: a.message };
    noteJurisdiction(issued.tenant, a.state.jurisdiction); // this isolate addresses the tenant's objects there
    const parsed = issuedScopes(a.scopes);
    issuedChecks.set(hash, { tenant: issued.tenant, tokenId: issued.tokenId, state: a.state, scopes: parsed }, Date.now(), ttl, a.expiresAt ?? null);
    return { ok: true, tenant: issued.tenant, open: false, tokenId: issued.tokenId, state: a.state, scopes: parsed };
  } catch (e) {
    logOverload("token check", e); // the platform's text stays in the log
    return { ok: false, reason: "unavailable", message: "the tenant directory did not answer" };
  }
}

/** Extracts the bearer token from an `Authorization` header value, if any. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  return m ? m[1].trim() : undefined;
}
