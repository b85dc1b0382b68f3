/** The isolate's cache of issued-token checks (objects/tenants/token-cache.ts). */
import { describe, expect, it } from "vitest";
import { TokenCache } from "../../objects/tenants/token-cache";
import { DEFAULT_TENANT_STATE_MS, DEFAULT_TOKEN_CACHE_MS, tenantStateMs, tokenCacheMs } from "../../objects/tenants/config";

const T = { tenant: "acme", tokenId: "0123456789ab" };

describe("tokenCacheMs", () => {
  it.each([
    [undefined, DEFAULT_TOKEN_CACHE_MS], ["", DEFAULT_TOKEN_CACHE_MS], [" ", DEFAULT_TOKEN_CACHE_MS], ["0", 0], ["250", 250],
    ["-1", DEFAULT_TOKEN_CACHE_MS], ["1.5", DEFAULT_TOKEN_CACHE_MS], ["abc", DEFAULT_TOKEN_CACHE_MS],
  ])("%j → %d", (v, ms) => expect(tokenCacheMs({ TOKEN_CACHE_MS: v })).toBe(ms));
});

describe("tenantStateMs (worker/quota.ts: a static or open tenant's quota state for HTTP)", () => {
  it.each([
    [undefined, DEFAULT_TENANT_STATE_MS], ["", DEFAULT_TENANT_STATE_MS], ["0", 0], ["1000", 1000], ["-1", DEFAULT_TENANT_STATE_MS], ["2s", DEFAULT_TENANT_STATE_MS],
  ])("%j → %d", (v, ms) => expect(tenantStateMs({ TENANT_STATE_MS: v })).toBe(ms));

  it("defaults to the token cache's bound, 5 s", () => expect(DEFAULT_TENANT_STATE_MS).toBe(DEFAULT_TOKEN_CACHE_MS));
});

describe("TokenCache", () => {
  it("answers within the TTL and not at or after it", () => {
    const c = new TokenCache();
    c.set("h", T, 1_000, 5_000);
    expect(c.get("h", 5_999)).toMatchObject(T);
    expect(c.get("h", 6_000)).toBeUndefined();
    expect(c.size).toBe(0); // the stale entry is dropped
  });

  it("never past the token's expiry; a TTL of 0 or an expired token keeps nothing", () => {
    const c = new TokenCache();
    c.set("h", T, 1_000, 5_000, 1_200);
    expect(c.get("h", 1_199)).toBeDefined();
    expect(c.get("h", 1_200)).toBeUndefined();
    c.set("z", T, 1_000, 0);
    c.set("x", T, 1_000, 5_000, 1_000);
    expect(c.size).toBe(0);
  });

  it("forgets one token or a whole tenant", () => {
    const c = new TokenCache();
    c.set("a", T, 0, 10);
    c.set("b", { tenant: "acme", tokenId: "ffffffffffff" }, 0, 10);
    c.set("c", { tenant: "beta", tokenId: "0123456789ab" }, 0, 10);
    c.forgetToken("acme", "0123456789ab");
    expect([c.get("a", 1), c.get("b", 1)?.tokenId, c.get("c", 1)?.tenant]).toEqual([undefined, "ffffffffffff", "beta"]);
    c.forgetTenant("acme");
    expect([c.get("b", 1), c.get("c", 1)?.tenant]).toEqual([undefined, "beta"]);
  });

  it("is bounded: the oldest entry goes first", () => {
    const c = new TokenCache(3);
    for (const k of ["a", "b", "c", "d"]) c.set(k, T, 0, 10);
    expect(c.size).toBe(3);
    expect(["a", "b", "c", "d"].map((k) => c.get(k, 1) !== undefined)).toEqual([false, true, true, true]);
  });
});
