/**
 * End-to-end: the real `nats` npm client (v2, TCP through the bridge) and
 * `nats.ws` (WebSocket straight to /nats) against a real local broker
 * (mortarmq dev) with tokens configured.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, headers, type MsgHdrs, type NatsConnection } from "nats";
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
    const mbox = `e2e.concurrent.${Math.random().toString(36).slice(2, 10)}`;
    expect(json((await nc.request("$mq9.AI.MAILBOX.CREATE", te.encode(JSON.stringify({ name: mbox })), { timeout: 10_000 })).data).error).toBe("");
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => nc.request(`$mq9.AI.MSG.SEND.${mbox}`, te.encode(`m${i}`), { timeout: 60_000 })),
    );
    const ids = replies.map((r) => {
      const body = json(r.data) as { error: string; msg_id: number };
      expect(body.error).toBe("");
      return body.msg_id;
    });
    // every SEND got its own msg_id: exactly 0..999, no duplicates, no gaps
    expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    const fetched = json(
      (await nc.request(`$mq9.AI.MSG.FETCH.${mbox}`, te.encode('{"deliver":"earliest","config":{"num_msgs":1000,"max_wait_ms":0}}'), { timeout: 10_000 })).data,
    ) as { error: string; messages: { msg_id: number; payload: string }[] };
    expect(fetched.messages).toHaveLength(1000);
    // each stored payload is the one its SEND reply's msg_id names
    const byId = new Map(fetched.messages.map((m) => [m.msg_id, Buffer.from(m.payload, "base64").toString()]));
    ids.forEach((id, i) => expect(byId.get(id)).toBe(`m${i}`));
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

  it("10,000 one-byte WebSocket messages sent back to back are read in order (local echo returns every payload as sent)", async () => {
    const ws = new WebSocket(toWebSocketUrl(broker.url, "nats"), { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    let text = "";
    ws.on("message", (d: Buffer) => (text += td.decode(d)));
    const payloads: string[] = [];
    let wire = `CONNECT {"verbose":false,"auth_token":"${TOKEN}"}\r\nSUB e2e.bytewise 1\r\n`;
    while (wire.length < 10_000) {
      const p = `payload ${payloads.length} ${"xyz".repeat(payloads.length % 4)}`;
      payloads.push(p);
      wire += `PUB e2e.bytewise ${p.length}\r\n${p}\r\n`;
    }
    wire += "PING\r\n";
    for (const b of te.encode(wire)) ws.send(Uint8Array.of(b)); // no pacing: back to back
    for (let i = 0; i < 1500 && !text.includes("PONG\r\n"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(text).not.toContain("-ERR");
    expect([...text.matchAll(/MSG e2e\.bytewise 1 \d+\r\n(.*)\r\n/g)].map((m) => m[1])).toEqual(payloads);
    expect(text.endsWith("PONG\r\n")).toBe(true);
    ws.close();
  });

  it("a CREATE pipelined with SENDs and a QUERY to the new mailbox in one WebSocket message: the SENDs find it, the QUERY sees all five", async () => {
    // the runtime half of test/workers/nats/nats-session.test.ts's test of the same name (the pool may reorder the QUERY's RPC)
    const box = `e2e.pipe.${Math.random().toString(36).slice(2, 10)}`;
    const ws = new WebSocket(toWebSocketUrl(broker.url, "nats"), { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    let text = "";
    ws.on("message", (d: Buffer) => (text += td.decode(d)));
    const create = JSON.stringify({ name: box, ttl: 60 });
    let wire = `CONNECT {"verbose":false,"headers":true,"auth_token":"${TOKEN}"}\r\nSUB _INBOX.pipe.* 1\r\nPUB $mq9.AI.MAILBOX.CREATE _INBOX.pipe.c ${create.length}\r\n${create}\r\n`;
    for (let i = 0; i < 5; i++) wire += `PUB $mq9.AI.MSG.SEND.${box} _INBOX.pipe.s${i} 2\r\nm${i}\r\n`;
    wire += `PUB $mq9.AI.MSG.QUERY.${box} _INBOX.pipe.q 2\r\n{}\r\n`;
    ws.send(wire);
    for (let i = 0; i < 1500 && text.split("MSG _INBOX.pipe.").length - 1 < 7; i++) await new Promise((r) => setTimeout(r, 20));
    const replies = new Map([...text.matchAll(/MSG _INBOX\.pipe\.(\w+) 1 \d+\r\n(.*)\r\n/g)].map((m) => [m[1], JSON.parse(m[2]!) as Record<string, unknown>]));
    expect(replies.get("c")).toEqual({ error: "", mail_address: box });
    for (let i = 0; i < 5; i++) expect(replies.get(`s${i}`)).toEqual({ error: "", msg_id: i });
    expect((replies.get("q")!.messages as { payload: string }[]).map((m) => Buffer.from(m.payload, "base64").toString())).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    ws.close();
  });

  it.each([
    ["nats over TCP (bridge)", () => connectTcp({ token: TOKEN })],
    ["nats.ws over WebSocket", () => connectWs({ token: TOKEN })],
  ] as const)("requests on one connection take effect in the order sent (%s): a QUERY right after a published SEND sees it", async (_name, open) => {
    const nc = await open();
    for (let i = 0; i < 5; i++) {
      const mbox = `e2e.order.${i}.${Math.random().toString(36).slice(2, 8)}`;
      nc.publish("$mq9.AI.MAILBOX.CREATE", te.encode(JSON.stringify({ name: mbox }))); // fire and forget, like the SENDs
      nc.publish(`$mq9.AI.MSG.SEND.${mbox}`, te.encode("first"));
      nc.publish(`$mq9.AI.MSG.SEND.${mbox}`, te.encode("second"));
      const q = json((await nc.request(`$mq9.AI.MSG.QUERY.${mbox}`, te.encode("{}"), { timeout: 10_000 })).data) as unknown as { messages: { payload: string }[] };
      expect(q.messages.map((m) => Buffer.from(m.payload, "base64").toString())).toEqual(["first", "second"]);
    }
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

/**
 * The mq9 spec's request examples, once over NATS and once over HTTP
 * (`POST /mq9/<subject>`), each on its own mailbox: the replies must be the
 * same JSON (mailbox name and creation times aside).
 */
describe("mq9 spec examples over NATS and HTTP", () => {
  type Step = { verb: string; suffix?: string; body: string; headers?: Record<string, string> };
  const steps = (mbox: string): Step[] => [
    { verb: "MAILBOX.CREATE", body: JSON.stringify({ name: mbox, ttl: 0 }) },
    { verb: "MAILBOX.CREATE", body: JSON.stringify({ name: mbox }) },
    { verb: "MSG.SEND", body: '{"text":"hello"}' },
    { verb: "MSG.SEND", body: '{"status":"running"}', headers: { "mq9-key": "status" } },
    { verb: "MSG.SEND", body: '{"order_id":"o-001"}', headers: { "mq9-tags": "billing,vip" } },
    { verb: "MSG.SEND", body: '{"text":"delayed task"}', headers: { "mq9-delay": "60" } },
    { verb: "MSG.SEND", body: '{"text":"short-lived message"}', headers: { "mq9-ttl": "300" } },
    { verb: "MSG.SEND", body: '{"alert":"please expedite"}', headers: { "mq9-priority": "urgent" } },
    { verb: "MSG.FETCH", body: '{"deliver":"earliest","config":{"max_wait_ms":0}}' },
    { verb: "MSG.FETCH", body: '{"group_name":"worker-group-1","deliver":"earliest","config":{"num_msgs":50,"max_wait_ms":0}}' },
    { verb: "MSG.ACK", body: JSON.stringify({ group_name: "worker-group-1", mail_address: mbox, msg_id: 0 }) },
    { verb: "MSG.QUERY", body: "{}" },
    { verb: "MSG.QUERY", body: '{"key":"status"}' },
    { verb: "MSG.QUERY", body: '{"limit":10}' },
    { verb: "MSG.QUERY", body: '{"since":1234567890}' },
    { verb: "MSG.DELETE", suffix: ".1", body: "" },
    { verb: "MSG.QUERY", body: "{}" },
  ];
  const subjectOf = (s: Step, mbox: string) =>
    s.verb === "MAILBOX.CREATE" ? "$mq9.AI.MAILBOX.CREATE" : `$mq9.AI.${s.verb}.${mbox}${s.suffix ?? ""}`;
  /** Mailbox name → placeholder; times (which differ between runs) → 0. */
  const normalize = (v: unknown, mbox: string): unknown =>
    Array.isArray(v)
      ? v.map((x) => normalize(x, mbox))
      : v && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, /time/.test(k) && typeof x === "number" ? 0 : normalize(x, mbox)]))
        : typeof v === "string"
          ? v.split(mbox).join("<mailbox>")
          : v;

  it.each([
    ["nats over TCP (bridge)", connectTcp],
    ["nats.ws over WebSocket", connectWs],
  ] as const)("every request example gives the same JSON over %s as over HTTP", async (_name, connect) => {
    const rand = Math.random().toString(36).slice(2, 10);
    const viaNats = `e2e.parity.${rand}.nats`;
    const viaHttp = `e2e.parity.${rand}.http`;
    const nc = await connect({ token: TOKEN });
    const natsReplies: unknown[] = [];
    for (const s of steps(viaNats)) {
      let h: MsgHdrs | undefined;
      if (s.headers) {
        h = headers();
        for (const [k, v] of Object.entries(s.headers)) h.set(k, v);
      }
      const m = await nc.request(subjectOf(s, viaNats), te.encode(s.body), { timeout: 10_000, headers: h });
      natsReplies.push(normalize(json(m.data), viaNats));
    }
    await nc.close();
    const httpReplies: unknown[] = [];
    for (const s of steps(viaHttp)) {
      const res = await fetch(`${broker.url}/mq9/${subjectOf(s, viaHttp)}`, {
        method: "POST",
        body: s.body,
        headers: { Authorization: `Bearer ${TOKEN}`, ...s.headers },
      });
      httpReplies.push(normalize(await res.json(), viaHttp));
    }
    expect(natsReplies).toEqual(httpReplies);
    expect((natsReplies[0] as { error: string }).error).toBe("");
  });

  it("a FETCH long-poll held open returns as soon as another client SENDs", async () => {
    const mbox = `e2e.longpoll.${Math.random().toString(36).slice(2, 10)}`;
    const a = await connectTcp({ token: TOKEN });
    const b = await connectWs({ token: TOKEN });
    expect(json((await a.request("$mq9.AI.MAILBOX.CREATE", te.encode(JSON.stringify({ name: mbox })), { timeout: 10_000 })).data).error).toBe("");
    const started = Date.now();
    const fetching = a.request(`$mq9.AI.MSG.FETCH.${mbox}`, te.encode('{"deliver":"earliest","config":{"max_wait_ms":30000}}'), {
      timeout: 60_000,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(json((await b.request(`$mq9.AI.MSG.SEND.${mbox}`, te.encode("wake up"), { timeout: 10_000 })).data).error).toBe("");
    const got = json((await fetching).data) as { error: string; messages: { payload: string }[] };
    expect(Date.now() - started).toBeLessThan(15_000); // far below max_wait_ms
    expect(got.error).toBe("");
    expect(got.messages.map((m) => Buffer.from(m.payload, "base64").toString())).toEqual(["wake up"]);
    await a.close();
    await b.close();
  });

  it("raw TCP half-close through the bridge (`printf … | nc -N`): the answers still arrive", async () => {
    const { connect: netConnect } = await import("node:net");
    const sock = netConnect({ host: "127.0.0.1", port: tokenBridge.port, allowHalfOpen: true });
    await new Promise((r) => sock.once("connect", r));
    let text = "";
    sock.on("data", (d: Buffer) => (text += d.toString()));
    const closed = new Promise((r) => sock.once("close", r));
    sock.end(`CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n`);
    await Promise.race([closed, new Promise((r) => setTimeout(r, 20_000))]);
    expect(text).toMatch(/^INFO /);
    expect(text).toContain("PONG\r\n");
  }, 30_000);
});
