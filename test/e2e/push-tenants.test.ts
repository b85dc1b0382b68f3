/**
 * Push delivery and tenants (issue 17, docs/push.md "Limits"): a broker
 * with two tenants' tokens, PUSH_MAX_SUBSCRIPTIONS=2 and
 * PUSH_MAX_ATTEMPTS_PER_S=20. Tenants never see or touch each other's
 * subscriptions, each has its own limits, and one tenant's throttled
 * pushes do not slow the other's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { PushReceiver } from "../fixtures/push-receiver";
import { until } from "../fixtures/until";

const ACME = "tok-acme-push";
const BETA = "tok-beta-push";
const RATE = 20;
const ctx = useLocalBroker("push-tenants", {
  vars: {
    AUTH_TOKENS: `${ACME}:acme,${BETA}:beta`, PUSH_ALLOW_LOOPBACK: "1", PUSH_MAX_SUBSCRIPTIONS: "2",
    PUSH_MAX_ATTEMPTS_PER_S: String(RATE), // and the default TELEMETRY_FLUSH_MS (10 s): the limit must not wait for the gauge
  },
});

type Body = { error: string } & Record<string, any>;
async function mq9(token: string, subject: string, payload: unknown = {}): Promise<{ status: number; body: Body; retryAfter: string | null }> {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  const res = await fetch(`${ctx.broker.url}/mq9/${subject}`, { method: "POST", body, headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Body, retryAfter: res.headers.get("retry-after") };
}

let receiver: PushReceiver;
beforeAll(async () => {
  receiver = await new PushReceiver().start();
});
afterAll(async () => {
  await receiver?.close();
});

describe("push subscriptions per tenant", () => {
  it("the same address in two tenants: each sees, deletes and receives only its own", async () => {
    for (const t of [ACME, BETA]) expect((await mq9(t, "$mq9.AI.MAILBOX.CREATE", { name: "shared.box", ttl: 0 })).body.error).toBe("");
    const a = (await mq9(ACME, "$mq9.AI.PUSH.CREATE.shared.box", { group_name: "g", url: receiver.url("/acme") })).body;
    expect(a.error).toBe("");
    receiver.secrets.set(a.push_id, a.secret);
    expect((await mq9(BETA, "$mq9.AI.PUSH.LIST.shared.box")).body.pushes).toEqual([]);
    expect((await mq9(BETA, "$mq9.AI.PUSH.DELETE.shared.box", { push_id: a.push_id })).body.error).toBe("push subscription not found");
    expect((await mq9(BETA, "$mq9.AI.MSG.FETCH.shared.box", { group_name: "g", config: { max_wait_ms: 0 } })).body.error).toBe(""); // beta's own group g is not pushed
    await mq9(BETA, "$mq9.AI.MSG.SEND.shared.box", "for beta");
    await mq9(ACME, "$mq9.AI.MSG.SEND.shared.box", "for acme");
    await receiver.until(() => receiver.requests.length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.requests.map((q) => [q.body.toString(), q.signatureOk])).toEqual([["for acme", true]]);
    expect((await mq9(ACME, "$mq9.AI.PUSH.LIST.shared.box")).body.pushes.map((p: Body) => [p.push_id, p.delivered])).toEqual([[a.push_id, 1]]);
    expect((await mq9(ACME, "$mq9.AI.PUSH.DELETE.shared.box", { push_id: a.push_id })).body.error).toBe("");
  });

  it("PUSH_MAX_SUBSCRIPTIONS per tenant: the next CREATE is refused 429 until one is deleted; the other tenant is unaffected", async () => {
    for (const t of [ACME, BETA]) expect((await mq9(t, "$mq9.AI.MAILBOX.CREATE", { name: "limits.box", ttl: 0 })).body.error).toBe("");
    const ids: string[] = [];
    // the subscription deleted by the first test freed its slot at once
    for (const g of ["g0", "g1"]) {
      const r = await mq9(ACME, "$mq9.AI.PUSH.CREATE.limits.box", { group_name: g, url: receiver.url("/limits") });
      expect(r.body.error).toBe("");
      ids.push(r.body.push_id);
    }
    const third = await mq9(ACME, "$mq9.AI.PUSH.CREATE.limits.box", { group_name: "g9", url: receiver.url("/limits") });
    expect(third.status).toBe(429);
    expect(third.body.error).toBe("push subscription limit reached: the tenant has 2 push subscriptions, limit 2; nothing was created");
    expect(Number(third.retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await mq9(BETA, "$mq9.AI.PUSH.CREATE.limits.box", { group_name: "b", url: receiver.url("/beta") })).body.error).toBe("");
    // a DELETE frees its slot at once, not after the next gauge report
    expect((await mq9(ACME, "$mq9.AI.PUSH.DELETE.limits.box", { push_id: ids[0] })).body.error).toBe("");
    expect((await mq9(ACME, "$mq9.AI.PUSH.CREATE.limits.box", { group_name: "g9", url: receiver.url("/limits") })).body.error).toBe("");
    const fourth = await mq9(ACME, "$mq9.AI.PUSH.CREATE.limits.box", { group_name: "g8", url: receiver.url("/limits") });
    expect(fourth.body.error).toBe("push subscription limit reached: the tenant has 2 push subscriptions, limit 2; nothing was created");
    const left = (await mq9(ACME, "$mq9.AI.PUSH.LIST.limits.box")).body.pushes as Body[];
    expect(left.map((p) => p.group_name)).toEqual(["g1", "g9"]);
    for (const p of left) expect((await mq9(ACME, "$mq9.AI.PUSH.DELETE.limits.box", { push_id: p.push_id })).body.error).toBe("");
  });

  it("PUSH_MAX_ATTEMPTS_PER_S paces a tenant's attempts (none fails), and the other tenant's pushes go through meanwhile", async () => {
    const r = await new PushReceiver().start();
    try {
      for (const t of [ACME, BETA]) {
        expect((await mq9(t, "$mq9.AI.MAILBOX.CREATE", { name: "rate.box", ttl: 0 })).body.error).toBe("");
        for (let i = 0; i < (t === ACME ? 60 : 10); i++) await mq9(t, "$mq9.AI.MSG.SEND.rate.box", `${t === ACME ? "a" : "b"}${i}`);
      }
      expect((await mq9(ACME, "$mq9.AI.PUSH.CREATE.rate.box", { group_name: "r", url: r.url("/a"), deliver: "earliest", concurrency: 16 })).body.error).toBe(""); // the slots the test before freed
      await new Promise((res) => setTimeout(res, 300)); // acme uses up its burst first
      expect((await mq9(BETA, "$mq9.AI.PUSH.CREATE.rate.box", { group_name: "r", url: r.url("/b"), deliver: "earliest", concurrency: 16 })).body.error).toBe("");
      await r.until(() => r.requests.length === 70, 30_000);
      const a = r.requests.filter((q) => q.body.toString().startsWith("a"));
      const b = r.requests.filter((q) => q.body.toString().startsWith("b"));
      // at most burst (one second of the rate) + rate × elapsed: 60 attempts need ≥ (60 − 20) / 20 s
      expect(a.at(-1)!.at - a[0]!.at).toBeGreaterThanOrEqual(((60 - RATE) / RATE) * 1000 - 150);
      for (const q of a) expect(a.filter((x) => x.at <= q.at).length).toBeLessThanOrEqual(RATE + (RATE * (q.at - a[0]!.at)) / 1000 + 1);
      expect(b.at(-1)!.at).toBeLessThan(a.at(-1)!.at); // beta's own budget: not queued behind acme's
      expect((await mq9(ACME, "$mq9.AI.PUSH.LIST.rate.box")).body.pushes[0]).toMatchObject({ failed: 0 });
      await until(async () => (await mq9(ACME, "$mq9.AI.PUSH.LIST.rate.box")).body.pushes[0].delivered === 60, 5_000, 100);
    } finally {
      await r.close();
    }
  });
});
