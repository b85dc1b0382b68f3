/**
 * `POST /mcp` inside workerd (vitest pool, AUTH_TOKENS acme/beta): the MCP
 * SDK's client, fetching through the Worker, acts for the tenant of its
 * bearer token only; without a token the route refuses.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

async function mcp(token: string | null): Promise<Client> {
  const client = new Client({ name: "pool", version: "1" });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL("http://broker/mcp"), { requestInit: { headers }, fetch: (u, init) => SELF.fetch(u, init) }));
  return client;
}

async function tool(c: Client, name: string, args: Record<string, unknown>): Promise<{ error?: string } & Record<string, unknown>> {
  const r = (await c.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
  return r.isError ? { error: r.content[0]!.text } : (JSON.parse(r.content[0]!.text) as Record<string, unknown>);
}

describe("POST /mcp with tokens configured", () => {
  it("refuses a client without a token", async () => {
    await expect(mcp(null)).rejects.toThrow(/401|unauthorized/i);
  });

  it("each token's tools act for its tenant only", async () => {
    const acme = await mcp("test-token-acme");
    const beta = await mcp("test-token-beta");
    const box = `pool.mcp.${Date.now().toString(36)}`;
    expect(await tool(acme, "mq9_create_mailbox", { name: box })).toEqual({ mail_address: box });
    expect(await tool(acme, "mq9_send_message", { mail_address: box, payload: "for acme", correlation_id: "c-1", reply_to: "acme.replies" })).toEqual({ msg_id: 0 });
    expect(await tool(beta, "mq9_fetch_messages", { mail_address: box, deliver: "earliest" })).toEqual({ error: `mailbox ${box} does not exist` });
    const got = (await tool(acme, "mq9_fetch_messages", { mail_address: box, deliver: "earliest" })).messages as Record<string, unknown>[];
    expect(got.map((m) => [m.payload, m.payload_encoding, m.reply_to, m.correlation_id])).toEqual([["for acme", "text", "acme.replies", "c-1"]]);
    await acme.close();
    await beta.close();
  });
});

describe("POST /mcp JSON-RPC batches", () => {
  const post = (body: string) => SELF.fetch("http://broker/mcp", {
    method: "POST", body,
    headers: { Authorization: "Bearer test-token-acme", "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
  });

  it("an empty batch is one Invalid Request error (JSON-RPC 2.0 §6), not 202 with no body", async () => {
    for (const body of ["[]", " [ ]\n"]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request: the batch is empty" }, id: null });
    }
  });

  it("a gzip body is decoded (Content-Encoding, docs/operations.md)", async () => {
    const json = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" });
    const gz = new Uint8Array(await new Response(new Blob([json]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
    const res = await SELF.fetch("http://broker/mcp", {
      method: "POST", body: gz,
      headers: {
        Authorization: "Bearer test-token-acme", "Content-Type": "application/json", "Content-Encoding": "gzip",
        Accept: "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18",
      },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: number; result: { tools: unknown[] } }).result.tools).toHaveLength(12);
  });

  it("a batch of notifications is still 202 with no body", async () => {
    const res = await post(JSON.stringify([{ jsonrpc: "2.0", method: "notifications/initialized" }]));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });
});

