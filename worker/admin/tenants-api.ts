/**
 * The tenant admin API (operator only; docs/tenants.md "Admin API"):
 *
 * | route | answer |
 * |---|---|
 * | `POST /admin/tenants` `{id, name?, quotas?, jurisdiction?}` | 201 tenant; 409 id taken (also a deleted tenant's until its purge is done, one in AUTH_TOKENS, or `default`) |
 * | `GET /admin/tenants` | 200 `{tenants: [...]}` (directory and static) |
 * | `GET /admin/tenants/:id` | 200 tenant (tokens listed without secrets); 404 |
 * | `DELETE /admin/tenants/:id` | 200 tenant (deleted_at set, purge scheduled): every token revoked; again: 200, the purge's progress; 404; 409 static |
 * | `POST /admin/tenants/:id/tokens` `{label?, expires_in_s? \| expires_at?}` | 201 `{token_id, token, expires_at, …}` — the only time the token is shown; 404 |
 * | `GET /admin/tenants/:id/tokens` | 200 `{tenant, tokens: [...]}` with expiry and last use; 404 |
 * | `DELETE /admin/tenants/:id/tokens/:tokenId` | 200 token (revoked_at set; idempotent); 404 |
 * | `PUT /admin/tenants/:id/quotas` `{…}` | 200 `{tenant, quotas}` (the body replaces every quota; absent = unlimited); 404 |
 * | `PUT /admin/tenants/:id/jurisdiction` `{jurisdiction}` | 200 tenant; 404; 409 while the tenant holds data, or static (TENANT_JURISDICTION) |
 *
 * Bodies are validated with zod (wire/admin/tenants.ts): 400 with the first
 * problem. No token → 401, a tenant's token → 403. On an open broker (no
 * AUTH_TOKENS, no ADMIN_TOKEN) creating a tenant or issuing a token is 409
 * with OPEN_BROKER_REFUSAL: every client is tenant `default` there and no token is
 * checked, so the token would do nothing.
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Env } from "../../objects/env";
import {
  TENANT_ID_RE, TOKEN_ID_RE, createTenantSchema, jurisdictionBodySchema, issueTokenSchema, tokenScopesSchema, quotasSchema, toQuotas, type TenantSummary,
} from "../../wire/admin/tenants";
import { ScopeError, parseScopes } from "../../wire/admin/scopes";
import type { ScopeLists } from "../../objects/tenants/rpc";
import { isStaticTenant, parseStaticTokens, OPEN_TENANT, isOpen, forgetTenant, forgetToken } from "../../objects/tenants/auth";
import { tenantIndexStub, tenantStub } from "../../objects/tenants/stub";
import type { AdminResult } from "../../objects/tenants/rpc";
import { operatorAccess } from "./access";
import { logFault } from "../../objects/shared/platform-faults";
import { bodyError, jsonBody } from "./json-body";

type Ctx = Context<{ Bindings: Env }>;

/**
 * Writes tenant `id`'s directory row into the index again. A create or
 * delete whose index write failed (503 after the tenant object changed)
 * left the index stale; the operator's retry (then 409 / 404) repairs it.
 */
async function repairIndex(env: Env, id: string): Promise<void> {
  const row = await tenantStub(env, id).directoryRow();
  if (row) await tenantIndexStub(env).indexUpsert(row);
}

/**
 * Why a tenant or token made on an open broker would do nothing (409): there
 * every client is tenant `default` whatever token it sends.
 */
export const OPEN_BROKER_REFUSAL =
  "the broker runs open (no AUTH_TOKENS and no ADMIN_TOKEN): every client is tenant default and no token is checked, "
  + "so a tenant or token made now would do nothing; start it with an operator token to use tenants (mortarmq dev --var ADMIN_TOKEN=…)";

/** Registers the routes on `app`. */
export function registerTenantAdmin(app: Hono<{ Bindings: Env }>): void {
  app.post("/admin/tenants", guarded(async (c) => {
    if (isOpen(c.env)) return c.json({ error: OPEN_BROKER_REFUSAL }, 409);
    const body = await jsonBody(c, createTenantSchema);
    if ("error" in body) return bodyError(c, body);
    const { id, name = "", quotas, jurisdiction = null } = body.value;
    if (id === OPEN_TENANT) {
      // The open broker's tenant (and that of AUTH_TOKENS entries without one): its data is not a new customer's.
      return c.json({ error: `tenant id ${OPEN_TENANT} is reserved (the open broker's tenant and that of AUTH_TOKENS entries without a tenant); pick another id` }, 409);
    }
    if (isStaticTenant(c.env, id)) return c.json({ error: `tenant ${id} is configured in AUTH_TOKENS; pick another id` }, 409);
    const r = await tenantStub(c.env, id).create(name, quotas ? toQuotas(quotas) : null, undefined, jurisdiction);
    if (r.ok) {
      await tenantIndexStub(c.env).indexUpsert({ id, name, created_at: Date.parse(r.value.created_at!), deleted_at: null, jurisdiction });
    } else {
      await repairIndex(c.env, id);
    }
    return answer(c, r, 201);
  }));

  app.get("/admin/tenants", guarded(async (c) => {
    const rows: TenantSummary[] = (await tenantIndexStub(c.env).indexList()).map((r) => ({
      id: r.id, name: r.name, source: "directory", created_at: new Date(r.created_at).toISOString(),
      deleted_at: r.deleted_at === null ? null : new Date(r.deleted_at).toISOString(),
    }));
    const statics = new Set(parseStaticTokens(c.env.AUTH_TOKENS).values());
    if (isOpen(c.env)) statics.add(OPEN_TENANT);
    for (const id of statics) rows.push({ id, name: "", source: "static", created_at: null, deleted_at: null });
    rows.sort((a, b) => a.id.localeCompare(b.id));
    return c.json({ tenants: rows });
  }));

  app.get("/admin/tenants/:id", guarded(async (c, id) => answer(c, await tenantStub(c.env, id).describe(isStaticTenant(c.env, id)))));

  app.delete("/admin/tenants/:id", guarded(async (c, id) => {
    if (isStaticTenant(c.env, id)) return c.json({ error: `tenant ${id} is configured in AUTH_TOKENS: remove it there` }, 409);
    const r = await tenantStub(c.env, id).remove();
    forgetTenant(id); // this isolate's cached token checks; others within TOKEN_CACHE_MS
    if (r.ok) {
      const v = r.value;
      await tenantIndexStub(c.env).indexUpsert({ id, name: v.name, created_at: Date.parse(v.created_at!), deleted_at: Date.parse(v.deleted_at!) });
    } else {
      await repairIndex(c.env, id);
    }
    return answer(c, r);
  }));

  app.post("/admin/tenants/:id/tokens", guarded(async (c, id) => {
    if (isOpen(c.env)) return c.json({ error: OPEN_BROKER_REFUSAL }, 409);
    const body = await jsonBody(c, issueTokenSchema, true);
    if ("error" in body) return bodyError(c, body);
    const { label = "", expires_in_s, expires_at, allow = [], deny = [] } = body.value;
    const scopes = checkedScopes(allow, deny);
    if ("error" in scopes) return c.json({ error: scopes.error }, 400);
    const expiresAt = expires_in_s !== undefined ? Date.now() + expires_in_s * 1000 : expires_at !== undefined ? Date.parse(expires_at) : null;
    return answer(c, await tenantStub(c.env, id).issueToken(label, expiresAt, Date.now(), scopes), 201);
  }));

  app.get("/admin/tenants/:id/tokens", guarded(async (c, id) => {
    const r = await tenantStub(c.env, id).listTokens();
    return r.ok ? c.json({ tenant: id, tokens: r.value }) : c.json({ error: r.error }, r.status);
  }));

  app.delete("/admin/tenants/:id/tokens/:tokenId", guarded(async (c, id) => {
    const tokenId = c.req.param("tokenId") ?? "";
    if (!TOKEN_ID_RE.test(tokenId)) return c.json({ error: "token id must be 12 hex digits (the token_id issue answered)" }, 400);
    const r = await tenantStub(c.env, id).revokeToken(tokenId);
    forgetToken(id, tokenId); // this isolate's cached token checks; others within TOKEN_CACHE_MS
    return answer(c, r);
  }));

  app.put("/admin/tenants/:id/tokens/:tokenId/scopes", guarded(async (c, id) => {
    const tokenId = c.req.param("tokenId") ?? "";
    if (!TOKEN_ID_RE.test(tokenId)) return c.json({ error: "token id must be 12 hex digits (the token_id issue answered)" }, 400);
    const body = await jsonBody(c, tokenScopesSchema);
    if ("error" in body) return bodyError(c, body);
    const scopes = checkedScopes(body.value.allow, body.value.deny);
    if ("error" in scopes) return c.json({ error: scopes.error }, 400);
    const r = await tenantStub(c.env, id).setTokenScopes(tokenId, scopes);
    forgetToken(id, tokenId); // this isolate's cached checks; others within TOKEN_CACHE_MS, connections at their re-check
    return answer(c, r);
  }));

  app.put("/admin/tenants/:id/quotas", guarded(async (c, id) => {
    const body = await jsonBody(c, quotasSchema);
    if ("error" in body) return bodyError(c, body);
    const r = await tenantStub(c.env, id).putQuotas(toQuotas(body.value), isStaticTenant(c.env, id));
    return r.ok ? c.json({ tenant: id, quotas: r.value }) : c.json({ error: r.error }, r.status);
  }));

  app.put("/admin/tenants/:id/jurisdiction", guarded(async (c, id) => {
    const body = await jsonBody(c, jurisdictionBodySchema);
    if ("error" in body) return bodyError(c, body);
    const r = await tenantStub(c.env, id).setJurisdiction(body.value.jurisdiction);
    if (r.ok) await repairIndex(c.env, id);
    return answer(c, r);
  }));
}

/**
 * Wraps a handler: operator only (401 / 403 otherwise), a valid `:id` (400),
 * and a failing object call → 503 with the reason.
 */
function guarded(fn: (c: Ctx, id: string) => Promise<Response>): (c: Ctx) => Promise<Response> {
  return async (c) => {
    const access = await operatorAccess(c.env, c.req.header("authorization"));
    if (access.kind === "denied") return c.json({ error: access.error }, access.status, access.headers);
    if (access.kind !== "operator") return c.json({ error: "forbidden: /admin needs the operator token (ADMIN_TOKEN)" }, 403);
    const id = c.req.param("id");
    if (id !== undefined && !TENANT_ID_RE.test(id)) return c.json({ error: "tenant id must be 1-64 chars of [a-z0-9_-]" }, 400);
    try {
      return await fn(c, id ?? "");
    } catch (e) {
      return c.json({ error: `the tenant directory did not answer (ref ${logFault("/admin", e)})` }, 503, { "Retry-After": "1" });
    }
  };
}

/** An AdminResult as a JSON answer. */
function answer<T>(c: Ctx, r: AdminResult<T>, okStatus: ContentfulStatusCode = 200): Response {
  return r.ok ? c.json(r.value as object, okStatus) : c.json({ error: r.error }, r.status);
}

/** Scope lists validated with parseScopes (trimmed), or the ScopeError's message for a 400. */
function checkedScopes(allow: string[], deny: string[]): ScopeLists | { error: string } {
  try {
    parseScopes(allow, deny);
  } catch (e) {
    if (e instanceof ScopeError) return { error: e.message };
    throw e;
  }
  return { allow: allow.map((x) => x.trim()), deny: deny.map((x) => x.trim()) };
}
