/**
 * The isolate's cache of issued-token checks (objects/tenants/token-cache.ts;
 * docs/tenants.md "Token checks"), TOKEN_CACHE_MS 500 in this project: HTTP
 * requests with a good token do not ask the TenantDirectory again within the
 * bound; a revocation made elsewhere (here: on the directory itself, as
 * another isolate's admin API would) is refused within it; one made through
 * this isolate's admin API, and a token's expiry, at once.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { tenantStub } from "../../../objects/tenants/stub";
import { TenantDirectory } from "../../../objects/tenants/TenantDirectory";
import { admin, mq9As, sleep, tenantWithToken } from "./helpers";

const testEnv = env as unknown as Env;
const CACHE_MS = 500;
const CREATE = "$mq9.AI.MAILBOX.CREATE";

/** Counts `authenticate` calls TenantDirectories serve while `fn` runs (RPC resolves methods on the class, so the prototype is wrapped). */
async function authCalls(fn: () => Promise<void>): Promise<number> {
  const proto = TenantDirectory.prototype;
  const original = proto.authenticate;
  let calls = 0;
  proto.authenticate = function (this: TenantDirectory, ...args: Parameters<TenantDirectory["authenticate"]>) {
    calls++;
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.authenticate = original;
  }
  return calls;
}

describe("issued-token checks cached per isolate", () => {
  it("HTTP requests ask the directory once per TOKEN_CACHE_MS, not once each", async () => {
    const { token } = await tenantWithToken("tc-calls");
    const t0 = Date.now();
    const calls = await authCalls(async () => {
      for (let i = 0; i < 10; i++) expect((await mq9As(token, CREATE, {})).status).toBe(200);
    });
    const elapsed = Date.now() - t0;
    // one check, then one more per bound that passed while the ten ran (a loaded machine can stretch them past 500 ms)
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(Math.floor(elapsed / CACHE_MS) + 1);
  });

  it("a revocation made on the directory (another isolate's admin API) is refused within TOKEN_CACHE_MS", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("tc-elsewhere");
    expect((await mq9As(token, CREATE, {})).status).toBe(200); // cached now
    const revokedAt = Date.now();
    expect((await tenantStub(testEnv, tenant).revokeToken(tokenId)).ok).toBe(true);
    let refusedAfter = -1;
    while (Date.now() - revokedAt < 5 * CACHE_MS) {
      const r = await mq9As(token, CREATE, {});
      if (r.status === 401) {
        expect(r.body.error).toBe("unauthorized: token revoked");
        refusedAfter = Date.now() - revokedAt;
        break;
      }
      await sleep(50);
    }
    expect(refusedAfter).toBeGreaterThanOrEqual(0);
    expect(refusedAfter).toBeLessThanOrEqual(CACHE_MS + 400); // the bound, plus one request's slack on a loaded machine
  });

  it("this isolate's admin API forgets a revoked token and a deleted tenant's tokens at once", async () => {
    const a = await tenantWithToken("tc-here");
    expect((await mq9As(a.token, CREATE, {})).status).toBe(200);
    expect((await admin("DELETE", `/admin/tenants/${a.tenant}/tokens/${a.tokenId}`)).status).toBe(200);
    expect((await mq9As(a.token, CREATE, {})).body.error).toBe("unauthorized: token revoked");
    const b = await tenantWithToken("tc-gone");
    expect((await mq9As(b.token, CREATE, {})).status).toBe(200);
    expect((await admin("DELETE", `/admin/tenants/${b.tenant}`)).status).toBe(200);
    expect((await mq9As(b.token, CREATE, {})).status).toBe(401);
  });

  it("a cached token is refused at its expiry, not up to the bound later", async () => {
    const { tenant } = await tenantWithToken("tc-expiry");
    const expiresAt = Date.now() + 300;
    const issued = await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "short", expires_at: new Date(expiresAt).toISOString() });
    expect(issued.status).toBe(201);
    expect((await mq9As(issued.json.token, CREATE, {})).status).toBe(200);
    await sleep(expiresAt - Date.now() + 20);
    const r = await mq9As(issued.json.token, CREATE, {});
    expect([r.status, r.body.error]).toEqual([401, expect.stringMatching(/^unauthorized: token expired at /)]);
  });
});
