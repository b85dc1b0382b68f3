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
import { OPEN_TENANT, TENANT_ID_RE, authenticateToken, bearerToken, isOpen, isStaticTenant, timingSafeEqualStr, type AuthResult } from "../../objects/tenants/auth";
import { tenantStub } from "../../objects/tenants/stub";
import type { DirectoryRow } from "../../objects/tenants/rpc";
import type { Env } from "../../objects/env";
import { permit, permitAny, type Permit } from "../../objects/tenants/permissions";
import { noteJurisdiction } from "../../objects/shared/jurisdiction";
import { isolateMeter, WORKER_REQUESTS } from "../telemetry";
import type { Operation, Resource, Scopes } from "../../wire/admin/scopes";

/** The caller's access. */
export type Access =
  | { kind: "operator" }
  /** A tenant's token: `tokenId` (issued tokens) and `scopes` (absent = full tenant access) for permit(). */
  | { kind: "tenant"; tenant: string; tokenId?: string; scopes?: Scopes }
  /** `headers`: WWW-Authenticate on a 401, Retry-After on a 503 (tokenRefusal). */
  | { kind: "denied"; error: string; status: 401 | 503; headers: Record<string, string> };

/** Resolves the caller from its `Authorization` header. */
export async function operatorAccess(env: Env, authorization: string | undefined): Promise<Access> {
  const token = bearerToken(authorization);
  // Trimmed like AUTH_TOKENS entries and bearer tokens: `echo $T | wrangler secret put ADMIN_TOKEN` stores a trailing newline.
  const admin = (env.ADMIN_TOKEN ?? "").trim();
  if (admin !== "" && token !== undefined && timingSafeEqualStr(token, admin)) return { kind: "operator" };
  if (isOpen(env)) return { kind: "operator" };
  const auth = await authenticateToken(env, token);
  if (auth.ok) return { kind: "tenant", tenant: auth.tenant, tokenId: auth.tokenId, scopes: auth.scopes };
  return { kind: "denied", ...tokenRefusal(auth) };
}

/**
 * How every HTTP route (`/mq9`, `/mcp`, `/stats`, `/metrics`, `/admin`, the
 * console's `/v0` APIs) answers a refused token — one wording everywhere
 * (docs/tenants.md "Auth modes"): 401 `unauthorized: missing bearer token`,
 * `unauthorized: invalid token` (not a token, or one nobody issued),
 * `unauthorized: token revoked`, `unauthorized: token expired at <ISO time>`,
 * `unauthorized: tenant <id> was deleted`, with `WWW-Authenticate: Bearer`;
 * 503 `unavailable: …` with `Retry-After: 1` when the tenant directory did
 * not answer.
 */
export function tokenRefusal(auth: Extract<AuthResult, { ok: false }>): { status: 401 | 503; error: string; headers: Record<string, string> } {
  if (auth.reason === "unavailable") return { status: 503, error: `unavailable: ${auth.message}`, headers: { "Retry-After": "1" } };
  const error = auth.reason === "missing" ? "unauthorized: missing bearer token"
    : auth.reason === "invalid" ? "unauthorized: invalid token" : `unauthorized: ${auth.message}`;
  return { status: 401, error, headers: { ...UNAUTHORIZED_HEADERS } };
}

/** Headers of a 401 answer. */
export const UNAUTHORIZED_HEADERS = { "WWW-Authenticate": 'Bearer realm="mortarmq"' };

/**
 * The tenant a tenant-scoped request is about (`/stats`, consumer-group
 * management, the console's APIs): `asked` (the `?tenant=` parameter) for
 * the operator, else `default`; a tenant token's own tenant (asking for
 * another → 403). The operator's tenant must be live — `default`, a static
 * tenant (AUTH_TOKENS), or a directory tenant that was created and not
 * deleted — else 404: a write for an unknown id would leave data that a
 * tenant created later with that id inherits, and one for a deleted tenant
 * data its purge never sees (docs/tenants.md "Deleting a tenant"). Costs the
 * operator one call to the tenant's object; a tenant token costs nothing
 * (its tenant is live: the token was accepted). 503 when that object does
 * not answer.
 */
export async function scopedTenant(
  env: Env, access: Exclude<Access, { kind: "denied" }>, asked: string | undefined,
): Promise<{ tenant: string } | { error: string; status: 400 | 403 | 404 | 503 }> {
  if (asked !== undefined && !TENANT_ID_RE.test(asked)) return { error: "tenant must be 1-64 chars of [a-z0-9_-]", status: 400 };
  if (access.kind === "tenant") {
    if (asked !== undefined && asked !== access.tenant) return { error: "a tenant token can only read and manage its own tenant", status: 403 };
    isolateMeter.add(access.tenant, WORKER_REQUESTS); // the tenant's own request (the operator's are the operator's)
    return { tenant: access.tenant };
  }
  const tenant = asked ?? OPEN_TENANT;
  if (tenant === OPEN_TENANT || isStaticTenant(env, tenant)) return { tenant };
  let row: DirectoryRow | null;
  try {
    row = await tenantStub(env, tenant).directoryRow();
  } catch {
    return { error: `unavailable: the tenant directory of ${tenant} did not answer; retry`, status: 503 };
  }
  if (!row) return { error: `tenant "${tenant}" does not exist (mortarmq admin tenants list shows the tenants)`, status: 404 };
  noteJurisdiction(tenant, row.jurisdiction ?? null);
  if (row.deleted_at !== null) {
    return { error: `tenant ${tenant} was deleted at ${new Date(row.deleted_at).toISOString()}; its data is purged (mortarmq admin tenants describe ${tenant})`, status: 404 };
  }
  return { tenant };
}

/**
 * The refusal text when `access` (a tenant token with scopes) may not
 * perform `op` on `r` (docs/tenants.md "Permissions"; logged and counted by
 * permit()), else null — the operator and unscoped tokens may do anything.
 * Routes answer it with 403 `{error}`.
 */
export function scopeRefusal(access: Access, op: Operation, r: Resource | null): string | null {
  if (access.kind !== "tenant" || !access.scopes) return null;
  return permit(permitOf(access), op, r);
}

/** As {@link scopeRefusal} for `op` on topic or mailbox `name` through any group (a peek: permitAny). */
export function scopeRefusalAnyGroup(access: Access, op: Operation, name: string): string | null {
  if (access.kind !== "tenant" || !access.scopes) return null;
  return permitAny(permitOf(access), [op], name);
}

function permitOf(access: Extract<Access, { kind: "tenant" }>): Permit {
  return { tenant: access.tenant, tokenId: access.tokenId, scopes: access.scopes, count: (s) => isolateMeter.add(access.tenant, s) };
}
