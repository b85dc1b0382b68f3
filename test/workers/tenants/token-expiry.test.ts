/**
 * Issued tokens with an expiry (docs/tenants.md "Tokens"): refused like a
 * revoked token on all three transports once expired — new MortarMQ and
 * NATS connections and HTTP requests at once, open connections at their
 * next re-check (TENANT_REVALIDATE_MS, 300 ms in this project); the token
 * list shows expiry and last use (written at most once a minute).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { tenantStub } from "../../../objects/tenants/stub";
import { TenantStore } from "../../../objects/tenants/store";
import { ErrorCode, Op } from "../../../wire/mortar";
import { WsConn, connectFrame, expectErr, expectOk } from "../helpers/mortar-ws";
import { admin, mortarSession, mq9As, natsCheckedOnce, natsSession, recheck, sleep, tenantWithToken } from "./helpers";
import { MAX_TOKEN_LIFETIME_S } from "../../../wire/admin/tenants";

const testEnv = env as unknown as Env;

/** Issues a token of `tenant` that expires `inMs` from now. */
async function expiringToken(tenant: string, inMs: number): Promise<{ token: string; tokenId: string; expiresAt: number }> {
  const expiresAt = Date.now() + inMs;
  const r = await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "short", expires_at: new Date(expiresAt).toISOString() });
  if (r.status !== 201) throw new Error(`issue: ${r.status} ${JSON.stringify(r.json)}`);
  expect(r.json.expires_at).toBe(new Date(expiresAt).toISOString());
  return { token: r.json.token, tokenId: r.json.token_id, expiresAt };
}

/** Sleeps until `t` (unix ms) has passed. */
async function until(t: number): Promise<void> {
  const wait = t - Date.now() + 20;
  if (wait > 0) await sleep(wait);
}

describe("token expiry", () => {
  it("MortarMQ: works until it expires; then new CONNECTs get AUTH_FAILED 'token expired' and the open connection closes at its next re-check", async () => {
    const { tenant } = await tenantWithToken("ex-mortar");
    const { token, expiresAt } = await expiringToken(tenant, 3000);
    const { stub, conn } = await mortarSession();
    await conn.connect(token);
    await recheck(stub); // re-checked before the expiry: still valid
    conn.send([{ op: Op.PING }]);
    expectOk((await conn.take(1))[0], Op.PING);

    await until(expiresAt);
    const fresh = await WsConn.open();
    fresh.send([connectFrame(token)]);
    const refused = expectErr((await fresh.take(1))[0], ErrorCode.AUTH_FAILED, Op.CONNECT);
    expect(new TextDecoder().decode(refused.message)).toMatch(/token expired at /);
    expect((await fresh.waitClosed()).code).toBe(1008);

    await recheck(stub);
    const closing = expectErr((await conn.take(1))[0], ErrorCode.AUTH_FAILED);
    expect(new TextDecoder().decode(closing.message)).toMatch(/token expired/);
    expect((await conn.waitClosed()).code).toBe(1008);
  }, 15_000);

  it("NATS: works until it expires; then CONNECT gets -ERR 'Authorization Violation' and the open connection is closed at its next re-check", async () => {
    const { tenant } = await tenantWithToken("ex-nats");
    const { token, expiresAt } = await expiringToken(tenant, 3000);
    const { stub, conn } = await natsCheckedOnce(token);

    await until(expiresAt);
    const fresh = await natsSession();
    fresh.conn.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nPING\r\n`);
    await fresh.conn.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(await fresh.conn.closed).toBe(1008);
    // The bridge's bearer on the upgrade is refused with 401 too.
    const ns = testEnv.NATS_SESSION;
    const upgrade = await ns.get(ns.newUniqueId()).fetch("http://broker/nats", { headers: { Upgrade: "websocket", Authorization: `Bearer ${token}` } });
    expect([upgrade.status, await upgrade.text()]).toEqual([401, "token expired"]);

    await recheck(stub);
    await conn.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(await conn.closed).toBe(1008);
  }, 15_000);

  it("HTTP: requests work until it expires, then 401 'unauthorized: token expired at …' (mq9 and /stats); a token without expiry keeps working", async () => {
    const { tenant, token: forever } = await tenantWithToken("ex-http");
    const { token, expiresAt } = await expiringToken(tenant, 1200);
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.ex" })).body.error).toBe("");
    expect((await mq9As(token, "$mq9.AI.MSG.SEND.box.ex", "hi")).body).toEqual({ error: "", msg_id: 0 });
    await until(expiresAt);
    const r = await mq9As(token, "$mq9.AI.MSG.SEND.box.ex", "late");
    expect([r.status, r.body.error]).toEqual([401, expect.stringMatching(/^unauthorized: token expired at \d{4}-/)]); // the same words as /stats
    const stats = await admin("GET", "/stats", undefined, token);
    expect(stats.status).toBe(401);
    expect(stats.json.error).toMatch(/^unauthorized: token expired at /);
    expect((await mq9As(forever, "$mq9.AI.MSG.SEND.box.ex", "still")).body).toEqual({ error: "", msg_id: 1 });
  }, 15_000);

  it("issue validates the expiry; the list shows expiry and last use, written at most once a minute", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("ex-list");
    for (const [body, re] of [
      [{ expires_in_s: 0 }, /expires_in_s: must be ≥ 1 second/],
      [{ expires_in_s: 1.5 }, /expires_in_s: must be a whole number/],
      [{ expires_at: "tomorrow" }, /expires_at: must be an ISO 8601 time/],
      [{ expires_at: "2020-01-01T00:00:00Z" }, /expires_at: 2020-01-01T00:00:00.000Z is not in the future/],
      [{ expires_in_s: 60, expires_at: "2999-01-01T00:00:00Z" }, /give expires_in_s or expires_at, not both/],
      // the two ways to say when agree on the longest lifetime (MAX_TOKEN_LIFETIME_S, 10 years)
      [{ expires_in_s: MAX_TOKEN_LIFETIME_S + 1 }, /^expires_in_s: must be at most 10 years \(316224000 s\)$/],
      [{ expires_at: "9999-12-31T00:00:00Z" }, /^expires_at: 9999-12-31T00:00:00.000Z is more than 10 years \(316224000 s\) from now$/],
    ] as const) {
      const r = await admin("POST", `/admin/tenants/${tenant}/tokens`, body);
      expect([r.status, r.json.error]).toEqual([400, expect.stringMatching(re)]);
    }
    const before = Date.now();
    const longest = await admin("POST", `/admin/tenants/${tenant}/tokens`, { expires_at: new Date(Date.now() + MAX_TOKEN_LIFETIME_S * 1000 - 60_000).toISOString() });
    expect(longest.status).toBe(201);
    const monthly = await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "monthly", expires_in_s: 30 * 86_400 });
    expect(monthly.status).toBe(201);
    const exp = Date.parse(monthly.json.expires_at);
    expect(exp).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000);

    let list = await admin("GET", `/admin/tenants/${tenant}/tokens`);
    expect(list.status).toBe(200);
    expect(list.json.tokens).toEqual(expect.arrayContaining([
      { token_id: tokenId, label: "test", created_at: expect.any(String), revoked_at: null, expires_at: null, last_used_at: null, allow: [], deny: [] },
      { token_id: monthly.json.token_id, label: "monthly", created_at: expect.any(String), revoked_at: null, expires_at: monthly.json.expires_at, last_used_at: null, allow: [], deny: [] },
    ]));
    const t0 = Date.now();
    expect((await admin("GET", "/stats", undefined, token)).status).toBe(200);
    list = await admin("GET", `/admin/tenants/${tenant}/tokens`);
    const used = list.json.tokens.find((t: { token_id: string }) => t.token_id === tokenId).last_used_at as string;
    expect(Date.parse(used)).toBeGreaterThanOrEqual(t0);
    // A second use within the minute writes nothing: the stored time stays.
    await sleep(20);
    expect((await admin("GET", "/stats", undefined, token)).status).toBe(200);
    list = await admin("GET", `/admin/tenants/${tenant}/tokens`);
    expect(list.json.tokens.find((t: { token_id: string }) => t.token_id === tokenId).last_used_at).toBe(used);
    expect(list.json.tokens.find((t: { token_id: string }) => t.token_id === monthly.json.token_id).last_used_at).toBeNull();
    expect((await admin("GET", `/admin/tenants/${tenant}`)).json.tokens).toEqual(list.json.tokens);
    expect((await admin("GET", "/admin/tenants/nobody-here/tokens")).status).toBe(404);
    expect((await admin("GET", `/admin/tenants/${tenant}/tokens`, undefined, token)).status).toBe(403);
  });

  it("a directory stored before token expiry existed gets the columns; its tokens keep working and never expire", async () => {
    const { tenant, tokenId } = await tenantWithToken("ex-old");
    const row = await runInDurableObject(tenantStub(testEnv, tenant), (_o, state) => {
      const sql = state.storage.sql;
      const old = sql.exec("SELECT token_id, hash, label, created_at, revoked_at FROM tokens").toArray();
      sql.exec("DROP TABLE tokens");
      sql.exec("CREATE TABLE tokens(token_id TEXT PRIMARY KEY, hash TEXT NOT NULL, label TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER)");
      for (const r of old) sql.exec("INSERT INTO tokens VALUES (?,?,?,?,?)", r.token_id, r.hash, r.label, r.created_at, r.revoked_at);
      return new TenantStore(state.storage).token(tokenId); // what a restarted object reads
    });
    expect(row).toMatchObject({ token_id: tokenId, label: "test", revoked_at: null, expires_at: null, last_used_at: null });
  });
});
