/**
 * The local broker as `npm start` runs it (open, on 127.0.0.1) cannot be
 * driven by web pages (worker/request-guard.ts; docs/operations.md "Host and
 * Origin checks"): a DNS-rebinding page's `Host` and another origin's
 * "simple" POST are refused over a real socket, while curl-style requests
 * (no Origin), the broker's own origin and the MCP endpoint's own clients
 * are answered. `mortarmq dev` sets ALLOWED_HOSTS itself.
 */
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";

const e2e = useLocalBroker("guard");

/** One request over node:http (which, unlike fetch, may set `Host`); resolves with status and body. */
function send(method: string, path: string, headers: Record<string, string>, body = ""): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: e2e.broker.port, method, path, headers: { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}



describe("Host and Origin on the local broker", () => {
  it("a DNS-rebinding Host reads nothing and calls no MCP tool", async () => {
    const host = { host: `rebind.evil.example:${e2e.broker.port}` };
    for (const path of ["/v0/whoami", "/admin/tenants", "/stats", "/v0/mailboxes"]) {
      expect({ path, ...(await send("GET", path, host)) }).toEqual({
        path, status: 403, body: JSON.stringify({ error: 'host "rebind.evil.example" is not allowed: it is not in ALLOWED_HOSTS (protection against DNS rebinding)' }),
      });
    }
    const mcp = await send("POST", "/mcp", { ...host, "content-type": "application/json", accept: "application/json, text/event-stream" },
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "mailbox_create", arguments: { name: "rebound" } } }));
    expect(mcp.status).toBe(403);
    expect((await send("GET", "/v0/whoami", { host: `localhost:${e2e.broker.port}` })).status).toBe(200);
  });

  it("another origin's text/plain POST creates no mailbox; curl's form POST and the broker's own origin do", async () => {
    const create = (name: string, headers: Record<string, string>) =>
      send("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", headers, JSON.stringify({ name }));
    const evil = await create("guard.evil", { origin: "https://evil.example", "content-type": "text/plain" });
    expect(evil).toEqual({ status: 403, body: JSON.stringify({ error: 'cross-origin request from origin "https://evil.example" refused: it is not in CORS_ORIGINS' }) });
    expect((await create("guard.curl", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(200); // curl -d
    expect((await create("guard.console", { origin: e2e.broker.url, "content-type": "text/plain" })).status).toBe(200);
    const list = JSON.parse((await send("GET", "/v0/mailboxes", {})).body) as { mailboxes: { mail_address: string }[] };
    expect(list.mailboxes.map((m) => m.mail_address).sort()).toEqual(["guard.console", "guard.curl"]);
  });
});
