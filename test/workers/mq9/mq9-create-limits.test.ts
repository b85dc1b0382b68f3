/**
 * The open broker (no tokens, tenant `default`) is under the broker's
 * default mailbox limits too (#14 item 3; docs/tenants.md "Default
 * limits"): its creation bucket holds 200 CREATEs (10 s of the default
 * 20/s). The test empties it through the tenant's directory object with a
 * clock a minute ahead (so nothing refills while the test runs — a CREATE
 * in this pool takes longer than 1/20 s), then CREATEs over HTTP and NATS
 * are refused with 429 + Retry-After / the mq9 error string, and create
 * nothing.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tenantStub } from "../../../objects/tenants/stub";
import { OPEN_TENANT } from "../../../objects/tenants/auth";
import { freshAddress, mq9 } from "../helpers/mq9";
import { openNats } from "../helpers/nats-ws";

const REFUSAL = /^mailbox creation rate exceeded: 20 CREATEs per second per tenant \(bursts of 200\); nothing was created, retry later$/;

describe("default mailbox limits, open broker", { timeout: 60_000 }, () => {
  it("200 CREATEs at once, then refusals on every transport", async () => {
    const dir = tenantStub(env, OPEN_TENANT);
    const ahead = Date.now() + 60_000;
    for (let i = 0; i < 200; i++) expect((await dir.admitMailbox(freshAddress("adm"), ahead)).ok).toBe(true);
    expect(await dir.admitMailbox(freshAddress("adm"), ahead)).toMatchObject({ ok: false, kind: "rate", message: expect.stringMatching(REFUSAL), retryAfterMs: 50 });

    const name = freshAddress("lim");
    const res = await (await import("cloudflare:test")).SELF.fetch(new Request(`http://broker/mq9/$mq9.AI.MAILBOX.CREATE`, { method: "POST", body: JSON.stringify({ name }) }));
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(await res.json()).toEqual({ error: expect.stringMatching(REFUSAL), mail_address: "" });
    expect((await mq9(`$mq9.AI.MSG.QUERY.${name}`, {})).status).toBe(404); // nothing was created

    const c = await openNats();
    const req = JSON.stringify({ name: freshAddress("lim") });
    c.send(`CONNECT {"verbose":false}\r\nSUB r 1\r\nPUB $mq9.AI.MAILBOX.CREATE r ${req.length}\r\n${req}\r\n`);
    const [, body] = await c.waitFor(/MSG r 1 \d+\r\n(\{.*\})\r\n/);
    expect(JSON.parse(body!)).toEqual({ error: expect.stringMatching(REFUSAL), mail_address: "" });
    c.ws.close();
  });
});
