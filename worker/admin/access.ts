/**
 * Who may read the operator surfaces (docs/operations.md "Access"):
 *
 * | caller | /metrics | /stats | /admin/* |
 * |---|---|---|---|
 * | `Authorization: Bearer <ADMIN_TOKEN>` | every tenant | any tenant / all | yes |
 * | anyone, broker open (no AUTH_TOKENS and no ADMIN_TOKEN: local development) | every tenant | any tenant / all | yes |
 * | a tenant's token (AUTH_TOKENS or issued) | own tenant | own tenant | 403 |
 * | no / unknown / revoked token otherwise | 401 | 401 | 401 |
 */
import { OPEN_TENANT, TENANT_ID_RE, authenticateToken, bearerToken, isOpen, timingSafeEqualStr } from "../../objects/tenants/auth";
import type { Env } from "../../objects/env";

/** The caller's access. */
export type Access =
  | { kind: "operator" }
  | { kind: "tenant"; tenant: string }
  | { kind: "denied"; error: string; status: 401 | 503 };

/** Resolves the caller from its `Authorization` header. */
export async function operatorAccess(env: Env, authorization: string | undefined): Promise<Access> {
  const token = bearerToken(authorization);
  // Trimmed like AUTH_TOKENS entries and bearer tokens: `echo $T | wrangler secret put ADMIN_TOKEN` stores a trailing newline.
  const admin = (env.ADMIN_TOKEN ?? "").trim();
  if (admin !== "" && token !== undefined && timingSafeEqualStr(token, admin)) return { kind: "operator" };
  if (isOpen(env)) return { kind: "operator" };
  const auth = await authenticateToken(env, token);
  if (auth.ok) return { kind: "tenant", tenant: auth.tenant };
  if (auth.reason === "unavailable") return { kind: "denied", error: `unavailable: ${auth.message}`, status: 503 };
  return { kind: "denied", error: auth.reason === "missing" ? "unauthorized: missing bearer token" : `unauthorized: ${auth.message}`, status: 401 };
}

/** Headers of a 401 answer. */
export const UNAUTHORIZED_HEADERS = { "WWW-Authenticate": 'Bearer realm="mortarmq"' };

/**
 * The tenant a tenant-scoped request is about (`/stats`, consumer-group
 * management): `asked` (the `?tenant=` parameter) for the operator, else
 * `default`; a tenant token's own tenant (asking for another → 403).
 */
export function scopedTenant(access: Exclude<Access, { kind: "denied" }>, asked: string | undefined): { tenant: string } | { error: string; status: 400 | 403 } {
  if (asked !== undefined && !TENANT_ID_RE.test(asked)) return { error: "tenant must be 1-64 chars of [a-z0-9_-]", status: 400 };
  if (access.kind === "tenant") {
    if (asked !== undefined && asked !== access.tenant) return { error: "a tenant token can only read and manage its own tenant", status: 403 };
    return { tenant: access.tenant };
  }
  return { tenant: asked ?? OPEN_TENANT };
}
