/**
 * The request guard (worker/request-guard.ts; docs/operations.md "Host and
 * Origin checks"): an open broker must not be drivable by web pages. A page
 * on another origin sends "simple" POSTs (text/plain, form bodies: no
 * preflight) and opens WebSockets; a DNS-rebinding page sends its own host
 * name in `Host` and reads every answer. Both are refused before any route
 * runs — and nothing is created — while clients without `Origin` (curl, the
 * CLI, SDKs), the broker's own pages and CORS_ORIGINS origins go on.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";

const LOCAL = { ALLOWED_HOSTS: "localhost,127.0.0.1,[::1]" };

/** The real app with extra vars (the pool's broker runs open). */
function withEnv(vars: Partial<Env>) {
  const custom = { ...(env as unknown as Env), ...vars };
  return async (req: Request) => {
    const res = await app.fetch(req, custom, createExecutionContext());
    if (res.webSocket) {
      res.webSocket.accept();
      res.webSocket.close(1000, "test done");
    }
    return res;
  };
}

const local = withEnv(LOCAL);

/** A request a browser page would send: `init` with `Origin`, no other special header. */
const req = (url: string, init: RequestInit & { origin?: string } = {}) => {
  const headers = new Headers(init.headers);
  if (init.origin !== undefined) headers.set("Origin", init.origin);
  return new Request(url, { ...init, headers });
};

const READS = ["/v0/whoami", "/admin/tenants", "/stats", "/v0/mailboxes", "/metrics", "/healthz"];

describe("Host (ALLOWED_HOSTS)", () => {
  it.each(READS)("GET %s with a rebinding Host is refused with 403 and says why", async (path) => {
    const res = await local(req(`http://rebind.evil.example:8787${path}`));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'host "rebind.evil.example" is not allowed: it is not in ALLOWED_HOSTS (protection against DNS rebinding)' });
  });

  it("MCP tool calls through a rebinding Host are refused with a JSON-RPC error", async () => {
    const res = await local(req("http://rebind.evil.example:8787/mcp", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      jsonrpc: "2.0", id: null,
      error: { code: -32000, message: 'host "rebind.evil.example" is not allowed: it is not in ALLOWED_HOSTS (protection against DNS rebinding)' },
    });
  });

  it("the loopback names pass on any port; *.suffix, * and an unset list", async () => {
    for (const host of ["127.0.0.1:8787", "localhost:1", "[::1]:8787", "LOCALHOST"]) {
      expect((await local(req(`http://${host}/v0/whoami`))).status).toBe(200);
    }
    const suffix = withEnv({ ALLOWED_HOSTS: "*.example.com" });
    expect((await suffix(req("http://a.example.com/healthz"))).status).toBe(200);
    expect((await suffix(req("http://example.com/healthz"))).status).toBe(403);
    expect((await withEnv({ ALLOWED_HOSTS: "*" })(req("http://rebind.evil.example/healthz"))).status).toBe(200);
    expect((await withEnv({ ALLOWED_HOSTS: "" })(req("http://broker.example/healthz"))).status).toBe(200); // a deployment: Cloudflare routes by host
  });
});

describe("Origin (same origin, CORS_ORIGINS)", () => {
  const EVIL = "https://evil.example";

  it("text/plain and form POSTs from another origin create nothing", async () => {
    const simple = [
      ["/mq9/$mq9.AI.MAILBOX.CREATE", "text/plain", JSON.stringify({ name: "guard.evil" })],
      ["/v0/mq9/$mq9.AI.MAILBOX.CREATE", "text/plain", JSON.stringify({ name: "guard.evil2" })],
      ["/v0/topics", "text/plain", JSON.stringify({ name: "guard-evil", partitions: 1 })],
      ["/admin/tenants", "application/x-www-form-urlencoded", JSON.stringify({ id: "guard-evil" })],
    ] as const;
    for (const [path, type, body] of simple) {
      const res = await local(req(`http://127.0.0.1:8787${path}`, { method: "POST", origin: EVIL, headers: { "Content-Type": type }, body }));
      expect({ path, status: res.status, body: await res.json() }).toEqual({
        path, status: 403, body: { error: 'cross-origin request from origin "https://evil.example" refused: it is not in CORS_ORIGINS' },
      });
    }
    const mailboxes = (await (await local(req("http://127.0.0.1:8787/v0/mailboxes"))).json()) as { mailboxes: { mail_address: string }[] };
    expect(mailboxes.mailboxes.map((m) => m.mail_address)).not.toContain("guard.evil");
    const topics = (await (await local(req("http://127.0.0.1:8787/v0/topics"))).json()) as { topics: { name: string }[] };
    expect(topics.topics.map((t) => t.name)).not.toContain("guard-evil");
    expect((await local(req("http://127.0.0.1:8787/admin/tenants/guard-evil"))).status).toBe(404);
  });

  it("/mcp from another origin is refused (the MCP transport's Origin rule)", async () => {
    const res = await local(req("http://127.0.0.1:8787/mcp", {
      method: "POST", origin: EVIL,
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("not in CORS_ORIGINS");
  });

  it.each(["/nats", "/v0/mortar"])("%s: a WebSocket upgrade from another origin (or null) is refused, the broker's own origin connects", async (path) => {
    const upgrade = (origin?: string) => req(`http://127.0.0.1:8787${path}`, { origin, headers: { Upgrade: "websocket" } });
    const refused = await local(upgrade(EVIL));
    expect({ status: refused.status, body: await refused.text() }).toEqual({
      status: 403, body: 'WebSocket upgrade from origin "https://evil.example" refused: it is not in CORS_ORIGINS',
    });
    expect((await local(upgrade("null"))).status).toBe(403);
    expect((await local(upgrade("http://127.0.0.1:8787"))).status).toBe(101);
    expect((await local(upgrade())).status).toBe(101);
  });

  it("reads of public metadata under /.well-known/ are not refused by Origin; a POST there is", async () => {
    const read = await local(req("http://127.0.0.1:8787/.well-known/oauth-protected-resource", { origin: EVIL }));
    expect(read.status).not.toBe(403);
    expect((await local(req("http://127.0.0.1:8787/.well-known/x", { method: "POST", origin: EVIL, body: "{}" }))).status).toBe(403);
    expect((await local(req("http://rebind.evil.example/.well-known/oauth-protected-resource"))).status).toBe(403); // Host still checked
  });

  it("the broker's own origin, a listed origin and requests without Origin go on", async () => {
    const post = (origin?: string) => req("http://127.0.0.1:8787/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", origin, body: "{}" });
    expect((await local(post("http://127.0.0.1:8787"))).status).toBe(200); // the console
    expect((await local(post())).status).toBe(200); // curl -d, the CLI
    expect((await local(post("http://127.0.0.1:9999"))).status).toBe(403); // another port is another origin
    const listed = withEnv({ ...LOCAL, CORS_ORIGINS: "https://app.example" });
    const ok = await listed(post("https://app.example"));
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect((await listed(post(EVIL))).status).toBe(403);
    expect((await withEnv({ CORS_ORIGINS: "*" })(post(EVIL))).status).toBe(200);
  });
});
