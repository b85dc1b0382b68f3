/**
 * Mailbox limits for every tenant (#14 item 3; docs/tenants.md "Default
 * limits"), in the hosted project with MQ9_MAILBOX_CREATES_PER_S = 2 (bursts
 * of 20) and MQ9_MAILBOXES_PER_TENANT = 40: a tenant without quotas gets
 * the broker's defaults from the vars, a tenant's quotas override them,
 * refusals are 429 with Retry-After (or the mq9 error string over NATS) and
 * create nothing, and other tenants are not affected.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mq9As, sleep, tenantWithToken, STATIC_TOKEN } from "./helpers";
import { openNats } from "../helpers/nats-ws";

const RATE_REFUSAL = /^mailbox creation rate exceeded: (\d+) CREATEs per second per tenant \(bursts of (\d+)\); nothing was created, retry later$/;

/** `n` concurrent CREATEs of `<prefix>.<i>`; the names created and the refusals, with the elapsed time (s). */
async function flood(token: string, prefix: string, n: number) {
  const t0 = Date.now();
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: `${prefix}.${i}`, ttl: 0 }).then((r) => ({ i, r }))));
  const elapsedS = (Date.now() - t0) / 1000;
  return { elapsedS, ok: rs.filter((x) => x.r.status === 200).map((x) => x.i), refused: rs.filter((x) => x.r.status !== 200) };
}

/** Whether `<address>` exists for `token` (a QUERY answers 404 when it does not). */
async function exists(token: string, address: string): Promise<boolean> {
  const r = await mq9As(token, `$mq9.AI.MSG.QUERY.${address}`, {});
  if (r.status !== 200 && r.status !== 404) throw new Error(`query ${address}: ${r.status} ${r.body.error}`);
  return r.status === 200;
}

// The created mailboxes report to the counting pipeline 100 ms after their CREATE; let them finish
// before the file's objects are torn down (docs/testing.md "EnvironmentTeardownError").
afterAll(() => sleep(1_500));

describe("mailbox limits", { timeout: 60_000 }, () => {
  it("a tenant without quotas gets the broker's default creation rate (vars): a burst of 10 s of it, then 429 + Retry-After; refused CREATEs create nothing", async () => {
    const { token } = await tenantWithToken("rate");
    const { ok, refused, elapsedS } = await flood(token, "r", 30);
    expect(ok.length).toBeGreaterThanOrEqual(20);
    expect(ok.length).toBeLessThanOrEqual(20 + Math.ceil(2 * elapsedS) + 1); // the burst plus what refilled meanwhile
    expect(refused.length).toBe(30 - ok.length);
    for (const { r } of refused) {
      expect(r.status).toBe(429);
      expect(r.body).toEqual({ error: expect.stringMatching(RATE_REFUSAL), mail_address: "" });
      expect(r.body.error.match(RATE_REFUSAL)!.slice(1)).toEqual(["2", "20"]);
      expect(Number(r.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    }
    for (const { i } of refused) expect(await exists(token, `r.${i}`)).toBe(false);
    for (const i of ok) expect(await exists(token, `r.${i}`)).toBe(true);
  });

  it("over NATS a refused CREATE gets the same error string", async () => {
    const { token } = await tenantWithToken("natsrate");
    const c = await openNats();
    const reqs = Array.from({ length: 30 }, (_, i) => `{"name":"n.${i}"}`);
    c.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nSUB r.* 1\r\n` + reqs.map((q, i) => `PUB $mq9.AI.MAILBOX.CREATE r.${i} ${q.length}\r\n${q}\r\n`).join(""));
    const parse = () => [...c.text.matchAll(/MSG r\.(\d+) 1 \d+\r\n(\{.*\})\r\n/g)].map((m) => [Number(m[1]), JSON.parse(m[2]!) as { error: string; mail_address: string }] as const);
    for (let i = 0; i < 300 && parse().length < 30; i++) await sleep(100);
    const replies = parse();
    expect(replies).toHaveLength(30);
    const refused = replies.filter(([, r]) => r.error !== "");
    expect(refused.length).toBeGreaterThanOrEqual(5); // at most the burst of 20 and a few refilled tokens pass
    for (const [i, r] of replies) expect(r).toEqual(r.error === "" ? { error: "", mail_address: `n.${i}` } : { error: expect.stringMatching(RATE_REFUSAL), mail_address: "" });
    c.ws.close();
  });

  it("the static tenant (AUTH_TOKENS) is under the same defaults", async () => {
    const { ok, refused } = await flood(STATIC_TOKEN, `s${Date.now().toString(36)}`, 30);
    expect(ok.length).toBeLessThanOrEqual(30 - 5);
    expect(refused.every(({ r }) => r.status === 429 && RATE_REFUSAL.test(r.body.error))).toBe(true);
  });

  it("a tenant's quotas override the defaults: its creation rate and its mailbox count", async () => {
    const { token } = await tenantWithToken("quota", { mailbox_creates_per_s: 10, mailboxes: 30 }); // bursts of 100, at most 30
    const { ok, refused } = await flood(token, "q", 35);
    expect(ok).toHaveLength(30);
    for (const { r } of refused) {
      expect(r.status).toBe(429);
      expect(r.body.error).toMatch(/^mailbox quota exceeded: the tenant has 30 mailboxes, quota 30; nothing was created$/);
    }
  });

  it("without a mailboxes quota the default count applies (MQ9_MAILBOXES_PER_TENANT)", async () => {
    const { token } = await tenantWithToken("count", { mailbox_creates_per_s: 100 }); // the rate out of the way
    const { ok, refused } = await flood(token, "c", 45);
    expect(ok).toHaveLength(40);
    expect(refused.map(({ r }) => [r.status, r.body.error])).toEqual(Array.from({ length: 5 }, () => [429, "mailbox quota exceeded: the tenant has 40 mailboxes, quota 40; nothing was created"]));
  });

  it("a push subscription's dead-letter mailbox counts: PUSH.CREATE reserves <address>.dlq under the mailbox quota, or is refused", async () => {
    const { token } = await tenantWithToken("dlq", { mailboxes: 3 });
    for (const name of ["a", "b"]) expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name, ttl: 0 })).body.error).toBe("");
    const hook = { url: "https://hooks.example.com/mq9" };
    // a.dlq takes the third slot at once (not only when the first dead letter arrives)
    expect((await mq9As(token, "$mq9.AI.PUSH.CREATE.a", { group_name: "g1", ...hook })).body.error).toBe("");
    expect(await exists(token, "a.dlq")).toBe(true);
    expect((await mq9As(token, "$mq9.AI.PUSH.CREATE.a", { group_name: "g2", ...hook })).body.error).toBe(""); // a.dlq exists: no new slot
    const full = await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "c", ttl: 0 });
    expect([full.status, full.body.error]).toEqual([429, "mailbox quota exceeded: the tenant has 3 mailboxes, quota 3; nothing was created"]);
    // b.dlq has no slot: the PUSH.CREATE is refused and creates nothing
    const refused = await mq9As(token, "$mq9.AI.PUSH.CREATE.b", { group_name: "g", ...hook });
    expect([refused.status, refused.body.error]).toEqual([429,
      "mailbox quota exceeded: the tenant has 3 mailboxes, quota 3; the push subscription's dead-letter mailbox b.dlq needs one more: nothing was created"]);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect((await mq9As(token, "$mq9.AI.PUSH.LIST.b", {})).body.pushes).toEqual([]);
    expect(await exists(token, "b.dlq")).toBe(false);
  });

  it("another tenant creates while one is refused", async () => {
    const a = await tenantWithToken("busy");
    const b = await tenantWithToken("calm");
    const [fa, rb] = await Promise.all([flood(a.token, "a", 40), flood(b.token, "b", 10)]);
    expect(fa.refused.length).toBeGreaterThan(0);
    expect(fa.refused.every(({ r }) => r.status === 429)).toBe(true);
    expect(rb.ok).toHaveLength(10); // b's own bucket is full: none refused
  });
});
