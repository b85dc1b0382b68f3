/**
 * End-to-end: the real `nats` npm client (v2, TCP through the bridge) and
 * `nats.ws` (WebSocket straight to /nats) against a real local broker
 * (wrangler dev) with tokens configured.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, headers, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";

const TOKEN = "e2e-nats-token";
let broker: LocalBroker;
let bridge: Tunnel;
let tokenBridge: Tunnel;
let stateDir: string;
const td = new TextDecoder();
const te = new TextEncoder();

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-nats-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:acme` } });
  const target = toWebSocketUrl(broker.url, "nats");
  bridge = await startTunnel({ host: "127.0.0.1", port: 0, target });
  tokenBridge = await startTunnel({ host: "127.0.0.1", port: 0, target, token: TOKEN });
});

afterAll(async () => {
  await bridge?.close();
  await tokenBridge?.close();
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** nats.ws needs a global WebSocket in Node 20: the `ws` package. */
async function connectWs(opts: { token?: string } = {}): Promise<NatsConnection> {
  (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
  const { connect: wsConnect } = await import("nats.ws");
  return wsConnect({ servers: toWebSocketUrl(broker.url, "nats"), token: opts.token, reconnect: false });
}

function connectTcp(opts: { port?: number; token?: string } = {}): Promise<NatsConnection> {
  return connect({ servers: `127.0.0.1:${opts.port ?? bridge.port}`, token: opts.token, reconnect: false });
}

const json = (data: Uint8Array) => JSON.parse(td.decode(data)) as { error: string } & Record<string, unknown>;
const missing = () => `$mq9.AI.MSG.QUERY.e2e.missing.${Math.random().toString(36).slice(2, 10)}`;

describe("NATS clients against the broker", () => {
  it("nats (TCP via the bridge): connects, a $mq9.AI. request returns the mq9 JSON reply", async () => {
    const nc = await connectTcp({ token: TOKEN });
    expect(nc.info?.headers).toBe(true);
    expect(nc.info?.max_payload).toBe(1048576);
    const subject = missing();
    const m = await nc.request(subject, te.encode("{}"), { timeout: 10_000 });
    const reply = json(m.data);
    expect(typeof reply.error).toBe("string");
    // the same request over nats.ws gives the same JSON
    const wc = await connectWs({ token: TOKEN });
    expect(json((await wc.request(subject, te.encode("{}"), { timeout: 10_000 })).data)).toEqual(reply);
    await wc.close();
    await nc.close();
  });

  it("HPUB headers reach the handler (request with mq9-* headers is answered)", async () => {
    const nc = await connectTcp({ token: TOKEN });
    const h = headers();
    h.set("mq9-priority", "urgent");
    h.set("mq9-tags", "billing,vip");
    const m = await nc.request("$mq9.AI.MSG.SEND.e2e.hdr", te.encode("hello"), { timeout: 10_000, headers: h });
    expect(typeof json(m.data).error).toBe("string");
    await nc.close();
  });

  it("a request to a non-mq9 subject rejects with no responders (503), over TCP and WebSocket", async () => {
    const nc = await connectTcp({ token: TOKEN });
    await expect(nc.request("not.mq9.subject", te.encode("x"), { timeout: 10_000 })).rejects.toMatchObject({ code: "503" });
    await nc.close();
    const wc = await connectWs({ token: TOKEN });
    await expect(wc.request("also.not.mq9", te.encode("x"), { timeout: 10_000 })).rejects.toMatchObject({ code: "503" });
    await wc.close();
  });

  it("1,000 concurrent mq9 requests on one connection are all answered", async () => {
    const nc = await connectTcp({ token: TOKEN });
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => nc.request(`$mq9.AI.MSG.QUERY.e2e.c${i}`, te.encode("{}"), { timeout: 60_000 })),
    );
    expect(replies).toHaveLength(1000);
    for (const r of replies) expect(typeof json(r.data).error).toBe("string");
    await nc.close();
  });

  it("1,000 concurrent requests to a responder on the same connection each get their own reply", async () => {
    const nc = await connectWs({ token: TOKEN });
    const sub = nc.subscribe("e2e.echo.*");
    (async () => {
      for await (const m of sub) m.respond(te.encode(`${m.subject}:${td.decode(m.data)}`));
    })();
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => nc.request(`e2e.echo.${i % 7}`, te.encode(String(i)), { timeout: 60_000 })),
    );
    replies.forEach((r, i) => expect(td.decode(r.data)).toBe(`e2e.echo.${i % 7}:${i}`));
    await nc.close();
  });

  it("a wrong token is refused with an authorization violation", async () => {
    await expect(connectTcp({ token: "wrong" })).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
    await expect(connectWs({ token: "wrong" })).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
  });

  it("the bridge's --token authenticates clients that bring no token", async () => {
    const nc = await connectTcp({ port: tokenBridge.port });
    const m = await nc.request(missing(), te.encode("{}"), { timeout: 10_000 });
    expect(typeof json(m.data).error).toBe("string");
    await nc.close();
  });
});
