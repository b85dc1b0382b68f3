/** The MCP tools' pure mapping (wire/mcp/tools.ts): arguments → one mq9 request, reply → result, payload views. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MCP_MAX_WAIT_MS, MQ9_TOOLS, ToolInputError, messageView, type Mq9Tool } from "../../wire/mcp/tools";
import { A2A_TOOLS } from "../../wire/mcp/a2a-tools";

const ALL = [...MQ9_TOOLS, ...A2A_TOOLS];
const tool = (name: string): Mq9Tool => ALL.find((t) => t.name === name)!;
const CTX = { origin: "https://mq.example.com" };
const td = new TextDecoder();
/** Validates `args` with the tool's schema (as the SDK does), then maps them. */
function request(name: string, args: Record<string, unknown>) {
  const parsed = z.object(tool(name).inputSchema).parse(args);
  const r = tool(name).request(parsed);
  return { subject: r.subject, headers: Object.fromEntries(r.headers), body: td.decode(r.payload) };
}

describe("MCP tool → mq9 request", () => {
  it("one tool per mq9 command and two for A2A inboxes, each named mq9_*", () => {
    expect(MQ9_TOOLS.map((t) => t.name)).toHaveLength(10);
    expect(A2A_TOOLS.map((t) => t.name)).toEqual(["mq9_create_a2a_receiver", "mq9_list_a2a_updates"]);
    expect(new Set(ALL.map((t) => t.name)).size).toBe(12);
  });

  it("A2A inbox tools: receiver CREATE with the URL on the caller's origin; updates are a tag-a2a QUERY, bodies parsed", () => {
    expect(request("mq9_create_a2a_receiver", { mail_address: "a.b" })).toEqual({ subject: "$mq9.AI.A2A.RECEIVER.CREATE.a.b", headers: {}, body: "" });
    expect(tool("mq9_create_a2a_receiver").result({ error: "", token: "a2a_x", path: "/a2a/push/a.b" }, {}, CTX)).toEqual({ url: "https://mq.example.com/a2a/push/a.b", token: "a2a_x" });
    expect(request("mq9_list_a2a_updates", { mail_address: "a.b", task_id: "t1" }).body).toBe('{"tags":["a2a"],"correlation_id":"t1","limit":50}');
    expect(request("mq9_list_a2a_updates", { mail_address: "a.b" }).body).toBe('{"tags":["a2a"],"limit":50}');
    const body = { statusUpdate: { taskId: "t1", status: { state: "TASK_STATE_WORKING" } } };
    const m = { msg_id: 4, payload: btoa(JSON.stringify(body)), priority: "normal" as const, create_time: 9, key: "a2a:k", tags: ["a2a", "a2a.status-update"], correlation_id: "t1" };
    expect(tool("mq9_list_a2a_updates").result({ error: "", messages: [m] }, {}, CTX)).toEqual({ updates: [{ msg_id: 4, task_id: "t1", kind: "status-update", create_time: 9, update: body }] });
  });

  it("send: the options become mq9-* headers, the payload the body (text or base64)", () => {
    expect(request("mq9_send_message", { mail_address: "a.b", payload: "hi", priority: "urgent", reply_to: "r.box", correlation_id: "c1", tags: ["x", "y"], delay_seconds: 5, ttl_seconds: 60, key: "k" })).toEqual({
      subject: "$mq9.AI.MSG.SEND.a.b",
      headers: { "mq9-priority": "urgent", "mq9-reply-to": "r.box", "mq9-correlation-id": "c1", "mq9-key": "k", "mq9-tags": "x,y", "mq9-delay": "5", "mq9-ttl": "60" },
      body: "hi",
    });
    const bin = tool("mq9_send_message").request({ mail_address: "a.b", payload: "AAH/", payload_encoding: "base64" });
    expect([...bin.payload]).toEqual([0, 1, 255]);
    expect(() => tool("mq9_send_message").request({ mail_address: "a.b", payload: "not base64!", payload_encoding: "base64" })).toThrow(ToolInputError);
  });

  it("fetch: defaults of the tool (10 messages, no wait), the long-poll capped at 10 s by the schema", () => {
    expect(request("mq9_fetch_messages", { mail_address: "a.b", group_name: "g" })).toEqual({
      subject: "$mq9.AI.MSG.FETCH.a.b", headers: {}, body: JSON.stringify({ group_name: "g", config: { num_msgs: 10, max_wait_ms: 0 } }),
    });
    expect(() => request("mq9_fetch_messages", { mail_address: "a.b", max_wait_ms: MCP_MAX_WAIT_MS + 1 })).toThrow();
    expect(() => request("mq9_fetch_messages", { mail_address: "a.b", max_messages: 101 })).toThrow();
  });

  it("ack, query, delete, create and the agent tools map to their subjects and bodies", () => {
    expect(request("mq9_ack_message", { mail_address: "a.b", group_name: "g", msg_id: 3 }).body).toBe('{"group_name":"g","mail_address":"a.b","msg_id":3}');
    expect(request("mq9_query_messages", { mail_address: "a.b", correlation_id: "c" }).body).toBe('{"correlation_id":"c","limit":20}');
    expect(request("mq9_delete_message", { mail_address: "a.b", msg_id: 7 })).toEqual({ subject: "$mq9.AI.MSG.DELETE.a.b.7", headers: {}, body: "" });
    expect(request("mq9_create_mailbox", {})).toEqual({ subject: "$mq9.AI.MAILBOX.CREATE", headers: {}, body: "{}" });
    expect(JSON.parse(request("mq9_register_agent", { name: "t", mailbox: "t.inbox", card: { version: "2", name: "ignored" } }).body)).toEqual({ version: "2", name: "t", mailbox: "t.inbox" });
    expect(JSON.parse(request("mq9_report_status", { name: "t", status: "busy", details: { load: 3 } }).body)).toEqual({ load: 3, name: "t", status: "busy" });
    expect(request("mq9_discover_agents", { text: "pay" }).body).toBe('{"text":"pay","limit":20,"page":1}');
  });

  it("results: the reply's fields for the model", () => {
    expect(tool("mq9_send_message").result({ error: "", msg_id: -1 }, {}, CTX)).toEqual({ msg_id: -1, note: "delayed: the message gets its msg_id when it becomes visible" });
    expect(tool("mq9_register_agent").result({ error: "" }, { name: "t" }, CTX)).toEqual({ registered: "t" });
    expect(tool("mq9_unregister_agent").result({ error: "", removed: false }, {}, CTX)).toEqual({ removed: false });
  });
});

describe("payload views", () => {
  const m = (bytes: number[]) => ({ msg_id: 1, payload: btoa(String.fromCharCode(...bytes)), priority: "normal" as const, create_time: 5, key: null, tags: [] });
  it("UTF-8 as text (a BOM kept), anything else as base64, and says which", () => {
    expect(messageView(m([...new TextEncoder().encode("héllo")]))).toMatchObject({ payload: "héllo", payload_encoding: "text" });
    expect(messageView(m([0xef, 0xbb, 0xbf, 0x61]))).toMatchObject({ payload: "\ufeffa", payload_encoding: "text" });
    expect(messageView(m([0, 1, 255]))).toMatchObject({ payload: "AAH/", payload_encoding: "base64" });
    expect(messageView(m([]))).toMatchObject({ payload: "", payload_encoding: "text" });
  });
  it("carries reply_to and correlation_id only when the message has them", () => {
    expect(Object.keys(messageView(m([0x61])))).not.toContain("reply_to");
    expect(messageView({ ...m([0x61]), reply_to: "r.box", correlation_id: "c" })).toMatchObject({ reply_to: "r.box", correlation_id: "c" });
  });
});
