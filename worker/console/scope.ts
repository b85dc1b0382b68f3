/**
 * Access for the console's tenant-scoped routes (docs/console.md "APIs"),
 * the same rules as `/stats` and the group API (worker/admin/access.ts): a
 * tenant token → its own tenant (`?tenant=` naming another → 403); the
 * operator token or an open broker → `?tenant=` (default `default`); no or
 * a bad token → 401. A failing object call → 503 with the reason.
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { operatorAccess, scopedTenant, type Access } from "../admin/access";
import { objectsUnavailable } from "../admin/unavailable";

export type Ctx = Context<{ Bindings: Env }>;

/** What a scoped handler gets: the tenant the request is about and who asks. */
export interface TenantScope {
  tenant: string;
  access: Exclude<Access, { kind: "denied" }>;
}

/** Wraps a handler with the access check, the tenant and the 503 of a failing object call. */
export function tenantRoute(fn: (c: Ctx, s: TenantScope) => Promise<Response>): (c: Ctx) => Promise<Response> {
  return async (c) => {
    const access = await operatorAccess(c.env, c.req.header("authorization"));
    if (access.kind === "denied") return c.json({ error: access.error }, access.status, access.headers);
    const t = await scopedTenant(c.env, access, c.req.query("tenant"));
    if ("error" in t) return c.json({ error: t.error }, t.status);
    try {
      return await fn(c, { tenant: t.tenant, access });
    } catch (e) {
      return objectsUnavailable(c, "console API", e);
    }
  };
}

/**
 * A whole-number query parameter in [min, max], `dflt` when absent; null
 * (the route answers 400 naming the range) when it is not a whole number in
 * the range — above `max` too: a listing never returns silently fewer than
 * it was asked for (docs/console.md "APIs").
 */
export function intParam(v: string | undefined, dflt: number, min: number, max: number): number | null {
  if (v === undefined || v === "") return dflt;
  if (!/^\d{1,16}$/.test(v)) return null;
  const n = Number(v);
  return n < min || n > max ? null : n;
}
