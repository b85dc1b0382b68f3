/**
 * Issue 27 item 6, data residency: a tenant created with `jurisdiction: eu`
 * shows it in its document and the index row; every per-tenant object it
 * uses is addressed through `namespace.jurisdiction("eu")` (checked with a
 * counting env whose namespaces record that call — the local runtime has no
 * jurisdictions and falls back to the plain namespace, which the second
 * test exercises end to end); the jurisdiction cannot change while the
 * tenant holds data, and can while it holds none.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";
import { parseTenantJurisdictions } from "../../../objects/shared/jurisdiction";
import { ADMIN, admin, freshTenant, mq9As } from "./helpers";
import type { IssuedToken } from "../../../wire/admin/tenants";

const base = env as unknown as Env;

/** `base` whose namespaces record `jurisdiction(j)` calls (per binding) and answer the namespace itself, as a runtime with jurisdictions would answer a restricted one. */
function jurisdictionEnv(): { env: Env; used: Map<string, string[]>; plain: Map<string, number> } {
  const used = new Map<string, string[]>();
  const plain = new Map<string, number>();
  const wrapped: Record<string, unknown> = { ...(base as unknown as Record<string, unknown>) };
  for (const [binding, v] of Object.entries(base as unknown as Record<string, unknown>)) {
    const ns = v as DurableObjectNamespace;
    if (typeof ns !== "object" || ns === null || typeof ns.idFromName !== "function") continue;
    wrapped[binding] = new Proxy(ns, {
      get(target, prop) {
        if (prop === "jurisdiction") {
          return (j: string) => {
            used.set(binding, [...(used.get(binding) ?? []), j]);
            return target;
          };
        }
        if (prop === "idFromName") return (n: string) => { plain.set(binding, (plain.get(binding) ?? 0) + 1); return target.idFromName(n); };
        const f = Reflect.get(target, prop) as unknown;
        return typeof f === "function" ? (f as (...a: unknown[]) => unknown).bind(target) : f;
      },
    });
  }
  return { env: wrapped as unknown as Env, used, plain };
}

async function call(e: Env, path: string, init: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://broker${path}`, init), e, ctx);
  await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return res;
}

describe("tenant jurisdiction", () => {
  it("objects of an eu tenant are created through the eu namespace", async () => {
    const { env: e, used } = jurisdictionEnv();
    const tenant = freshTenant("eu");
    const headers = { Authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const created = await call(e, "/admin/tenants", { method: "POST", headers, body: JSON.stringify({ id: tenant, jurisdiction: "eu" }) });
    expect(created.status).toBe(201);
    const doc = await admin("GET", `/admin/tenants/${tenant}`);
    expect(doc.json.jurisdiction).toBe("eu");
    const issued = (await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "t" })).json as IssuedToken;
    used.clear();

    const auth = { Authorization: `Bearer ${issued.token}` };
    const box = await call(e, "/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", headers: auth, body: JSON.stringify({ name: "eu.inbox" }) });
    expect(box.status).toBe(200);
    expect((await call(e, "/mq9/$mq9.AI.MSG.SEND.eu.inbox", { method: "POST", headers: auth, body: "hello" })).status).toBe(200);
    expect((await call(e, "/v0/topics", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "orders", partitions: 2 }) })).status).toBeLessThan(300);
    expect((await call(e, "/v0/topics/orders/partitions/1/records", { method: "POST", headers: auth, body: JSON.stringify({ value: "v" }) })).status).toBe(201);

    for (const binding of ["MAILBOX", "MAILBOX_INDEX", "REGISTRY", "PARTITION"]) {
      expect(used.get(binding), binding).toBeDefined();
      expect(new Set(used.get(binding)), binding).toEqual(new Set(["eu"]));
    }
    // The directory (which stores the jurisdiction) stays outside it.
    expect(used.get("TENANTS")).toBeUndefined();

    // A tenant without one is never restricted.
    const other = freshTenant("plain");
    expect((await admin("POST", "/admin/tenants", { id: other })).json.jurisdiction).toBeNull();
  });

  it("works on the local runtime (no jurisdictions: the plain namespace, one warning); a change is refused while the tenant holds data", async () => {
    const tenant = freshTenant("eu");
    expect((await admin("POST", "/admin/tenants", { id: tenant, jurisdiction: "eu" })).status).toBe(201);
    expect((await admin("POST", "/admin/tenants", { id: freshTenant("x"), jurisdiction: "mars" })).status).toBe(400);
    const issued = (await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "t" })).json as IssuedToken;
    expect((await mq9As(issued.token, "$mq9.AI.MAILBOX.CREATE", { name: "kept" })).status).toBe(200);
    expect((await mq9As(issued.token, "$mq9.AI.MSG.SEND.kept", "x")).status).toBe(200);

    // Holds a mailbox (and its bytes, once the pipeline reported them): 409.
    let r = await admin("PUT", `/admin/tenants/${tenant}/jurisdiction`, { jurisdiction: null });
    for (let i = 0; i < 50 && r.status !== 409; i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await admin("PUT", `/admin/tenants/${tenant}/jurisdiction`, { jurisdiction: null });
    }
    expect(r.status).toBe(409);
    expect(r.json.error).toContain("holds data");
    expect((await admin("PUT", `/admin/tenants/${tenant}/jurisdiction`, { jurisdiction: "eu" })).status).toBe(200); // unchanged: fine

    // An empty tenant may move.
    const empty = freshTenant("empty");
    expect((await admin("POST", "/admin/tenants", { id: empty })).status).toBe(201);
    const moved = await admin("PUT", `/admin/tenants/${empty}/jurisdiction`, { jurisdiction: "fedramp" });
    expect(moved.status).toBe(200);
    expect(moved.json.jurisdiction).toBe("fedramp");
    expect((await admin("PUT", `/admin/tenants/nobody-${empty}/jurisdiction`, { jurisdiction: "eu" })).status).toBe(404);
  });

  it("TENANT_JURISDICTION names static tenants' jurisdictions", () => {
    expect([...parseTenantJurisdictions(" acme=eu, gov=fedramp-high ,bad=mars,,x")]).toEqual([["acme", "eu"], ["gov", "fedramp-high"]]);
  });
});
