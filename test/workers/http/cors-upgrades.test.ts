/**
 * CORS beyond preflights (docs/mq9.md "CORS"): response headers a page
 * script must be able to read are exposed, and `CORS_ORIGINS` also governs
 * the WebSocket upgrades of `/nats` and `/v0/mortar` — browsers send
 * `Origin` on a WebSocket handshake but enforce nothing, so the broker must.
 */
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";

/** The real app with extra vars. */
function withEnv(vars: Partial<Env>) {
  const custom = { ...(env as unknown as Env), ...vars };
  return (req: Request) => Promise.resolve(app.fetch(req, custom, createExecutionContext()));
}

const upgrade = (path: string, origin?: string) =>
  new Request(`http://broker${path}`, { headers: { Upgrade: "websocket", ...(origin === undefined ? {} : { Origin: origin }) } });

/** Status of the upgrade (closing the socket it got, if any) and the body of a refusal. */
async function tryUpgrade(fetcher: (r: Request) => Promise<Response>, path: string, origin?: string): Promise<{ status: number; body: string }> {
  const res = await fetcher(upgrade(path, origin));
  if (res.webSocket) {
    res.webSocket.accept();
    res.webSocket.close(1000, "test done");
    return { status: res.status, body: "" };
  }
  return { status: res.status, body: await res.text() };
}

describe("CORS_ORIGINS on WebSocket upgrades", () => {
  const listed = withEnv({ CORS_ORIGINS: "https://a.example, https://b.example" });

  it.each(["/nats", "/v0/mortar"])("%s: an origin not on the list is refused with 403 and says why", async (path) => {
    expect(await tryUpgrade(listed, path, "https://evil.example")).toEqual({
      status: 403,
      body: `WebSocket upgrade from origin "https://evil.example" refused: it is not in CORS_ORIGINS`,
    });
    expect(await tryUpgrade(listed, path, "null")).toMatchObject({ status: 403 }); // sandboxed iframe, file:// page
  });

  it.each(["/nats", "/v0/mortar"])("%s: a listed origin, the broker's own origin and clients without Origin connect", async (path) => {
    expect((await tryUpgrade(listed, path, "https://b.example")).status).toBe(101);
    expect((await tryUpgrade(listed, path, "http://broker")).status).toBe(101); // a page the broker serves itself
    expect((await tryUpgrade(listed, path)).status).toBe(101); // nats.go, the bridge, ws clients
  });

  it("`*` in CORS_ORIGINS allows every origin", async () => {
    expect((await tryUpgrade(withEnv({ CORS_ORIGINS: "*" }), "/nats", "https://evil.example")).status).toBe(101);
  });

  it("with CORS_ORIGINS unset no other origin may upgrade, also on the open test broker (worker/request-guard.ts)", async () => {
    const res = await SELF.fetch(upgrade("/nats", "https://any.example"));
    expect(res.status).toBe(403);
    expect((await tryUpgrade(withEnv({}), "/v0/mortar", "http://broker")).status).toBe(101); // its own pages still connect
  });
});

describe("headers exposed to page scripts", () => {
  it("an mq9 answer to a page exposes Retry-After and WWW-Authenticate", async () => {
    const res = await withEnv({ CORS_ORIGINS: "https://agent.example" })(
      new Request("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", body: "{}", headers: { Origin: "https://agent.example" } }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://agent.example");
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",").map((s) => s.trim());
    expect(exposed).toEqual(expect.arrayContaining(["retry-after", "www-authenticate"]));
  });
});
