import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";
import { createMailbox, freshAddress, mq9, send } from "../helpers/mq9";

/** The real app with tokens configured: tenants "alpha" and "beta". */
function withEnv(vars: Partial<Env>) {
  const custom = { ...(env as unknown as Env), ...vars };
  return (req: Request) => Promise.resolve(app.fetch(req, custom, createExecutionContext()));
}
const authed = withEnv({ AUTH_TOKENS: "tok-a:alpha,tok-b:beta" });
const as = (token: string | null) => (req: Request) => {
  if (token !== null) req.headers.set("Authorization", `Bearer ${token}`);
  return authed(req);
};

describe("POST /mq9/<subject>", () => {
  it("isolates tenants: a mailbox of tenant A is invisible to tenant B", async () => {
    const name = freshAddress("iso");
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name }, {}, as("tok-a"))).body).toEqual({ error: "", mail_address: name });
    expect((await mq9(`$mq9.AI.MSG.SEND.${name}`, "secret", {}, as("tok-a"))).body).toEqual({ error: "", msg_id: 0 });
    const missing = { status: 404, body: { error: `mailbox ${name} does not exist` } };
    expect(await mq9(`$mq9.AI.MSG.QUERY.${name}`, {}, {}, as("tok-b"))).toEqual(missing);
    expect(await mq9(`$mq9.AI.MSG.SEND.${name}`, "x", {}, as("tok-b"))).toEqual(missing);
    // The open broker's tenant "default" does not see it either.
    expect(await mq9(`$mq9.AI.MSG.QUERY.${name}`, {})).toEqual(missing);
    // B may create the same name independently.
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name }, {}, as("tok-b"))).body).toEqual({ error: "", mail_address: name });
    expect((await mq9(`$mq9.AI.MSG.QUERY.${name}`, {}, {}, as("tok-b"))).body).toEqual({ error: "", messages: [] });
    const a = await mq9(`$mq9.AI.MSG.QUERY.${name}`, {}, {}, as("tok-a"));
    expect((a.body.messages as { payload: string }[]).map((m) => atob(m.payload))).toEqual(["secret"]);
  });

  it("answers 401 when tokens are configured and the bearer token is missing or wrong", async () => {
    const missing = await mq9("$mq9.AI.MAILBOX.CREATE", {}, {}, as(null));
    expect(missing).toEqual({ status: 401, body: { error: "unauthorized: missing bearer token" } });
    const wrong = await mq9("$mq9.AI.MAILBOX.CREATE", {}, {}, as("tok-x"));
    expect(wrong).toEqual({ status: 401, body: { error: "unauthorized: invalid token" } });
  });

  it("stays closed when AUTH_TOKENS is set but none of its entries is usable", async () => {
    // Tenant ids are [a-z0-9_-]{1,64}: "Acme.Corp" is not one, so the entry is skipped. That must not open the broker.
    const misconfigured = withEnv({ AUTH_TOKENS: "tok-a:Acme.Corp" });
    const call = (token: string | null) => (req: Request) => {
      if (token !== null) req.headers.set("Authorization", `Bearer ${token}`);
      return misconfigured(req);
    };
    expect(await mq9("$mq9.AI.MAILBOX.CREATE", {}, {}, call(null))).toEqual({ status: 401, body: { error: "unauthorized: missing bearer token" } });
    expect(await mq9("$mq9.AI.MAILBOX.CREATE", {}, {}, call("tok-a"))).toEqual({ status: 401, body: { error: "unauthorized: invalid token" } });
    expect((await mq9("$mq9.AI.AGENT.DISCOVER", {}, {}, call("anything"))).status).toBe(401);
    const preflight = new Request("http://broker/mq9/x", {
      method: "OPTIONS",
      headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "POST" },
    });
    expect((await misconfigured(preflight)).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("answers unknown subjects with 404 and a clear error", async () => {
    expect(await mq9("$mq9.AI.MSG.PUSH.task.001", "x")).toEqual({ status: 404, body: { error: 'unknown mq9 subject "$mq9.AI.MSG.PUSH.task.001"' } });
    expect((await mq9("hello.world", "x")).status).toBe(404);
  });

  it("answers other methods with a JSON 405", async () => {
    const res = await SELF.fetch("http://broker/mq9/$mq9.AI.MAILBOX.CREATE");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, OPTIONS");
    expect(await res.json()).toEqual({ error: "mq9 requests use POST /mq9/<subject>" });
  });

  it("does not echo a 60 KB address back in the error", async () => {
    const r = await mq9(`$mq9.AI.MSG.SEND.${"a".repeat(60_000)}`, "x");
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`invalid mail_address "${"a".repeat(128)}…": longer than 128 characters`);
  });

  it("answers OPTIONS without an Origin with 204 and Allow", async () => {
    const res = await SELF.fetch("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "OPTIONS" });
    expect(res.status).toBe(204);
    expect(res.headers.get("allow")).toBe("POST, OPTIONS");
    const nats = await SELF.fetch("http://broker/nats", { method: "OPTIONS" });
    expect(nats.status).toBe(204);
    expect(nats.headers.get("allow")).toBe("GET, OPTIONS");
  });

  it("routes AGENT subjects to the agent handler", async () => {
    const r = await mq9("$mq9.AI.AGENT.DISCOVER", {});
    expect(typeof r.body.error).toBe("string");
    expect(r.status).not.toBe(404);
  });

  it("accepts a percent-encoded subject and rejects broken encoding", async () => {
    const a = await createMailbox();
    const res = await SELF.fetch(`http://broker/mq9/%24mq9.AI.MSG.SEND.${a}`, { method: "POST", body: "x" });
    expect(await res.json()).toEqual({ error: "", msg_id: 0 });
    const bad = await SELF.fetch("http://broker/mq9/%E0%A4%A", { method: "POST" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("percent-encoding");
  });

  it("rejects an over-size body by Content-Length before reading it", async () => {
    const a = await createMailbox();
    const r = await mq9(`$mq9.AI.MSG.SEND.${a}`, new Uint8Array(2 * 1024 * 1024));
    expect(r.status).toBe(413);
    expect(r.body.error).toBe("payload of 2097152 bytes exceeds the limit of 1048576 bytes");
    expect(await send(a, "ok")).toBe(0);
  });
});

describe("CORS", () => {
  const preflight = (path: string, origin: string) =>
    new Request(`http://broker${path}`, {
      method: "OPTIONS",
      headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "mq9-priority, authorization" },
    });

  it("allows a CORS_ORIGINS origin and the mq9 headers; with none listed, no other origin even while the broker runs open", async () => {
    const open = await SELF.fetch(preflight("/mq9/$mq9.AI.MAILBOX.CREATE", "https://agent.example"));
    expect(open.status).toBe(403); // worker/request-guard.ts: a page on another origin must not drive an open broker
    const any = withEnv({ CORS_ORIGINS: "*" });
    const res = await any(preflight("/mq9/$mq9.AI.MAILBOX.CREATE", "https://agent.example"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const allowed = res.headers.get("access-control-allow-headers")!.split(",");
    for (const h of ["authorization", "mq9-key", "mq9-delay", "mq9-ttl", "mq9-tags", "mq9-priority", "mq9-reply-to", "mq9-correlation-id"]) expect(allowed).toContain(h);
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    const nats = await any(preflight("/nats", "https://agent.example"));
    expect(nats.headers.get("access-control-allow-origin")).toBe("*");
    const post = await any(new Request("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", headers: { Origin: "https://agent.example" } }));
    expect(post.headers.get("access-control-allow-origin")).toBe("*");
    expect(post.headers.get("access-control-expose-headers")).toBe("Retry-After,WWW-Authenticate"); // a page can read a quota refusal's wait
  });

  it("allows only CORS_ORIGINS once configured, and nothing by default when auth is on", async () => {
    const listed = withEnv({ AUTH_TOKENS: "t:alpha", CORS_ORIGINS: "https://a.example, https://b.example" });
    const ok = await listed(preflight("/mq9/x", "https://b.example"));
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://b.example");
    const no = await listed(preflight("/mq9/x", "https://evil.example"));
    expect(no.headers.get("access-control-allow-origin")).toBeNull();
    const closed = await authed(preflight("/mq9/x", "https://a.example"));
    expect(closed.headers.get("access-control-allow-origin")).toBeNull();
  });
});
