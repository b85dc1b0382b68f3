import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Deadlines } from "../../../objects/session-base/deadlines";
import { openNats, testEnv as env, wrap } from "../helpers/nats-ws";
import { newNatsSessionStub } from "../../../objects/nats/stub";

describe("GET /nats with tokens configured", () => {
  it("INFO says auth_required", async () => {
    const c = await openNats();
    const [, json] = await c.waitFor(/^INFO (\{.*\})\r\n/);
    expect(JSON.parse(json).auth_required).toBe(true);
    c.ws.close();
  });

  it("a wrong token gets -ERR 'Authorization Violation' and the connection is closed", async () => {
    const c = await openNats();
    c.send('CONNECT {"verbose":false,"auth_token":"wrong"}\r\nPING\r\n');
    await c.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(c.text).not.toContain("PONG");
    expect(await c.closed).toBe(1008);
  });

  it("an operation before CONNECT is an Authorization Violation", async () => {
    const c = await openNats();
    c.send("SUB foo 1\r\n");
    await c.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(await c.closed).toBe(1008);
  });

  it("CONNECT without any token is an Authorization Violation", async () => {
    const c = await openNats();
    c.send('CONNECT {"verbose":false}\r\n');
    await c.waitFor(/-ERR 'Authorization Violation'\r\n$/);
  });

  it.each([
    ['{"verbose":true,"auth_token":"test-token-acme"}'],
    ['{"verbose":true,"user":"anyone","pass":"test-token-beta"}'],
  ])("a valid token (%s) connects", async (json) => {
    const c = await openNats();
    c.send(`CONNECT ${json}\r\nPING\r\n`);
    await c.waitFor(/\+OK\r\nPONG\r\n$/);
    c.ws.close();
  });

  it("a bearer token on the upgrade (the bridge's --token) authenticates the connection", async () => {
    const bad = await SELF.fetch("http://broker/nats", { headers: { Upgrade: "websocket", Authorization: "Bearer nope" } });
    expect(bad.status).toBe(401);
    const c = await openNats({ Authorization: "Bearer test-token-acme" });
    const [, json] = await c.waitFor(/^INFO (\{.*\})\r\n/);
    expect(JSON.parse(json).auth_required).toBeUndefined();
    c.send('CONNECT {"verbose":false}\r\nPING\r\n');
    await c.waitFor(/PONG\r\n$/);
    // a token in CONNECT is still checked
    const d = await openNats({ Authorization: "Bearer test-token-acme" });
    d.send('CONNECT {"auth_token":"wrong"}\r\n');
    await d.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    c.ws.close();
  });

  it("without CONNECT the auth timeout closes the connection with Authentication Timeout", async () => {
    const stub = newNatsSessionStub(env);
    const res = await stub.fetch("http://broker/nats", { headers: { Upgrade: "websocket" } });
    const c = wrap(res.webSocket!);
    await c.waitFor(/^INFO /);
    await runInDurableObject(stub, (obj) => {
      // the auth deadline (AUTH_TIMEOUT_MS after the upgrade) made due now instead of waiting for it
      const d = (obj as unknown as { deadlines: Deadlines }).deadlines;
      expect(d.get("auth")).toBeGreaterThan(Date.now() + 4_000);
      d.set("auth", Date.now() - 1);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await c.waitFor(/-ERR 'Authentication Timeout'\r\n$/);
    expect(await c.closed).toBe(1008);
  });
});
