/**
 * Keep-alive HTTP clients of the local broker: workerd closes a connection
 * whose request body the Worker answered without reading, and with no proxy
 * in front of it (the earlier `wrangler dev` launcher had one) the client's
 * NEXT request on that connection then fails (ECONNRESET) — here a valid
 * request after a 401 (wrong token) or a 404 (no such route), with small and
 * large bodies. Every request must be answered.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";

const TOKEN = "keepalive-token";
let broker: LocalBroker;
const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-keepalive-"));

beforeAll(async () => {
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:acme` } });
});
afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** One POST on `agent`; resolves with the status, or the socket error's code. */
const post = (agent: Agent, path: string, body: string, token: string) =>
  new Promise<number | string>((resolve) => {
    const req = request(
      { host: "127.0.0.1", port: broker.port, method: "POST", path, agent, headers: { authorization: `Bearer ${token}`, "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end(body);
  });

/** One POST to /mcp on `agent` with a chunked body of `size` bytes (no Content-Length); resolves with the status, or the socket error's code. */
const postMcpChunked = (agent: Agent, body: Buffer) =>
  new Promise<number | string>((resolve) => {
    const req = request(
      {
        host: "127.0.0.1", port: broker.port, method: "POST", path: "/mcp", agent,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
    req.end();
  });

describe("keep-alive connections to the local broker", () => {
  it("a request after /mcp answered 413 to an over-size chunked body is answered on the same connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const init = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "ka", version: "0" } } }));
    const statuses: (number | string)[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push(await postMcpChunked(agent, Buffer.alloc(5 * 1024 * 1024, 0x20)));
      statuses.push(await postMcpChunked(agent, init));
    }
    agent.destroy();
    expect(statuses).toEqual([413, 200, 413, 200, 413, 200]);
  });

  it("a request after a 401 or 404 answered without reading the body is answered on the same connection", async () => {
    expect(await post(new Agent(), "/mq9/$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "ka.box", ttl: 0 }), TOKEN)).toBe(200);
    for (const size of [16, 4_000, 100_000]) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 }); // one connection: every request reuses it
      const statuses: (number | string)[] = [];
      for (let i = 0; i < 6; i++) {
        statuses.push(await post(agent, "/mq9/$mq9.AI.MSG.SEND.ka.box", "x".repeat(size), "wrong-token"));
        statuses.push(await post(agent, "/no/such/route", "x".repeat(size), TOKEN));
        statuses.push(await post(agent, "/mq9/$mq9.AI.MSG.SEND.ka.box", "x".repeat(size), TOKEN));
      }
      agent.destroy();
      expect({ size, statuses }).toEqual({ size, statuses: Array.from({ length: 6 }, () => [401, 404, 200]).flat() });
    }
  });
});
