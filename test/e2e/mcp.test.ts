/**
 * End-to-end: `POST /mcp` of the real local broker (tokens configured, two
 * tenants) driven by the MCP SDK's own client over Streamable HTTP — the
 * tool list, a conversation between two agents through the tools,
 * malformed arguments and mq9 errors as tool errors, tenant isolation, and
 * the refusals of the route itself.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";

const ACME = "mcp-token-acme";
const ACME_2 = "mcp-token-acme-2";
const BETA = "mcp-token-beta";
let broker: LocalBroker;
let stateDir: string;
const clients: Client[] = [];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-mcp-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${ACME}:acme,${ACME_2}:acme,${BETA}:beta` } });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** An MCP client (the SDK's) connected to the broker's /mcp with `token`. */
async function agent(name: string, token: string): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${broker.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

type ToolResult = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };

/** Calls a tool; returns the parsed JSON result, or `{error}` for a tool error. */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = (await client.callTool({ name, arguments: args })) as ToolResult;
  const text = r.content[0]!.text;
  if (r.isError) return { error: text };
  const parsed = JSON.parse(text) as Record<string, unknown>;
  expect(r.structuredContent).toEqual(parsed);
  return parsed;
}

const suffix = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
/** A word no other card has (letters only: full-text search splits letters from digits). */
const marker = () => "zq" + Array.from({ length: 12 }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(Math.random() * 26)]).join("");

describe("POST /mcp", () => {
  it("refuses a missing or unknown token with 401 before reading any MCP message; GET is 405", async () => {
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "0" } } };
    const post = (headers: Record<string, string>) => fetch(`${broker.url}/mcp`, {
      method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(init),
    });
    const missing = await post({});
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe(`Bearer realm="mortarmq", resource_metadata="${broker.url}/.well-known/oauth-protected-resource/mcp"`);
    expect(await missing.json()).toEqual({ jsonrpc: "2.0", error: { code: -32001, message: "unauthorized: missing bearer token" }, id: null });
    const wrong = await post({ authorization: "Bearer nope" });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toBe("unauthorized: invalid token");
    const ok = await post({ authorization: `Bearer ${ACME}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("mcp-session-id")).toBeNull(); // stateless
    expect(await ok.json()).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "mortarmq-edge" }, capabilities: { tools: {} } } });
    const get = await fetch(`${broker.url}/mcp`, { headers: { authorization: `Bearer ${ACME}`, accept: "text/event-stream" } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const sdk = new Client({ name: "no-token", version: "1" });
    await expect(sdk.connect(new StreamableHTTPClientTransport(new URL(`${broker.url}/mcp`)))).rejects.toThrow(/401|unauthorized/i);
  });

  it("lists the ten mq9 tools and the two A2A inbox tools with their input schemas", async () => {
    const client = await agent("lister", ACME);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      "mq9_create_mailbox", "mq9_send_message", "mq9_fetch_messages", "mq9_ack_message", "mq9_query_messages",
      "mq9_delete_message", "mq9_register_agent", "mq9_unregister_agent", "mq9_report_status", "mq9_discover_agents",
      "mq9_create_a2a_receiver", "mq9_list_a2a_updates",
    ]);
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(80);
      expect(t.inputSchema.type).toBe("object");
    }
    const fetchTool = tools.find((t) => t.name === "mq9_fetch_messages")!;
    expect(fetchTool.inputSchema.required).toEqual(["mail_address"]);
    expect((fetchTool.inputSchema.properties as Record<string, { maximum?: number }>).max_wait_ms!.maximum).toBe(10_000);
    const send = tools.find((t) => t.name === "mq9_send_message")!;
    expect(Object.keys(send.inputSchema.properties!)).toEqual(expect.arrayContaining(["reply_to", "correlation_id", "payload_encoding"]));
    expect(client.getInstructions()).toContain("mq9_fetch_messages");
  });

  it("two agents find each other and hold a conversation through the tools", async () => {
    const s = suffix();
    const word = marker();
    const planner = await agent("planner", ACME);
    const translator = await agent("translator", ACME_2); // another token of the same tenant
    const plannerBox = `agent.planner.${s}`;
    const translatorBox = `agent.translator.${s}`;
    expect(await call(planner, "mq9_create_mailbox", { name: plannerBox, ttl_seconds: 600 })).toEqual({ mail_address: plannerBox });
    expect(await call(translator, "mq9_create_mailbox", { name: translatorBox, ttl_seconds: 600 })).toEqual({ mail_address: translatorBox });
    expect(await call(translator, "mq9_register_agent", {
      name: `translator-${s}`, description: `Translates documents between languages (${word})`, mailbox: `mq9://broker/${translatorBox}`,
      skills: [{ name: "translate", tags: ["i18n"] }],
    })).toEqual({ registered: `translator-${s}` });
    expect(await call(planner, "mq9_register_agent", { name: `planner-${s}`, description: "Plans trips", mailbox: plannerBox })).toEqual({ registered: `planner-${s}` });

    const found = await call(planner, "mq9_discover_agents", { text: word });
    expect(found.agents).toEqual([expect.objectContaining({ name: `translator-${s}`, mailbox: `mq9://broker/${translatorBox}` })]);

    // the translator waits for work (long-poll) while the planner sends its request
    const waiting = call(translator, "mq9_fetch_messages", { mail_address: translatorBox, group_name: "translator", deliver: "earliest", max_wait_ms: 8000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await call(planner, "mq9_send_message", {
      mail_address: translatorBox, payload: "Translate to French: good morning", reply_to: plannerBox, correlation_id: "job-1", priority: "urgent",
    })).toEqual({ msg_id: 0 });
    const work = (await waiting).messages as Record<string, unknown>[];
    expect(work).toEqual([{
      msg_id: 0, priority: "urgent", create_time: expect.any(Number), key: null, tags: [],
      reply_to: plannerBox, correlation_id: "job-1", payload: "Translate to French: good morning", payload_encoding: "text",
    }]);

    // the translator answers to reply_to with the correlation id, then acknowledges the request
    expect(await call(translator, "mq9_send_message", { mail_address: work[0]!.reply_to, payload: "bonjour", correlation_id: work[0]!.correlation_id })).toEqual({ msg_id: 0 });
    expect(await call(translator, "mq9_ack_message", { mail_address: translatorBox, group_name: "translator", msg_id: 0 })).toEqual({ acknowledged: true });
    expect(await call(translator, "mq9_fetch_messages", { mail_address: translatorBox, group_name: "translator" })).toEqual({ messages: [] });
    expect(await call(translator, "mq9_report_status", { name: `translator-${s}`, status: "idle", details: { jobs_done: 1 } })).toEqual({ reported: true });

    // the planner reads the answer and acknowledges it
    const answer = (await call(planner, "mq9_fetch_messages", { mail_address: plannerBox, group_name: "planner", deliver: "earliest" })).messages as Record<string, unknown>[];
    expect(answer.map((m) => [m.payload, m.correlation_id, m.payload_encoding])).toEqual([["bonjour", "job-1", "text"]]);
    expect(await call(planner, "mq9_ack_message", { mail_address: plannerBox, group_name: "planner", msg_id: answer[0]!.msg_id })).toEqual({ acknowledged: true });
    const conversation = (await call(planner, "mq9_query_messages", { mail_address: translatorBox, correlation_id: "job-1" })).messages as Record<string, unknown>[];
    expect(conversation.map((m) => m.payload)).toEqual(["Translate to French: good morning"]);
    const again = await call(planner, "mq9_discover_agents", { text: word });
    expect((again.agents as Record<string, { report: Record<string, unknown> }>[])[0]!._mq9!.report).toEqual({ name: `translator-${s}`, status: "idle", jobs_done: 1 });

    // binary payloads travel as base64 and say so
    expect(await call(planner, "mq9_send_message", { mail_address: translatorBox, payload: "AAH/", payload_encoding: "base64" })).toEqual({ msg_id: 1 });
    const [bin] = (await call(planner, "mq9_query_messages", { mail_address: translatorBox, limit: 1 })).messages as Record<string, unknown>[];
    expect([bin!.payload, bin!.payload_encoding]).toEqual(["AAH/", "base64"]);
    expect(await call(planner, "mq9_delete_message", { mail_address: translatorBox, msg_id: 1 })).toEqual({ deleted: true });
    expect(await call(planner, "mq9_unregister_agent", { name: `planner-${s}` })).toEqual({ removed: true });
    expect(await call(planner, "mq9_unregister_agent", { name: `planner-${s}` })).toEqual({ removed: false });
  });

  it("A2A inbox tools: a receiver made through MCP takes a push notification, listed per task", async () => {
    const client = await agent("a2a-client", ACME);
    const box = `a2a.inbox.${suffix()}`;
    await call(client, "mq9_create_mailbox", { name: box, ttl_seconds: 600 });
    const { url, token } = (await call(client, "mq9_create_a2a_receiver", { mail_address: box })) as { url: string; token: string };
    expect(url).toBe(`${broker.url}/a2a/push/${box}`);
    const notify = (taskId: string, state: string) => fetch(url, {
      method: "POST", headers: { "content-type": "application/json", "x-a2a-notification-token": token },
      body: JSON.stringify({ statusUpdate: { taskId, contextId: "c", status: { state } } }),
    });
    expect((await notify("t-1", "TASK_STATE_WORKING")).status).toBe(200);
    expect((await notify("t-2", "TASK_STATE_WORKING")).status).toBe(200);
    expect((await notify("t-1", "TASK_STATE_COMPLETED")).status).toBe(200);
    const { updates } = (await call(client, "mq9_list_a2a_updates", { mail_address: box, task_id: "t-1" })) as { updates: Record<string, unknown>[] };
    expect(updates.map((u) => [u.task_id, u.kind, (u.update as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state]))
      .toEqual([["t-1", "status-update", "TASK_STATE_WORKING"], ["t-1", "status-update", "TASK_STATE_COMPLETED"]]);
    expect(((await call(client, "mq9_list_a2a_updates", { mail_address: box })) as { updates: unknown[] }).updates).toHaveLength(3);
  });

  it("malformed arguments and mq9 errors are tool errors with the explanation, never HTTP errors", async () => {
    const client = await agent("clumsy", ACME);
    const missingArg = await call(client, "mq9_fetch_messages", {});
    expect(missingArg.error).toMatch(/Input validation error: Invalid arguments for tool mq9_fetch_messages/);
    expect(missingArg.error).toContain("mail_address");
    expect((await call(client, "mq9_fetch_messages", { mail_address: "a.b", max_wait_ms: 60_000 })).error).toMatch(/max_wait_ms/);
    expect((await call(client, "mq9_ack_message", { mail_address: "a.b", group_name: "g", msg_id: "seven" })).error).toMatch(/msg_id/);
    const box = `missing.${suffix()}`;
    expect(await call(client, "mq9_fetch_messages", { mail_address: box })).toEqual({ error: `mailbox ${box} does not exist` });
    expect(await call(client, "mq9_send_message", { mail_address: box, payload: "x" })).toEqual({ error: `mailbox ${box} does not exist` });
    expect(await call(client, "mq9_send_message", { mail_address: "Upper.Case", payload: "x" })).toEqual({ error: 'invalid mail_address "Upper.Case": contains upper-case "U" (addresses are lower case)' });
    expect(await call(client, "mq9_send_message", { mail_address: "a.b", payload: "***", payload_encoding: "base64" })).toEqual({ error: 'payload is not valid base64 (payload_encoding "base64"); send text with payload_encoding "text"' });
    expect(await call(client, "mq9_send_message", { mail_address: "a.b", payload: "x", reply_to: "not valid" })).toEqual({ error: 'invalid mq9-reply-to "not valid": contains " " (allowed: a-z, 0-9 and ".") (it must be a mail_address)' });
    expect(await call(client, "mq9_delete_message", { mail_address: box, msg_id: 0 })).toEqual({ error: `mailbox ${box} does not exist` });
    expect(await call(client, "mq9_unregister_agent", {})).toEqual({ error: "UNREGISTER needs the agent's name or mailbox" });
    expect(await call(client, "mq9_report_status", { name: `nobody-${suffix()}`, status: "idle" })).toMatchObject({ error: expect.stringMatching(/^agent nobody-\S+ is not registered$/) });
    const unknown = (await client.callTool({ name: "mq9_push", arguments: {} })) as ToolResult;
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0]!.text).toMatch(/Tool mq9_push not found/);
  });

  it("keeps tenants apart: beta does not see acme's mailboxes, messages or agents", async () => {
    const s = suffix();
    const word = marker();
    const acme = await agent("acme", ACME);
    const beta = await agent("beta", BETA);
    const box = `shared.name.${s}`;
    await call(acme, "mq9_create_mailbox", { name: box, ttl_seconds: 600 });
    await call(acme, "mq9_send_message", { mail_address: box, payload: "acme secret" });
    await call(acme, "mq9_register_agent", { name: `acme-agent-${s}`, description: `only for acme ${word}` });
    expect(await call(beta, "mq9_query_messages", { mail_address: box })).toEqual({ error: `mailbox ${box} does not exist` });
    expect(await call(beta, "mq9_send_message", { mail_address: box, payload: "x" })).toEqual({ error: `mailbox ${box} does not exist` });
    expect(await call(beta, "mq9_discover_agents", { text: word })).toEqual({ agents: [] });
    expect(((await call(acme, "mq9_discover_agents", { text: word })).agents as { name: string }[]).map((a) => a.name)).toEqual([`acme-agent-${s}`]);
    // the same name is beta's own, separate mailbox
    expect(await call(beta, "mq9_create_mailbox", { name: box, ttl_seconds: 600 })).toEqual({ mail_address: box });
    expect(await call(beta, "mq9_query_messages", { mail_address: box })).toEqual({ messages: [] });
    expect(((await call(acme, "mq9_query_messages", { mail_address: box })).messages as { payload: string }[]).map((m) => m.payload)).toEqual(["acme secret"]);
  });
});
