/**
 * Scoped tokens end to end (issue 31, docs/tenants.md "Permissions") on the
 * real local broker, over every transport — mq9 over HTTP, NATS (nats.js
 * through the TCP bridge), MCP, MortarMQ (the SDK), the console APIs: a
 * send-only token SENDs to its mailbox and nothing else, a consume-only
 * token consumes its group and cannot publish or reset, a read-only token
 * sees the console and /stats but changes nothing (and, in Chromium, the
 * console hides the buttons a token cannot use), and a scope change
 * reaches an open NATS and an open MortarMQ connection within the
 * documented bound (TENANT_REVALIDATE_MS + one call; polled, no clock
 * assertion).
 */
import { connect, type NatsConnection, type NatsError } from "nats";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MortarClient } from "../../client/sdk";
import { ErrorCode } from "../../wire/mortar/errors";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { until } from "../fixtures/until";

const ADMIN = "e2e-scopes-admin";
const TENANT = "acme";
const ctx = useLocalBroker("scopes", { natsBridge: true, vars: { ADMIN_TOKEN: ADMIN, TENANT_REVALIDATE_MS: "500" } });

type Json = Record<string, any>;
async function http(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${ctx.broker.url}${path}`, {
    method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = JSON.parse(text) as Json;
  } catch { /* a page */ }
  return { status: res.status, json };
}
const mq9 = (token: string, subject: string, body: unknown = {}) => http(token, "POST", `/mq9/${subject}`, body);
const denied = (op: string, res: string) => `permission denied: ${op} on ${res} (no scope of the token allows it)`;

/** A token of the tenant with these scopes. */
async function issue(allow: string[], deny: string[] = []): Promise<{ token: string; tokenId: string }> {
  const r = await http(ADMIN, "POST", `/admin/tenants/${TENANT}/tokens`, { allow, deny });
  expect(r.status).toBe(201);
  return { token: r.json.token, tokenId: r.json.token_id };
}

/** One mq9 request over NATS: the JSON reply. */
async function natsMq9(nc: NatsConnection, subject: string, body: unknown = {}): Promise<Json> {
  const m = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout: 10_000 });
  return JSON.parse(m.string()) as Json;
}

/** SUB `subject`: resolves the error nats.js hands the subscription (null when none arrived before a round trip). */
async function subError(nc: NatsConnection, subject: string): Promise<NatsError | null> {
  let err: NatsError | null = null;
  nc.subscribe(subject, { callback: (e) => void (err ??= e) });
  await nc.flush();
  return err;
}

let full = "";
const open: { close(): Promise<void> }[] = [];
const natsAs = async (token: string) => {
  const nc = await connect({ servers: `127.0.0.1:${ctx.natsBridge.port}`, token, reconnect: false });
  open.push(nc);
  return nc;
};
const mortarAs = async (token: string) => {
  const c = await MortarClient.connect(ctx.broker.url, { token });
  open.push(c);
  return c;
};

beforeAll(async () => {
  expect((await http(ADMIN, "POST", "/admin/tenants", { id: TENANT, name: "Acme" })).status).toBe(201);
  full = (await issue([])).token;
  for (const name of ["orders.inbox", "other.box"]) expect((await mq9(full, "$mq9.AI.MAILBOX.CREATE", { name })).json.error).toBe("");
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => {})));
});

describe("a send-only token (mq9.send:orders.inbox)", () => {
  it("SENDs to its mailbox and nothing else, on HTTP, NATS, MCP and MortarMQ", async () => {
    const { token } = await issue(["mq9.send:orders.inbox"]);
    // HTTP
    expect((await mq9(token, "$mq9.AI.MSG.SEND.orders.inbox", "hello")).json.error).toBe("");
    for (const [subject, op, res] of [
      ["$mq9.AI.MSG.FETCH.orders.inbox", "mq9.fetch", "orders.inbox"], ["$mq9.AI.MSG.QUERY.orders.inbox", "mq9.query", "orders.inbox"],
      ["$mq9.AI.MSG.SEND.other.box", "mq9.send", "other.box"], ["$mq9.AI.PUSH.CREATE.orders.inbox", "mq9.push", "orders.inbox"],
      ["$mq9.AI.A2A.RECEIVER.CREATE.orders.inbox", "mq9.push", "orders.inbox"],
    ]) {
      expect([subject, await mq9(token, subject!, subject!.includes("PUSH") ? { group_name: "g", url: "https://example.com/hook" } : {})])
        .toMatchObject([subject, { status: 403, json: { error: denied(op!, res!) } }]);
    }
    // NATS: requests, and SUB only to what it may receive (nats.js sees nats-server's Permissions Violation; the connection stays open)
    const nc = await natsAs(token);
    expect((await natsMq9(nc, "$mq9.AI.MSG.SEND.orders.inbox", "over nats")).error).toBe("");
    expect((await natsMq9(nc, "$mq9.AI.MSG.FETCH.orders.inbox")).error).toBe(denied("mq9.fetch", "orders.inbox"));
    const subErr = await subError(nc, "$mq9.AI.MSG.SEND.orders.inbox");
    expect([subErr?.code, subErr?.message]).toEqual(["PERMISSIONS_VIOLATION", `'Permissions Violation for Subscription to "$mq9.AI.MSG.SEND.orders.inbox"'`]);
    expect(await subError(nc, "_INBOX.mine.>")).toBeNull(); // subjects that carry no broker data stay open
    expect((await natsMq9(nc, "$mq9.AI.MSG.SEND.orders.inbox", "still open")).error).toBe("");
    // MCP: a tool error
    const mcp = await http(token, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "mq9_fetch_messages", arguments: { mail_address: "orders.inbox" } } });
    expect(mcp.json.result).toMatchObject({ isError: true, content: [{ text: denied("mq9.fetch", "orders.inbox") }] });
    // MortarMQ: no mortar scope at all
    const c = await mortarAs(token);
    await expect(c.declare("orders", 1)).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    // what it sent arrived, nothing else changed
    const payloads = (await mq9(full, "$mq9.AI.MSG.QUERY.orders.inbox")).json.messages.map((m: Json) => Buffer.from(m.payload, "base64").toString());
    expect(payloads).toEqual(["hello", "over nats", "still open"]);
  });
});

describe("a consume-only token (mortar.consume:orders/billing)", () => {
  it("consumes its group and cannot publish, create a topic, join another group or reset", async () => {
    const owner = await mortarAs(full);
    const { topicId } = await owner.declare("orders", 1);
    await owner.publish(topicId, 0, null, "order 1");
    const { token } = await issue(["mortar.consume:orders/billing"]);
    const c = await mortarAs(token);
    expect((await c.declare("orders", 1)).topicId).toBe(topicId);
    const sub = await c.subscribe(topicId, "billing", { creditCount: 10 });
    const m = await sub.next(10_000);
    expect(new TextDecoder().decode(m!.value)).toBe("order 1");
    await m!.ack();
    await expect(c.publish(topicId, 0, null, "forged")).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await expect(c.declare("invoices", 1)).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await expect(c.subscribe(topicId, "audit")).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    expect(await http(token, "POST", "/v0/topics/orders/groups/billing/reset", { to: "earliest" }))
      .toEqual({ status: 403, json: { error: denied("mortar.admin", "orders/billing") } });
    expect(await http(token, "POST", "/v0/topics/orders/partitions/0/records", { value: "x" })).toEqual({ status: 403, json: { error: denied("mortar.publish", "orders") } });
    expect(await c.ping()).toBeGreaterThanOrEqual(0); // the connection stayed open
  });
});

describe("a read-only token (usage.read, mq9.query)", () => {
  it("sees the console and /stats but changes nothing", async () => {
    const { token } = await issue(["usage.read", "mq9.query"]);
    const before = (await mq9(full, "$mq9.AI.MSG.QUERY.orders.inbox")).json.messages.length;
    expect((await fetch(`${ctx.broker.url}/console`)).status).toBe(200);
    expect(await http(token, "GET", "/v0/whoami")).toMatchObject({ status: 200, json: { tenant: TENANT, allow: ["usage.read", "mq9.query"], deny: [] } });
    for (const path of ["/stats", "/v0/topics", "/v0/mailboxes", "/v0/usage", "/v0/topics/orders"]) expect([path, (await http(token, "GET", path)).status]).toEqual([path, 200]);
    expect((await http(token, "POST", "/v0/mq9/$mq9.AI.MSG.QUERY.orders.inbox", {})).json.error).toBe("");
    for (const [method, path, body, op, res] of [
      ["POST", "/v0/topics", { name: "dash", partitions: 1 }, "mortar.admin", "dash"], ["DELETE", "/v0/topics/orders", undefined, "mortar.admin", "orders"],
      ["POST", "/v0/topics/orders/partitions/0/records", { value: "x" }, "mortar.publish", "orders"],
      ["GET", "/v0/topics/orders/partitions/0/records", undefined, "mortar.consume", "orders"],
      ["POST", "/v0/mq9/$mq9.AI.MSG.SEND.orders.inbox", "x", "mq9.send", "orders.inbox"],
      ["POST", "/v0/mq9/$mq9.AI.MSG.DELETE.orders.inbox.0", {}, "mq9.delete", "orders.inbox"],
    ] as const) {
      const r = await http(token, method, path, body);
      expect([path, r.status, r.json.error]).toEqual([path, 403, denied(op, res)]);
    }
    expect((await mq9(full, "$mq9.AI.MSG.QUERY.orders.inbox")).json.messages).toHaveLength(before);
  });
});

describe("the console in a browser", () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  it("hides what the token cannot use: read-only sees topics and messages without buttons, a consumer gets Peek only", async () => {
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
    const signedIn = async (token: string) => {
      const page = await browser!.newPage();
      await page.goto(`${ctx.broker.url}/console`);
      await page.getByLabel("Token").fill(token);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: /^Overview of tenant / }).waitFor();
      return page;
    };
    const buttons = async (page: import("playwright-core").Page) => (await page.getByRole("button").allTextContents()).filter((b) => b !== "Sign out");
    const reader = await signedIn((await issue(["usage.read", "mq9.query"])).token);
    await reader.goto(`${ctx.broker.url}/console#/topics`);
    await reader.getByRole("link", { name: "orders", exact: true }).waitFor();
    expect(await reader.getByRole("button", { name: "Create topic" }).count()).toBe(0);
    await reader.goto(`${ctx.broker.url}/console#/topics/orders`);
    await reader.getByRole("heading", { name: "Group billing" }).waitFor();
    expect(await buttons(reader)).toEqual([]); // no publish, peek, group actions or delete
    await reader.goto(`${ctx.broker.url}/console#/mailboxes/orders.inbox`);
    await reader.getByRole("heading", { name: "Mailbox orders.inbox" }).waitFor();
    await reader.getByText("still open").waitFor(); // messages (QUERY) shown
    expect(await buttons(reader)).toEqual([]); // no send, no delete
    const consumer = await signedIn((await issue(["mortar.consume:orders/billing"])).token);
    await consumer.goto(`${ctx.broker.url}/console#/topics/orders`);
    await consumer.getByRole("heading", { name: "Group billing" }).waitFor();
    expect(await buttons(consumer)).toEqual(["Peek"]);
    // no agents.discover, no usage.read: those pages ask nothing and say why (no Discover box, no 403 alert)
    await consumer.goto(`${ctx.broker.url}/console#/agents`);
    await consumer.getByText("This token may not list or discover agents").waitFor();
    await consumer.goto(`${ctx.broker.url}/console#/usage`);
    await consumer.getByText("This token may not read usage").waitFor();
    expect([await buttons(consumer), await consumer.getByRole("alert").allTextContents()]).toEqual([[], []]);
  }, 60_000);
});

describe("a scope change", () => {
  it("reaches an open NATS and an open MortarMQ connection within TENANT_REVALIDATE_MS + one call", async () => {
    const { token, tokenId } = await issue(["mq9.*", "mortar.*"]);
    const nc = await natsAs(token);
    const c = await mortarAs(token);
    const { topicId } = await c.declare("orders", 1);
    await c.publish(topicId, 0, null, "before");
    expect((await natsMq9(nc, "$mq9.AI.MSG.QUERY.orders.inbox")).error).toBe("");
    expect((await http(ADMIN, "PUT", `/admin/tenants/${TENANT}/tokens/${tokenId}/scopes`, { allow: ["mq9.send:orders.inbox"] })).status).toBe(200);
    await until(async () => (await natsMq9(nc, "$mq9.AI.MSG.QUERY.orders.inbox")).error === denied("mq9.query", "orders.inbox"), 20_000, 100);
    await until(async () => (await c.publish(topicId, 0, null, "after").then(() => null, (e: { code?: number }) => e.code)) === ErrorCode.PERMISSION_DENIED, 20_000, 100);
    expect((await natsMq9(nc, "$mq9.AI.MSG.SEND.orders.inbox", "allowed")).error).toBe(""); // both stay open
    expect(await c.ping()).toBeGreaterThanOrEqual(0);
  });
});
