/**
 * A push subscription's dead letters never take the tenant past its
 * `mailboxes` quota (docs/push.md "Dead letters": "So a dead letter never
 * waits for a slot and never takes the tenant past its quota"; docs/tenants.md
 * "Default limits": the count is exact).
 *
 * PUSH.CREATE keeps an existing `<address>.dlq` ("an existing one is kept"),
 * also one whose TTL ends long before the source's — a `.dlq` the user
 * created, or the one left by an earlier incarnation of the source. Once it
 * has expired its slot is free and another CREATE takes it; the next dead
 * letter then recreates the `.dlq` outside the count (Mailbox.deadLetter →
 * MailboxIndex.claim with a TTL): one mailbox over the quota.
 * (Found by the attack-lazy tester.)
 */
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { until } from "../fixtures/until";

const TOKEN = "tok-dlq-quota";
const QUOTA = 3;
const ctx = useLocalBroker("push-dlq-quota", {
  vars: { AUTH_TOKENS: `${TOKEN}:dq`, PUSH_ALLOW_LOOPBACK: "1", MQ9_MAILBOXES_PER_TENANT: String(QUOTA), TELEMETRY_FLUSH_MS: "200" },
});

type Body = { error: string } & Record<string, any>;
async function mq9(subject: string, payload: unknown = {}): Promise<{ status: number; body: Body }> {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  const res = await fetch(`${ctx.broker.url}/mq9/${subject}`, { method: "POST", body, headers: { Authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as Body };
}
async function listed(): Promise<string[]> {
  const res = await fetch(`${ctx.broker.url}/v0/mailboxes`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  return ((await res.json()) as { mailboxes: { mail_address: string }[] }).mailboxes.map((m) => m.mail_address);
}

describe("dead letters and the mailbox quota", { timeout: 60_000 }, () => {
  it("a dead letter into a kept .dlq that expired does not take the tenant past its quota", async () => {
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: "src", ttl: 3600 })).body.error).toBe("");
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: "src.dlq", ttl: 2 })).body.error).toBe(""); // expires soon
    // nothing listens on port 9: every attempt fails at once, max_attempts 1 dead-letters the message
    const push = await mq9("$mq9.AI.PUSH.CREATE.src", { group_name: "hook", url: "http://127.0.0.1:9/hook", max_attempts: 1 });
    expect(push.body.error).toBe(""); // src.dlq exists: kept, no slot taken
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: "other1", ttl: 3600 })).body.error).toBe("");
    expect((await listed()).sort()).toEqual(["other1", "src", "src.dlq"]); // at the quota

    await until(async () => !(await listed()).includes("src.dlq"), 10_000, 100); // src.dlq expired: its slot is free
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: "other2", ttl: 3600 })).body.error).toBe(""); // takes it
    const full = await mq9("$mq9.AI.MAILBOX.CREATE", { name: "other3", ttl: 3600 });
    expect(full.status).toBe(429);

    expect((await mq9("$mq9.AI.MSG.SEND.src", "undeliverable")).body.error).toBe("");
    await until(async () => (await mq9("$mq9.AI.PUSH.LIST.src")).body.pushes?.[0]?.failed >= 1, 10_000, 100);
    await new Promise((r) => setTimeout(r, 1_000)); // the dead letter lands

    const after = await listed();
    expect(after.length).toBeLessThanOrEqual(QUOTA); // fails: ["other1","other2","src","src.dlq"]
  });
});
