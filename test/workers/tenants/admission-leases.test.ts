/**
 * Issue 27 item 4: publish and mailbox-creation admission are leased per
 * Worker isolate, in leases that adapt to the observed rate — so a steady
 * stream of mq9 HTTP SENDs or CREATEs under a tenant's quotas makes about
 * one call per second to its TenantDirectory, not one per message. Counted
 * through a counting env (test/workers/helpers/call-budget.ts); the bound
 * is taken from the time the requests took (no wall-clock assertion).
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import { countingEnv } from "../helpers/call-budget";
import { tenantWithToken } from "./helpers";

async function post(env: Parameters<typeof app.fetch>[1], token: string, subject: string, body: string): Promise<number> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://broker/mq9/${subject}`, { method: "POST", body, headers: { Authorization: `Bearer ${token}` } }), env, ctx);
  await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return res.status;
}

describe("admission leases per isolate", () => {
  it("steady CREATEs and SENDs call the TenantDirectory about once a second", async () => {
    const { token } = await tenantWithToken("lease", { publish_msgs_per_s: 5000, mailbox_creates_per_s: 1000, mailboxes: 1000 });
    const { env, log } = countingEnv();
    expect(await post(env, token, "$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "warm" }))).toBe(200); // token check cached from here on
    const before = log.calls.get("TENANTS")?.length ?? 0;

    const t0 = Date.now();
    for (let i = 0; i < 40; i++) expect([i, await post(env, token, "$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: `box.${i}` }))]).toEqual([i, 200]);
    for (let i = 0; i < 100; i++) expect([-i, await post(env, token, `$mq9.AI.MSG.SEND.box.${i % 40}`, "m")]).toEqual([-i, 200]);
    const seconds = Math.ceil((Date.now() - t0) / 1000);

    const calls = (log.calls.get("TENANTS")?.length ?? 0) - before;
    // Start-up (leases grow from one token: 1, 10, 100, …) plus ~1 per second, plus token re-checks every TOKEN_CACHE_MS.
    console.log(`TenantDirectory calls: ${calls} over ${seconds} s for 140 requests`);
    expect(calls).toBeLessThanOrEqual(2 * seconds + 12);
    expect(calls).toBeLessThan(40 + 100); // not one per request
  }, 120_000);

  it("the creation rate still refuses past its burst", async () => {
    const { token } = await tenantWithToken("lease-rate", { mailbox_creates_per_s: 1 }); // bursts of 10
    const { env } = countingEnv();
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) statuses.push(await post(env, token, "$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: `r.${i}` })));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(10);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(12);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
  });
});
