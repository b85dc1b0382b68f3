/**
 * Scoped tokens (docs/tenants.md "Permissions"; issue 31): scopes issued
 * with a token are stored, listed and enforced on every transport with the
 * one decision function (wire/admin/scopes.ts), and a scope change reaches
 * open connections at their next re-check (TENANT_REVALIDATE_MS, 300 ms here).
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DeclareCreated, DeclareFlags, ErrorCode, Op, decodeDeclareResult, utf8Bytes, type Frame } from "../../../wire/mortar";
import { expectErr, expectOk, pubFrame } from "../helpers/mortar-ws";
import { Peer } from "../helpers/peer";
import { admin, freshTenant, mortarSession, mq9As, natsCheckedOnce, recheck } from "./helpers";

const declare = (p: Peer, name: string, flags = 0) => p.request({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: 1, flags });
const subFrame = (topicId: number, group: string) =>
  ({ op: Op.SUB, group: utf8Bytes(group), topicId, partition: 0xffff, startPolicy: 0, creditCount: 10, creditBytes: 0, flags: 0 }) as Frame;
const errText = (f: Frame) => new TextDecoder().decode((f as { message: Uint8Array }).message);

/** A fresh tenant with a second mailbox, and a token of it carrying `allow` / `deny`. */
async function scopedTenant(allow: string[], deny: string[] = []): Promise<{ tenant: string; token: string; tokenId: string; full: string }> {
  const tenant = freshTenant("sc");
  expect((await admin("POST", "/admin/tenants", { id: tenant, name: "scopes" })).status).toBe(201);
  const full = (await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "full" })).json.token as string;
  const t = await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "scoped", allow, deny });
  expect(t.status).toBe(201);
  expect(t.json).toMatchObject({ allow, deny });
  return { tenant, token: t.json.token, tokenId: t.json.token_id, full };
}

async function mcpCall(token: string, name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: { text: string }[] }> {
  const res = await SELF.fetch("http://broker/mcp", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  return ((await res.json()) as { result: { isError?: boolean; content: { text: string }[] } }).result;
}

describe("issuing scoped tokens", () => {
  it("rejects a scope that does not parse with 400 and the reason; lists and describes scopes, never the secret", async () => {
    const tenant = freshTenant("sc-issue");
    await admin("POST", "/admin/tenants", { id: tenant, name: "x" });
    const bad = await admin("POST", `/admin/tenants/${tenant}/tokens`, { allow: ["mq9.sned:orders"] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^scope "mq9.sned:orders": unknown operation "mq9.sned"/);
    const bad2 = await admin("POST", `/admin/tenants/${tenant}/tokens`, { deny: ["usage.read:x"] });
    expect(bad2.json.error).toBe('scope "usage.read:x": usage.read acts on no topic or mailbox; write it without a resource');

    await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "send", allow: ["mq9.send:orders.*"], deny: ["mq9.send:orders.secret"] });
    await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "all" });
    const list = await admin("GET", `/admin/tenants/${tenant}/tokens`);
    const rows = (list.json.tokens as any[]).map((t) => [t.label, t.allow, t.deny, "token" in t]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(rows).toEqual([["all", [], [], false], ["send", ["mq9.send:orders.*"], ["mq9.send:orders.secret"], false]]);
    const doc = await admin("GET", `/admin/tenants/${tenant}`);
    expect(doc.json.tokens.find((t: any) => t.label === "send").allow).toEqual(["mq9.send:orders.*"]);
  });

  it("GET /v0/whoami answers the caller's tenant and scopes", async () => {
    const { tenant, token, tokenId } = await scopedTenant(["mq9.send:inbox.*"], ["mq9.send:inbox.secret"]);
    const r = await SELF.fetch("http://broker/v0/whoami", { headers: { Authorization: `Bearer ${token}` } });
    expect(await r.json()).toEqual({ auth: "tokens", role: "tenant", tenant, allow: ["mq9.send:inbox.*"], deny: ["mq9.send:inbox.secret"], token_id: tokenId });
  });
});

describe("a send-only token", () => {
  it("HTTP: SENDs to its mailbox and nothing else (403 permission denied), each refusal counted", async () => {
    const { tenant, token, full } = await scopedTenant(["mq9.send:orders.inbox"]);
    for (const name of ["orders.inbox", "orders.other"]) {
      expect((await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name })).body.error).toBe("");
    }
    expect((await mq9As(token, "$mq9.AI.MSG.SEND.orders.inbox", "hi")).body).toEqual({ error: "", msg_id: 0 });
    const refused: [string, unknown, string][] = [
      ["$mq9.AI.MSG.FETCH.orders.inbox", { group_name: "g" }, "mq9.fetch on orders.inbox/g"],
      ["$mq9.AI.MSG.FETCH.orders.inbox", {}, "mq9.fetch on orders.inbox"],
      ["$mq9.AI.MSG.QUERY.orders.inbox", {}, "mq9.query on orders.inbox"],
      ["$mq9.AI.MSG.SEND.orders.other", "x", "mq9.send on orders.other"],
      ["$mq9.AI.MAILBOX.CREATE", { name: "orders.new" }, "mq9.create on orders.new"],
      ["$mq9.AI.MAILBOX.CREATE", {}, "mq9.create"],
      ["$mq9.AI.PUSH.CREATE.orders.inbox", { url: "https://example.com/hook", group_name: "p" }, "mq9.push on orders.inbox"],
      ["$mq9.AI.AGENT.DISCOVER", {}, "agents.discover"],
    ];
    for (const [subject, body, what] of refused) {
      const r = await mq9As(token, subject, body);
      expect([subject, r.status, r.body.error]).toEqual([subject, 403, `permission denied: ${what} (no scope of the token allows it)`]);
    }
    // every refusal counted by operation on /metrics
    const metrics = (await admin("GET", "/metrics")).json as string;
    const count = (op: string) => Number(new RegExp(`^mortarmq_permission_denied_total\\{tenant="${tenant}",operation="${op.replace(".", "\\.")}"\\} (\\d+)$`, "m").exec(metrics)?.[1]);
    expect(["mq9.fetch", "mq9.query", "mq9.send", "mq9.create", "mq9.push", "agents.discover"].map(count)).toEqual([2, 1, 1, 2, 1, 1]);
    // nothing was stored by the refused requests: one message in the inbox, none in the other
    const q = await mq9As(full, "$mq9.AI.MSG.QUERY.orders.inbox", {});
    expect((q.body.messages as unknown[]).length).toBe(1);
    expect((await mq9As(full, "$mq9.AI.MSG.QUERY.orders.other", {})).body.messages).toEqual([]);
  });

  it("MCP: the send tool works, the fetch tool is a tool error", async () => {
    const { token, full } = await scopedTenant(["mq9.send:box.*"]);
    await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name: "box.a" });
    const sent = await mcpCall(token, "mq9_send_message", { mail_address: "box.a", payload: "hello" });
    expect(sent.isError).toBeFalsy();
    const fetched = await mcpCall(token, "mq9_fetch_messages", { mail_address: "box.a" });
    expect(fetched).toEqual({ isError: true, content: [{ type: "text", text: "permission denied: mq9.fetch on box.a (no scope of the token allows it)" }] });
  });

  it("A2A receiver CREATE/DELETE need mq9.push on the mailbox (HTTP and the MCP tool)", async () => {
    const { token, full } = await scopedTenant(["mq9.send:box.*", "mq9.push:box.a"]);
    for (const name of ["box.a", "box.b"]) await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name });
    expect((await mq9As(token, "$mq9.AI.A2A.RECEIVER.CREATE.box.a", "")).body).toMatchObject({ error: "", path: "/a2a/push/box.a" });
    const refused = await mq9As(token, "$mq9.AI.A2A.RECEIVER.CREATE.box.b", "");
    expect([refused.status, refused.body.error]).toEqual([403, "permission denied: mq9.push on box.b (no scope of the token allows it)"]);
    expect((await mq9As(token, "$mq9.AI.A2A.RECEIVER.DELETE.box.b", "")).status).toBe(403);
    const viaMcp = await mcpCall(token, "mq9_create_a2a_receiver", { mail_address: "box.b" });
    expect(viaMcp).toEqual({ isError: true, content: [{ type: "text", text: "permission denied: mq9.push on box.b (no scope of the token allows it)" }] });
  });

  it("NATS: SEND allowed, FETCH refused with the mq9 error; deny wins over allow", async () => {
    const { token, full } = await scopedTenant(["mq9.*:box.>"], ["mq9.fetch:box.secret"]);
    await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name: "box.secret" });
    const { conn } = await natsCheckedOnce(token);
    conn.send("SUB _INBOX.r 1\r\nPUB $mq9.AI.MSG.SEND.box.secret _INBOX.r 2\r\nhi\r\n");
    await conn.waitFor(/\{"error":"","msg_id":0\}\r\n$/);
    conn.send("PUB $mq9.AI.MSG.FETCH.box.secret _INBOX.r 2\r\n{}\r\n");
    await conn.waitFor(/permission denied: mq9.fetch on box.secret \(denied by \\"mq9.fetch:box.secret\\"\)/);
  });
});

describe("agents.register scoped to a mailbox", () => {
  it("cannot take over another agent's name (REGISTER would replace its card); its own and allowed ones re-register", async () => {
    const { token, full } = await scopedTenant(["agents.register:agents.alice.inbox", "agents.register:agents.shared.>", "agents.discover"]);
    const register = (t: string, name: string, mailbox: string | undefined, description: string) =>
      mq9As(t, "$mq9.AI.AGENT.REGISTER", mailbox === undefined ? { name, description } : { name, mailbox, description });
    expect((await register(full, "bob-agent", "agents.bob.inbox", "bob")).body.error).toBe("");
    expect((await register(full, "anon", undefined, "no mailbox")).body.error).toBe("");
    expect((await register(full, "helper", "agents.shared.one", "shared")).body.error).toBe("");
    for (const victim of ["bob-agent", "anon"]) {
      const r = await register(token, victim, "agents.alice.inbox", "evil");
      const on = victim === "bob-agent" ? "agents.register on agents.bob.inbox" : "agents.register";
      expect([victim, r.status, r.body.error]).toEqual([victim, 403, `permission denied: ${on} (no scope of the token allows it)`]);
    }
    // its own name, then an agent registered with a mailbox the token may register: replaced
    expect((await register(token, "alice", "agents.alice.inbox", "v1")).body.error).toBe("");
    expect((await register(token, "alice", "agents.alice.inbox", "v2")).body.error).toBe("");
    expect((await register(token, "helper", "agents.shared.two", "moved")).body.error).toBe("");
    const found = (await mq9As(full, "$mq9.AI.AGENT.DISCOVER", {})).body.agents as { name: string; mailbox?: string; description: string }[];
    expect(found.map((a) => [a.name, a.mailbox, a.description])).toEqual([
      ["bob-agent", "agents.bob.inbox", "bob"], ["anon", undefined, "no mailbox"], ["helper", "agents.shared.two", "moved"], ["alice", "agents.alice.inbox", "v2"],
    ]);
  });
});

describe("NATS SUB", () => {
  it("only to subjects the token may receive: nats-server's Permissions Violation, the connection stays open", async () => {
    const { token } = await scopedTenant(["mq9.send:box.a", "mq9.fetch:box.b"]);
    const { conn } = await natsCheckedOnce(token);
    conn.send("SUB $mq9.AI.MSG.SEND.box.a 1\r\n");
    await conn.waitFor(/-ERR 'Permissions Violation for Subscription to "\$mq9\.AI\.MSG\.SEND\.box\.a"'\r\n$/);
    conn.send("SUB > 2\r\n");
    await conn.waitFor(/-ERR 'Permissions Violation for Subscription to ">"'\r\n$/);
    conn.send("SUB $mq9.AI.MSG.SEND.box.b 3\r\nSUB _INBOX.r 4\r\nPUB _INBOX.r 2\r\nok\r\n");
    await conn.waitFor(/MSG _INBOX\.r 4 2\r\nok\r\n$/);
  });
});

describe("scope changes reach open connections", () => {
  it("NATS: PUT …/scopes takes effect at the connection's next re-check (TENANT_REVALIDATE_MS)", async () => {
    const { tenant, token, tokenId, full } = await scopedTenant(["mq9.*"]);
    await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name: "box.c" });
    const { stub, conn } = await natsCheckedOnce(token);
    conn.send("SUB _INBOX.r 1\r\nPUB $mq9.AI.MSG.QUERY.box.c _INBOX.r 2\r\n{}\r\n");
    await conn.waitFor(/\{"error":"","messages":\[\]\}\r\n$/);
    const put = await admin("PUT", `/admin/tenants/${tenant}/tokens/${tokenId}/scopes`, { allow: ["mq9.send"] });
    expect([put.status, put.json.allow]).toEqual([200, ["mq9.send"]]);
    await recheck(stub);
    conn.send("PUB $mq9.AI.MSG.QUERY.box.c _INBOX.r 2\r\n{}\r\n");
    await conn.waitFor(/permission denied: mq9.query on box.c \(no scope of the token allows it\)/);
    // and back to full access
    await admin("PUT", `/admin/tenants/${tenant}/tokens/${tokenId}/scopes`, {});
    await recheck(stub);
    conn.send("PUB $mq9.AI.MSG.QUERY.box.c _INBOX.r 2\r\n{}\r\n");
    await conn.waitFor(/denied[^]*\{"error":"","messages":\[\]\}\r\n$/);
  }, 15_000);

  it("PUT …/scopes validates like issue (400) and 404s an unknown token", async () => {
    const { tenant, tokenId } = await scopedTenant(["mq9.*"]);
    expect((await admin("PUT", `/admin/tenants/${tenant}/tokens/${tokenId}/scopes`, { allow: ["mq9.send:a..b"] })).json.error).toMatch(/empty token/);
    expect((await admin("PUT", `/admin/tenants/${tenant}/tokens/0123456789ab/scopes`, { allow: [] })).status).toBe(404);
  });
});

describe("MortarMQ", () => {
  it("a consume-only token consumes its group and cannot publish, create, delete or join another group (PERMISSION_DENIED, connection open)", async () => {
    const { token, full } = await scopedTenant(["mortar.consume:orders/billing"]);
    const owner = await Peer.open(full);
    const topicId = decodeDeclareResult(expectOk(await declare(owner, "orders"), Op.DECLARE).result).topicId;
    const worker = await Peer.open(token);
    expectOk(await declare(worker, "orders"), Op.DECLARE); // learning the id is allowed to a consumer
    const created = expectErr(await declare(worker, "invoices"), ErrorCode.PERMISSION_DENIED, Op.DECLARE);
    expect(errText(created)).toBe("permission denied: mortar.admin on invoices (no scope of the token allows it)");
    expectErr(await declare(worker, "orders", DeclareFlags.DELETE), ErrorCode.PERMISSION_DENIED, Op.DECLARE);
    const pub = expectErr(await worker.request(pubFrame(topicId, 0, "x")), ErrorCode.PERMISSION_DENIED, Op.PUB);
    expect(errText(pub)).toBe("permission denied: mortar.publish on orders (no scope of the token allows it)");
    const other = expectErr(await worker.request(subFrame(topicId, "audit")), ErrorCode.PERMISSION_DENIED, Op.SUB);
    expect(errText(other)).toBe("permission denied: mortar.consume on orders/audit (no scope of the token allows it)");
    expectOk(await worker.request(subFrame(topicId, "billing")), Op.SUB);
    expectOk(await worker.request({ op: Op.PING } as Frame), Op.PING); // still open
  });

  it("a DECLARE that would create a topic needs mortar.admin; declaring an existing one needs publish or consume", async () => {
    const { token, full } = await scopedTenant(["mortar.publish:feed.>", "mortar.consume:feed.>"]);
    const producer = await Peer.open(token);
    const refused = expectErr(await declare(producer, "feed.new"), ErrorCode.PERMISSION_DENIED, Op.DECLARE);
    expect(errText(refused)).toBe("permission denied: mortar.admin on feed.new (no scope of the token allows it)");
    const owner = await Peer.open(full);
    const created = decodeDeclareResult(expectOk(await declare(owner, "feed.new"), Op.DECLARE).result);
    const again = decodeDeclareResult(expectOk(await declare(producer, "feed.new"), Op.DECLARE).result);
    expect([again.topicId, again.created]).toEqual([created.topicId, DeclareCreated.IDEMPOTENT_OK]);
    expectOk(await producer.request(pubFrame(again.topicId, 0, "x")), Op.PUB);
    const admin = await Peer.open((await scopedTenant(["mortar.admin:feed.>"])).token);
    expectOk(await declare(admin, "feed.other"), Op.DECLARE); // mortar.admin creates
  });

  it("a scope change reaches an open connection at its next re-check", async () => {
    const { tenant, token, tokenId, full } = await scopedTenant(["mortar.*"]);
    const owner = await Peer.open(full);
    const topicId = decodeDeclareResult(expectOk(await declare(owner, "events"), Op.DECLARE).result).topicId;
    const { stub, conn } = await mortarSession();
    await conn.connect(token);
    conn.send([pubFrame(topicId, 0, "one")]);
    expectOk((await conn.take(1))[0], Op.PUB);
    await admin("PUT", `/admin/tenants/${tenant}/tokens/${tokenId}/scopes`, { allow: ["mortar.consume"] });
    await recheck(stub);
    conn.send([pubFrame(topicId, 0, "two")]);
    expectErr((await conn.take(1))[0], ErrorCode.PERMISSION_DENIED, Op.PUB);
  });
});

describe("a read-only token", () => {
  it("sees /stats, usage and mailbox messages but changes nothing", async () => {
    const { tenant, token, full } = await scopedTenant(["usage.read", "mq9.query"]);
    await mq9As(full, "$mq9.AI.MAILBOX.CREATE", { name: "dash.box" });
    await mq9As(full, "$mq9.AI.MSG.SEND.dash.box", "m1");
    const stats = await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } });
    expect(stats.status).toBe(200);
    expect((await SELF.fetch("http://broker/v0/usage", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await mq9As(token, "$mq9.AI.MSG.QUERY.dash.box", {})).body.messages).toHaveLength(1);
    for (const [subject, body] of [["$mq9.AI.MSG.SEND.dash.box", "x"], ["$mq9.AI.MSG.DELETE.dash.box.0", {}], ["$mq9.AI.MAILBOX.CREATE", { name: "dash.new" }], ["$mq9.AI.AGENT.REGISTER", { name: "a", mailbox: "dash.box" }]] as const) {
      expect([subject, (await mq9As(token, subject, body)).status]).toEqual([subject, 403]);
    }
    const owner = await Peer.open(full);
    decodeDeclareResult(expectOk(await declare(owner, "dash.topic"), Op.DECLARE).result);
    const reader = await Peer.open(token);
    expectErr(await declare(reader, "dash.topic"), ErrorCode.PERMISSION_DENIED, Op.DECLARE);
    expect((await mq9As(full, "$mq9.AI.MSG.QUERY.dash.box", {})).body.messages).toHaveLength(1);
    expect(tenant).toBeTruthy();
  });
});

describe("console topic APIs", () => {
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const r = await SELF.fetch(`http://broker${path}`, { method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return [r.status, ((await r.json()) as { error?: string }).error ?? "ok"];
  };
  it("403 per scope, decided before the topic is looked up (a forbidden caller learns nothing)", async () => {
    const { token, full } = await scopedTenant(["mortar.publish:shop.>", "mortar.consume:shop.orders/billing"]);
    expect(await call(full, "POST", "/v0/topics", { name: "shop.orders", partitions: 1 })).toEqual([201, "ok"]);
    const denied = (op: string, name: string) => [403, `permission denied: ${op} on ${name} (no scope of the token allows it)`];
    expect(await call(token, "POST", "/v0/topics", { name: "shop.new", partitions: 1 })).toEqual(denied("mortar.admin", "shop.new"));
    expect(await call(token, "DELETE", "/v0/topics/shop.orders")).toEqual(denied("mortar.admin", "shop.orders"));
    expect(await call(token, "DELETE", "/v0/topics/shop.missing")).toEqual(denied("mortar.admin", "shop.missing")); // not 404
    expect(await call(token, "POST", "/v0/topics/other/partitions/0/records", { value: "x" })).toEqual(denied("mortar.publish", "other"));
    expect(await call(token, "GET", "/v0/topics/other/partitions/0/records")).toEqual(denied("mortar.consume", "other"));
    expect((await call(token, "POST", "/v0/topics/shop.orders/partitions/0/records", { value: "x" }))[0]).toBe(201);
    expect((await call(token, "GET", "/v0/topics/shop.orders/partitions/0/records?last=1"))[0]).toBe(200); // peek: consume on any group
    expect((await call(token, "GET", "/v0/topics/shop.orders"))[0]).toBe(200); // details stay open
    expect(await call(token, "POST", "/v0/topics/shop.missing/partitions/0/records", { value: "x" })).toEqual([404, 'topic "shop.missing" does not exist']); // allowed: then looked up
  });
});

describe("groups admin API", () => {
  it("a consume-only token may read groups but not reset or delete them (403)", async () => {
    const { token } = await scopedTenant(["mortar.consume:orders/billing"]);
    for (const [method, path] of [["POST", "/v0/topics/orders/groups/billing/reset"], ["DELETE", "/v0/topics/orders/groups/billing"], ["POST", "/v0/topics/orders/groups/billing/pause"]]) {
      const r = await SELF.fetch(`http://broker${path}`, { method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: method === "POST" ? "{}" : undefined });
      expect([path, r.status, ((await r.json()) as { error: string }).error]).toEqual([path, 403, "permission denied: mortar.admin on orders/billing (no scope of the token allows it)"]);
    }
    const u = await SELF.fetch("http://broker/v0/usage", { headers: { Authorization: `Bearer ${token}` } });
    expect(u.status).toBe(403);
  });
});
