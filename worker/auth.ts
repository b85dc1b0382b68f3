/**
 * Token → tenant resolution shared by every transport (DESIGN.md §6):
 * MortarMQ CONNECT token, NATS CONNECT auth_token / pass, HTTP
 * `Authorization: Bearer`.
 *
 * Static configuration: `AUTH_TOKENS` = comma-separated `token:tenant`
 * pairs (a bare `token` maps to tenant `default`). Unset or empty = open
 * broker: every caller (with or without a token) is tenant `default`.
 * Entries with an invalid tenant id are skipped, but a non-empty
 * `AUTH_TOKENS` always keeps the broker closed (fail closed): a typo in the
 * configuration must not turn authentication off.
 */
import type { Env } from "./env";

/** Tenant used when the broker runs open (no tokens configured). */
export const OPEN_TENANT = "default";

/** Tenant ids: 1–64 chars of [a-z0-9_-]; they prefix every object key. */
export const TENANT_ID_RE = /^[a-z0-9_-]{1,64}$/;

/** Result of authenticating a token. */
export type AuthResult =
  | { ok: true; tenant: string; open: boolean }
  | { ok: false; reason: "missing" | "invalid" };

/** Parses `AUTH_TOKENS` into token → tenant. Malformed tenant ids are skipped. */
export function parseStaticTokens(spec: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of (spec ?? "").split(",")) {
    const item = raw.trim();
    if (!item) continue;
    const i = item.lastIndexOf(":");
    const token = i > 0 ? item.slice(0, i) : item;
    const tenant = i > 0 ? item.slice(i + 1) : OPEN_TENANT;
    if (TENANT_ID_RE.test(tenant)) out.set(token, tenant);
  }
  return out;
}

/**
 * True when no tokens are configured (open broker, tenant `default`): only
 * when `AUTH_TOKENS` has no entry at all. A configured list whose entries
 * are all invalid keeps the broker closed (nobody can authenticate).
 */
export function isOpen(env: Env): boolean {
  return (env.AUTH_TOKENS ?? "").split(",").every((item) => item.trim() === "");
}

/** Constant-time string comparison (both strings compared in full). */
export function timingSafeEqualStr(a: string, b: string): boolean {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  let diff = ea.length ^ eb.length;
  const n = Math.max(ea.length, eb.length);
  for (let i = 0; i < n; i++) diff |= (ea[i] ?? 0) ^ (eb[i] ?? 0);
  return diff === 0;
}

/** The line logged the first time an isolate serves a request of an open broker. */
export const OPEN_MODE_LOG =
  `mortarmq: running OPEN — no AUTH_TOKENS configured, every client is tenant "${OPEN_TENANT}" ` +
  "(set AUTH_TOKENS, e.g. `mortarmq dev --auth-tokens <token>:<tenant>`, to require tokens)";

let openModeLogged = false;

/**
 * Resolves a presented token (possibly undefined/empty) to a tenant.
 * Open broker → always `{ok:true, tenant:"default", open:true}`; the first
 * such request in an isolate logs {@link OPEN_MODE_LOG} (DESIGN §6: the
 * broker says so when it runs open).
 */
export async function authenticateToken(env: Env, token: string | undefined): Promise<AuthResult> {
  if (isOpen(env)) {
    if (!openModeLogged) {
      openModeLogged = true;
      console.warn(OPEN_MODE_LOG);
    }
    return { ok: true, tenant: OPEN_TENANT, open: true };
  }
  if (!token) return { ok: false, reason: "missing" };
  const tokens = parseStaticTokens(env.AUTH_TOKENS);
  let found: string | undefined;
  for (const [t, tenant] of tokens) if (timingSafeEqualStr(t, token)) found = tenant;
  return found ? { ok: true, tenant: found, open: false } : { ok: false, reason: "invalid" };
}

/** Extracts the bearer token from an `Authorization` header value, if any. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  return m ? m[1].trim() : undefined;
}
