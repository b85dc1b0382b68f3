/**
 * The tenant admin API (docs/tenants.md "Admin API"): access, validation,
 * create / list / show / delete, token issue and revoke, quotas.
 */
import { SELF, createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { app } from "../../../worker/app";
import { tenantIndexStub, tenantStub } from "../../../objects/tenants/stub";
import { ADMIN, STATIC_TOKEN, admin, freshTenant, tenantWithToken } from "./helpers";

const testEnv = env as unknown as Env;

describe("admin API access", () => {
  it("no token → 401, a tenant's token → 403, the operator token → 200", async () => {
    const { token } = await tenantWithToken("acc");
    for (const [method, path] of [["GET", "/admin/tenants"], ["POST", "/admin/tenants"], ["GET", "/admin/tenants/x"], ["DELETE", "/admin/tenants/x"],
      ["POST", "/admin/tenants/x/tokens"], ["DELETE", "/admin/tenants/x/tokens/0123456789ab"], ["PUT", "/admin/tenants/x/quotas"]] as const) {
      const none = await admin(method, path, undefined, null);
      expect([path, none.status]).toEqual([path, 401]);
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect((await admin(method, path, undefined, "wrong-token")).status).toBe(401);
      expect((await admin(method, path, undefined, token)).status).toBe(403);
      expect((await admin(method, path, undefined, STATIC_TOKEN)).status).toBe(403);
    }
    expect((await admin("GET", "/admin/tenants")).status).toBe(200);
  });

  it("a well-formed token of a tenant that does not exist is refused and leaves no storage behind", async () => {
    const ghost = freshTenant("ghost");
    const token = `mmq.${ghost}.0123456789ab.${"A".repeat(43)}`;
    const r = await SELF.fetch("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", body: "{}", headers: { Authorization: `Bearer ${token}` } });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { error: string }).error).toBe("unauthorized: invalid token");
    const tables = await runInDurableObject(tenantStub(testEnv, ghost), (_o, state) =>
      state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").toArray().map((t) => t.name));
    expect(tables.filter((t) => !t.startsWith("_cf"))).toEqual([]);
  });

  it("an ADMIN_TOKEN stored with a trailing newline (`echo $T | wrangler secret put ADMIN_TOKEN`) still admits the operator; a blank one admits no one", async () => {
    const call = (token: string, adminToken: string) => app.fetch(new Request("http://broker/admin/tenants", { headers: { Authorization: `Bearer ${token}` } }),
      { ...testEnv, ADMIN_TOKEN: adminToken } as Env, createExecutionContext());
    expect((await call("op-secret", "op-secret\n")).status).toBe(200);
    expect((await call("op-secret", " op-secret \r\n")).status).toBe(200);
    expect((await call("op-secre", "op-secret\n")).status).toBe(401);
    const blank = await call("x", " \n");
    expect(blank.status).toBe(401); // still closed (fail closed), and no token is the operator's
  });

  it("a hosted broker (ADMIN_TOKEN set) with no token is closed, and /healthz says so", async () => {
    const h = await (await SELF.fetch("http://broker/healthz")).json() as { auth: string };
    expect(h.auth).toBe("tokens");
    const r = await SELF.fetch("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", body: "{}" });
    expect(r.status).toBe(401);
  });
});

describe("admin API validation", () => {
  it("400 for bad JSON, bad ids, unknown fields and bad quotas; 404 for unknown tenants and tokens; 409 for taken ids", async () => {
    expect((await admin("POST", "/admin/tenants", "{not json")).json.error).toMatch(/JSON/);
    const cases: [string, string, unknown, number, RegExp][] = [
      ["POST", "/admin/tenants", "{not json", 400, /JSON object/],
      ["POST", "/admin/tenants", {}, 400, /^id: /],
      ["POST", "/admin/tenants", { id: "Has Caps" }, 400, /^id: must be 1-64 chars/],
      ["POST", "/admin/tenants", { id: "ok", extra: 1 }, 400, /extra|Unrecognized/i],
      ["POST", "/admin/tenants", { id: "ok", quotas: { connections: 0 } }, 400, /^quotas\.connections: /],
      ["POST", "/admin/tenants", { id: "static-tenant" }, 409, /AUTH_TOKENS/],
      ["POST", "/admin/tenants", { id: "default" }, 409, /reserved/],
      ["GET", "/admin/tenants/Bad!", undefined, 400, /tenant id/],
      ["GET", `/admin/tenants/${freshTenant("none")}`, undefined, 404, /does not exist/],
      ["DELETE", `/admin/tenants/${freshTenant("none")}`, undefined, 404, /does not exist/],
      ["DELETE", "/admin/tenants/static-tenant", undefined, 409, /AUTH_TOKENS/],
      ["POST", `/admin/tenants/${freshTenant("none")}/tokens`, {}, 404, /does not exist/],
      ["PUT", `/admin/tenants/${freshTenant("none")}/quotas`, {}, 404, /does not exist/],
      ["PUT", "/admin/tenants/static-tenant/quotas", { mailboxes: -1 }, 400, /^mailboxes: /],
      ["PUT", "/admin/tenants/static-tenant/quotas", { mailboxes: 2.5 }, 400, /^mailboxes: /],
      ["DELETE", "/admin/tenants/static-tenant/tokens/nope", undefined, 400, /12 hex/],
    ];
    for (const [method, path, body, status, error] of cases) {
      const r = await admin(method, path, body);
      expect({ method, path, status: r.status, error: r.json.error }).toEqual({ method, path, status, error: expect.stringMatching(error) });
    }
    // Usage ranges outside what a date can hold are a bad range (400), not a crash (500).
    for (const q of ["to=99999999999999999999", "to=8640000000000000", "from=8639999999999999&to=8640000000000000", "from=1e999", "to=+275760-09-13T00:00:00Z"]) {
      const r = await admin("GET", `/admin/tenants/static-tenant/usage?${q}`);
      expect({ q, status: r.status, error: r.json.error }).toEqual({ q, status: 400, error: expect.stringMatching(/from and to must be/) });
    }
    const { tenant, tokenId } = await tenantWithToken("val");
    expect((await admin("POST", "/admin/tenants", { id: tenant })).status).toBe(409);
    expect((await admin("DELETE", `/admin/tenants/${tenant}/tokens/ffffffffffff`)).status).toBe(404);
    expect((await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: 5 })).status).toBe(400);
    expect((await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`)).status).toBe(200);
  });
});

describe("tenants, tokens, quotas", () => {
  it("create → show → list; a token is shown once and stored only as its SHA-256", async () => {
    const id = freshTenant("life");
    const created = await admin("POST", "/admin/tenants", { id, name: "Life Inc.", quotas: { mailboxes: 5 } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ id, name: "Life Inc.", source: "directory", deleted_at: null, tokens: [] });
    expect(created.json.quotas).toEqual({ publish_msgs_per_s: null, publish_bytes_per_s: null, storage_bytes: null, connections: null, mailboxes: 5, mailbox_creates_per_s: null, partitions: null });
    const issued = await admin("POST", `/admin/tenants/${id}/tokens`, { label: "ci" });
    expect(issued.status).toBe(201);
    const token = issued.json.token as string;
    expect(token).toMatch(new RegExp(`^mmq\\.${id}\\.${issued.json.token_id}\\.[A-Za-z0-9_-]{43}$`));
    const second = await admin("POST", `/admin/tenants/${id}/tokens`, ""); // an empty body is allowed
    expect(second.status).toBe(201);
    expect(second.json.token).not.toBe(token);

    const shown = await admin("GET", `/admin/tenants/${id}`);
    const listed = shown.json.tokens.map((t: { token_id: string; label: string; revoked_at: unknown }) => [t.token_id, t.label, t.revoked_at]);
    expect(listed).toHaveLength(2);
    expect(listed).toEqual(expect.arrayContaining([[issued.json.token_id, "ci", null], [second.json.token_id, "", null]]));
    expect(JSON.stringify(shown.json)).not.toContain(token.split(".")[3]);
    // The object stores the hash, never the token or its secret.
    const rows = await runInDurableObject(tenantStub(testEnv, id), (_o, state) =>
      state.storage.sql.exec<{ token_id: string; hash: string }>("SELECT token_id, hash FROM tokens").toArray());
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(rows.find((r) => r.token_id === issued.json.token_id)?.hash).toBe(digest);
    const dump = await runInDurableObject(tenantStub(testEnv, id), (_o, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM tokens").toArray()) + JSON.stringify(state.storage.sql.exec("SELECT * FROM meta").toArray()));
    expect(dump).not.toContain(token.split(".")[3]);

    const list = await admin("GET", "/admin/tenants");
    expect(list.json.tenants).toContainEqual(expect.objectContaining({ id, name: "Life Inc.", source: "directory", deleted_at: null }));
    expect(list.json.tenants).toContainEqual(expect.objectContaining({ id: "static-tenant", source: "static" }));
  });

  it("quotas: PUT replaces them all; static tenants may have quotas too", async () => {
    const { tenant } = await tenantWithToken("q");
    const put = await admin("PUT", `/admin/tenants/${tenant}/quotas`, { publish_msgs_per_s: 100, storage_bytes: 1_000_000 });
    expect(put.json).toEqual({ tenant, quotas: { publish_msgs_per_s: 100, publish_bytes_per_s: null, storage_bytes: 1_000_000, connections: null, mailboxes: null, mailbox_creates_per_s: null, partitions: null } });
    await admin("PUT", `/admin/tenants/${tenant}/quotas`, { connections: 3 });
    expect((await admin("GET", `/admin/tenants/${tenant}`)).json.quotas).toEqual({ publish_msgs_per_s: null, publish_bytes_per_s: null, storage_bytes: null, connections: 3, mailboxes: null, mailbox_creates_per_s: null, partitions: null });
    expect((await admin("PUT", "/admin/tenants/static-tenant/quotas", {})).status).toBe(200);
    expect((await admin("GET", "/admin/tenants/static-tenant")).json).toMatchObject({ id: "static-tenant", source: "static", created_at: null });
  });

  it("delete: every token stops working, a purge is scheduled, the id is not reused while it runs, the tenant is listed as deleted", async () => {
    const { tenant, token } = await tenantWithToken("del");
    expect((await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    const del = await admin("DELETE", `/admin/tenants/${tenant}`);
    expect(del.status).toBe(200);
    expect(del.json.deleted_at).toEqual(expect.any(String));
    expect(del.json.tokens.every((t: { revoked_at: string | null }) => t.revoked_at !== null)).toBe(true);
    expect((await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await admin("POST", `/admin/tenants/${tenant}/tokens`, {})).status).toBe(404);
    expect(del.json.purge).toMatchObject({ state: "waiting", phase: "waiting" });
    const repeated = await admin("DELETE", `/admin/tenants/${tenant}`); // idempotent: the document with the purge's progress
    expect([repeated.status, repeated.json.deleted_at]).toEqual([200, del.json.deleted_at]);
    expect((await admin("DELETE", `/admin/tenants/${freshTenant("never")}`)).status).toBe(404);
    const again = await admin("POST", "/admin/tenants", { id: tenant });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatch(/belonged to a deleted tenant whose data is still being purged/);
    expect((await admin("GET", "/admin/tenants")).json.tenants).toContainEqual(expect.objectContaining({ id: tenant, deleted_at: expect.any(String) }));
  });

  it("a create or delete whose index write was lost is repaired by the operator's retry (409 / the repeated DELETE)", async () => {
    const tenant = freshTenant("idx");
    expect((await admin("POST", "/admin/tenants", { id: tenant })).status).toBe(201);
    const listed = async () => ((await admin("GET", "/admin/tenants")).json.tenants as { id: string; deleted_at: string | null }[]).find((t) => t.id === tenant);
    // as if the index call after the tenant object's commit had failed (the answer was 503)
    await runInDurableObject(tenantIndexStub(testEnv), (_o, state) => {
      state.storage.sql.exec("DELETE FROM directory WHERE id = ?", tenant);
    });
    expect(await listed()).toBeUndefined();
    expect((await admin("POST", "/admin/tenants", { id: tenant })).status).toBe(409);
    expect(await listed()).toEqual(expect.objectContaining({ id: tenant, deleted_at: null }));
    expect((await admin("DELETE", `/admin/tenants/${tenant}`)).status).toBe(200);
    const row = (await tenantIndexStub(testEnv).indexList()).find((r) => r.id === tenant)!;
    await tenantIndexStub(testEnv).indexUpsert({ ...row, deleted_at: null }); // the delete's index write lost
    expect((await listed())!.deleted_at).toBeNull();
    expect((await admin("DELETE", `/admin/tenants/${tenant}`)).status).toBe(200);
    expect((await listed())!.deleted_at).toEqual(expect.any(String));
  });

  it("a revoked token is refused at once for HTTP; revoking again is idempotent", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("rev");
    expect((await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    const r1 = await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`);
    expect(r1.json.revoked_at).toEqual(expect.any(String));
    const res = await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toMatch(/revoked/);
    expect((await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`)).json.revoked_at).toBe(r1.json.revoked_at);
    expect(ADMIN).toBeTruthy();
  });
});
