/**
 * The console's APIs on a hosted broker (docs/console.md "APIs", "Access"):
 * a tenant token sees only its own topics, mailboxes, overview and usage;
 * the operator names a tenant with ?tenant= (also for mq9 through
 * POST /v0/mq9/*); no token is 401. The overview's intervals show what the
 * tenant did (the project flushes telemetry every 100 ms), and nothing of
 * another tenant's.
 */
import { describe, expect, it } from "vitest";
import type { OverviewAnswer, TenantUsageAnswer, TopicPage, MailboxPage } from "../../../wire/admin/console";
import { Peer } from "../helpers/peer";
import { ADMIN, admin, freshTenant, mq9As, sleep, tenantWithToken } from "./helpers";

describe("console API access", () => {
  it("own tenant only; the operator with ?tenant=; 401 without a token", async () => {
    const a = await tenantWithToken("ca");
    const b = await tenantWithToken("cb");
    expect((await admin("POST", "/v0/topics", { name: "secret.orders", partitions: 1 }, a.token)).status).toBe(201);
    expect((await admin("GET", "/v0/whoami", undefined, a.token)).json).toEqual({ auth: "tokens", role: "tenant", tenant: a.tenant, allow: [], deny: [], token_id: a.tokenId });
    expect((await admin("GET", "/v0/whoami", undefined, ADMIN)).json).toEqual({ auth: "tokens", role: "operator", tenant: "default", allow: [], deny: [] });
    expect((await admin("GET", "/v0/whoami", undefined, null)).status).toBe(401);
    expect((await admin("GET", "/v0/whoami", undefined, "mmq.nobody.bogus")).status).toBe(401);

    const own = (await admin("GET", "/v0/topics", undefined, a.token)).json as TopicPage;
    expect(own.topics.map((t) => t.name)).toEqual(["secret.orders", "secret.orders.dlq"]);
    expect(((await admin("GET", "/v0/topics", undefined, b.token)).json as TopicPage).topics).toEqual([]);
    expect((await admin("GET", "/v0/topics/secret.orders", undefined, b.token)).status).toBe(404);
    const named = await admin("GET", `/v0/topics?tenant=${a.tenant}`, undefined, b.token);
    expect([named.status, named.json.error]).toEqual([403, "a tenant token can only read and manage its own tenant"]);
    expect((await admin("DELETE", `/v0/topics/secret.orders?tenant=${a.tenant}`, undefined, b.token)).status).toBe(403);
    expect((await admin("GET", "/v0/topics", undefined, null)).status).toBe(401);
    expect(((await admin("GET", `/v0/topics?tenant=${a.tenant}`, undefined, ADMIN)).json as TopicPage).topics).toHaveLength(2);

    // mq9 as tenant A, by the operator: A lists the mailbox, B does not; B cannot act on A.
    const created = await admin("POST", `/v0/mq9/$mq9.AI.MAILBOX.CREATE?tenant=${a.tenant}`, { name: "inbox.one" }, ADMIN);
    expect([created.status, created.json.error]).toEqual([200, ""]);
    expect(((await admin("GET", "/v0/mailboxes", undefined, a.token)).json as MailboxPage).mailboxes.map((m) => m.mail_address)).toEqual(["inbox.one"]);
    expect(((await admin("GET", "/v0/mailboxes", undefined, b.token)).json as MailboxPage).mailboxes).toEqual([]);
    expect((await admin("POST", `/v0/mq9/$mq9.AI.MSG.SEND.inbox.one?tenant=${a.tenant}`, "x", b.token)).status).toBe(403);
    expect((await admin("POST", "/v0/mq9/$mq9.AI.MSG.SEND.inbox.one", "x", b.token)).json.error).toBe("mailbox inbox.one does not exist");
    expect((await admin("GET", "/v0/mailboxes/inbox.one", undefined, b.token)).status).toBe(404);
    expect((await admin("GET", "/v0/mailboxes/inbox.one", undefined, a.token)).status).toBe(200);
  });

  it("the operator's ?tenant= must name a live tenant: an unknown or deleted one is 404 and gets no data (a re-created id starts empty)", async () => {
    const unknown = freshTenant("nobody");
    const writes: [string, string, unknown][] = [
      ["POST", "/v0/topics", { name: "ghost", partitions: 1 }],
      ["POST", "/v0/mq9/$mq9.AI.MAILBOX.CREATE", { name: "ghost.box" }],
    ];
    for (const [method, path, body] of writes) {
      const r = await admin(method, `${path}?tenant=${unknown}`, body, ADMIN);
      expect([path, r.status, r.json.error]).toEqual([path, 404, `tenant "${unknown}" does not exist (mortarmq admin tenants list shows the tenants)`]);
    }
    for (const path of ["/v0/topics", "/v0/mailboxes", "/stats", "/v0/topics/ghost/groups", "/v0/overview"]) {
      expect([path, (await admin("GET", `${path}?tenant=${unknown}`, undefined, ADMIN)).status]).toEqual([path, 404]);
    }
    // Created afterwards, the tenant starts empty.
    expect((await admin("POST", "/admin/tenants", { id: unknown })).status).toBe(201);
    expect(((await admin("GET", `/v0/topics?tenant=${unknown}`, undefined, ADMIN)).json as TopicPage).topics).toEqual([]);
    expect(((await admin("GET", `/v0/mailboxes?tenant=${unknown}`, undefined, ADMIN)).json as MailboxPage).mailboxes).toEqual([]);

    // A deleted tenant: refused while its purge waits and after it is done.
    const gone = await tenantWithToken("gone");
    expect((await admin("DELETE", `/admin/tenants/${gone.tenant}`)).status).toBe(200);
    const during = await admin("POST", `/v0/topics?tenant=${gone.tenant}`, { name: "ghost", partitions: 1 }, ADMIN);
    expect([during.status, during.json.error]).toEqual([404, expect.stringMatching(new RegExp(`^tenant ${gone.tenant} was deleted at .*Z; its data is purged \\(mortarmq admin tenants describe ${gone.tenant}\\)$`))]);
    for (let i = 0; i < 200 && (await admin("GET", `/admin/tenants/${gone.tenant}`)).json.purge.state !== "done"; i++) await sleep(50);
    for (const [method, path, body] of writes) expect([path, (await admin(method, `${path}?tenant=${gone.tenant}`, body, ADMIN)).status]).toEqual([path, 404]);
    expect((await admin("POST", "/admin/tenants", { id: gone.tenant })).status).toBe(201);
    expect(((await admin("GET", `/v0/topics?tenant=${gone.tenant}`, undefined, ADMIN)).json as TopicPage).topics).toEqual([]);
    expect(((await admin("GET", `/v0/mailboxes?tenant=${gone.tenant}`, undefined, ADMIN)).json as MailboxPage).mailboxes).toEqual([]);

    // default and static tenants need no directory record.
    expect((await admin("GET", "/v0/topics?tenant=static-tenant", undefined, ADMIN)).status).toBe(200);
    expect((await admin("GET", "/v0/topics?tenant=default", undefined, ADMIN)).status).toBe(200);
    expect((await admin("GET", "/v0/topics", undefined, ADMIN)).status).toBe(200);
  });

  it("the overview shows the tenant's own messages, bytes and connections in recent intervals; usage its hours and quotas", async () => {
    const a = await tenantWithToken("co", { storage_bytes: 1_000_000 });
    const b = await tenantWithToken("cp");
    expect((await mq9As(a.token, "$mq9.AI.MAILBOX.CREATE", { name: "box" })).body.error).toBe("");
    for (const p of ["one", "two", "three"]) expect((await mq9As(a.token, "$mq9.AI.MSG.SEND.box", p)).body.error).toBe("");
    expect((await mq9As(a.token, "$mq9.AI.MSG.SEND.nobox", "x")).status).toBe(404);
    const peer = await Peer.open(a.token);
    const sum = (o: OverviewAnswer, f: "messages_in" | "bytes_in" | "errors") => o.buckets.reduce((n, x) => n + x[f], 0);
    let o: OverviewAnswer | null = null;
    for (let i = 0; i < 100; i++) {
      o = (await admin("GET", "/v0/overview?minutes=5", undefined, a.token)).json as OverviewAnswer;
      if (sum(o, "messages_in") === 3 && o.now.connections.mortar === 1 && sum(o, "errors") >= 1) break;
      await sleep(100);
    }
    expect(o!.tenant).toBe(a.tenant);
    expect(o!.interval_ms).toBe(10_000);
    expect(o!.buckets.length).toBeGreaterThanOrEqual(30);
    expect(o!.buckets.at(-1)!.t + o!.interval_ms).toBeGreaterThan(Date.now() - 1000);
    expect(sum(o!, "messages_in")).toBe(3);
    expect(sum(o!, "bytes_in")).toBe("onetwothree".length);
    expect(sum(o!, "errors")).toBe(1); // the SEND to a missing mailbox
    expect(o!.now.connections.mortar).toBe(1);
    expect(o!.buckets.at(-1)!.connections_mortar).toBe(1);
    expect(o!.now.storage_bytes).toBe("onetwothree".length);
    expect(o!.now.mailboxes).toBe(1);
    expect(o!.quotas.storage_bytes).toBe(1_000_000);
    peer.c.close();

    const other = (await admin("GET", "/v0/overview?minutes=5", undefined, b.token)).json as OverviewAnswer;
    expect(sum(other, "messages_in")).toBe(0);
    expect(other.now.storage_bytes).toBe(0);
    expect((await admin("GET", "/v0/overview?minutes=0", undefined, a.token)).status).toBe(400);

    const usage = (await admin("GET", "/v0/usage", undefined, a.token)).json as TenantUsageAnswer;
    expect(usage.tenant).toBe(a.tenant);
    expect(usage.totals.messages_in).toBe(3);
    expect(usage.quotas.storage_bytes).toBe(1_000_000);
    expect((await admin("GET", `/v0/usage?tenant=${b.tenant}`, undefined, a.token)).status).toBe(403);
    expect(((await admin("GET", `/v0/usage?tenant=${a.tenant}`, undefined, ADMIN)).json as TenantUsageAnswer).totals.messages_in).toBe(3);
  });
});
