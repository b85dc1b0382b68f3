import { createConnection, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { parseHostPort, startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";

/** A WebSocket server standing in for the broker. */
async function wsServer(onConn: (ws: WebSocket, headers: Record<string, string | string[] | undefined>) => void) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  wss.on("connection", (ws, req) => onConn(ws, req.headers));
  const port = (wss.address() as { port: number }).port;
  return { wss, url: `ws://127.0.0.1:${port}/nats`, close: () => new Promise<void>((r) => wss.close(() => r())) };
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: "127.0.0.1", port }, () => resolve(s));
    s.once("error", reject);
  });
}

function readAll(s: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    const onData = (d: Buffer) => {
      parts.push(d);
      got += d.length;
      if (got >= n) {
        s.off("data", onData);
        resolve(Buffer.concat(parts));
      }
    };
    s.on("data", onData);
    s.once("error", reject);
  });
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("bridge tunnel", () => {
  it("builds WebSocket URLs and parses listen addresses", () => {
    expect(toWebSocketUrl("http://127.0.0.1:8787", "nats")).toBe("ws://127.0.0.1:8787/nats");
    expect(toWebSocketUrl("https://x.example/", "v0/mortar")).toBe("wss://x.example/v0/mortar");
    expect(parseHostPort("0.0.0.0:4222")).toEqual({ host: "0.0.0.0", port: 4222 });
    expect(parseHostPort("4222")).toEqual({ host: "127.0.0.1", port: 4222 });
    expect(parseHostPort("[::1]:7070")).toEqual({ host: "::1", port: 7070 });
    expect(() => parseHostPort("nope")).toThrow(/host:port/);
    expect(() => parseHostPort("1:99999")).toThrow(/host:port/);
  });

  it("carries bytes unchanged both ways, as binary messages of bounded size, with the bearer token", async () => {
    let sizes: number[] = [];
    let auth: unknown;
    const srv = await wsServer((ws, headers) => {
      auth = headers.authorization;
      ws.on("message", (data, isBinary) => {
        expect(isBinary).toBe(true);
        sizes.push((data as Buffer).length);
        ws.send(data, { binary: true }); // echo
      });
    });
    cleanups.push(srv.close);
    const t: Tunnel = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url, token: "tok", maxMessageBytes: 1000 });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    cleanups.push(() => void s.destroy());
    const payload = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + 7) & 0xff;
    const back = readAll(s, payload.length);
    s.write(payload);
    expect((await back).equals(payload)).toBe(true);
    expect(auth).toBe("Bearer tok");
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1000);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(payload.length);
  });

  it("names the TCP client's address in X-Forwarded-For on the upgrade", async () => {
    let forwarded: unknown;
    const srv = await wsServer((ws, headers) => {
      forwarded = headers["x-forwarded-for"];
      ws.send(Buffer.from("hi"), { binary: true });
    });
    cleanups.push(srv.close);
    const t: Tunnel = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url });
    cleanups.push(() => t.close());
    const s = await new Promise<Socket>((resolve, reject) => {
      const c = createConnection({ host: "127.0.0.1", port: t.port, localAddress: "127.0.0.2" }, () => resolve(c)); // another loopback address than the bridge's
      c.once("error", reject);
    });
    cleanups.push(() => void s.destroy());
    expect((await readAll(s, 2)).toString()).toBe("hi");
    expect(forwarded).toBe("127.0.0.2");
  });

  it("closes the TCP side when the WebSocket closes (after delivering what was sent)", async () => {
    const srv = await wsServer((ws) => {
      ws.send(Buffer.from("-ERR 'Unknown Protocol Operation'\r\n"));
      ws.close(1008, "bye");
    });
    cleanups.push(srv.close);
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    const chunks: Buffer[] = [];
    s.on("data", (d) => chunks.push(d));
    await new Promise<void>((r) => s.once("close", () => r()));
    expect(Buffer.concat(chunks).toString()).toBe("-ERR 'Unknown Protocol Operation'\r\n");
  });

  it("closes the WebSocket when the TCP client disconnects", async () => {
    let closed!: () => void;
    const wsClosed = new Promise<void>((r) => (closed = r));
    const srv = await wsServer((ws) => ws.on("close", () => closed()));
    cleanups.push(srv.close);
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url, halfCloseGraceMs: 100 });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    s.write("PING\r\n");
    await new Promise((r) => setTimeout(r, 50));
    s.end();
    await wsClosed;
    await new Promise((r) => setTimeout(r, 20));
    expect(t.connections).toBe(0);
  });

  it("a refused upgrade closes the TCP connection", async () => {
    const errors: Error[] = [];
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: "ws://127.0.0.1:1/nats", onConnectionError: (e) => errors.push(e) });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    const t0 = Date.now();
    await new Promise<void>((r) => s.once("close", () => r()));
    expect(Date.now() - t0).toBeLessThan(2000); // promptly
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^broker unreachable at ws:\/\/127\.0\.0\.1:1\/nats: connect ECONNREFUSED .*; closed the TCP connection from 127\.0\.0\.1:\d+$/),
    ]);
  });

  it("an upgrade the broker refuses (401) closes the TCP connection and logs the broker's reason", async () => {
    const { createServer } = await import("node:http");
    const broker = createServer();
    broker.on("upgrade", (_req, sock: Socket) => sock.end("HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\ninvalid token"));
    await new Promise<void>((r) => broker.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => broker.close(() => r())));
    const errors: Error[] = [];
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: `ws://127.0.0.1:${(broker.address() as { port: number }).port}/nats`, onConnectionError: (e) => errors.push(e) });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    await new Promise<void>((r) => s.once("close", () => r()));
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/nats: upgrade refused with HTTP 401 \(invalid token\); closed the TCP connection from 127\.0\.0\.1:\d+$/),
    ]);
  });

  it("reports a port in use", async () => {
    const a = await startTunnel({ host: "127.0.0.1", port: 0, target: "ws://127.0.0.1:1/" });
    cleanups.push(() => a.close());
    await expect(startTunnel({ host: "127.0.0.1", port: a.port, target: "ws://127.0.0.1:1/" })).rejects.toThrow(/EADDRINUSE/);
  });

  it("TCP half-close: answers sent after the client's FIN still reach it; the broker closing ends the TCP side", async () => {
    const srv = await wsServer((ws) => {
      ws.on("message", (data) => setTimeout(() => {
        ws.send(Buffer.concat([Buffer.from("answer:"), data as Buffer]));
        setTimeout(() => ws.close(1000, "done"), 50);
      }, 300)); // answers well after the FIN
    });
    cleanups.push(srv.close);
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url });
    cleanups.push(() => t.close());
    const s = createConnection({ host: "127.0.0.1", port: t.port, allowHalfOpen: true });
    await new Promise((r) => s.once("connect", r));
    const parts: Buffer[] = [];
    s.on("data", (d: Buffer) => parts.push(d));
    const ended = new Promise((r) => s.once("end", r));
    s.end("req");
    await ended;
    expect(Buffer.concat(parts).toString()).toBe("answer:req");
    s.destroy();
  });

  it("TCP half-close: a broker that stays silent is closed after the grace period", async () => {
    let wsClosed = false;
    const srv = await wsServer((ws) => ws.on("close", () => (wsClosed = true)));
    cleanups.push(srv.close);
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url, halfCloseGraceMs: 200 });
    cleanups.push(() => t.close());
    const s = createConnection({ host: "127.0.0.1", port: t.port, allowHalfOpen: true });
    await new Promise((r) => s.once("connect", r));
    const started = Date.now();
    const ended = new Promise((r) => s.once("end", r));
    s.end("x");
    await ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    for (let i = 0; i < 50 && !wsClosed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(wsClosed).toBe(true);
    s.destroy();
  });
});

describe("bridge tunnel backpressure", () => {
  it("a TCP client that does not read: the tunnel stops taking its requests and the broker's answers, and closes both sides after stallTimeoutMs", async () => {
    let received = 0;
    let wsClosed = false;
    const answer = Buffer.alloc(64 * 1024, 0x61);
    const srv = await wsServer((ws) => {
      ws.on("message", (data: Buffer) => {
        received += data.length;
        for (let i = 0; i < data.length; i += 1024) ws.send(answer); // 64 KiB per 1 KiB request
      });
      ws.on("close", () => (wsClosed = true));
    });
    cleanups.push(srv.close);
    const t = await startTunnel({ host: "127.0.0.1", port: 0, target: srv.url, stallTimeoutMs: 500 });
    cleanups.push(() => t.close());
    const s = await connect(t.port);
    s.pause(); // never reads
    const request = Buffer.alloc(1024, 0x62);
    const written = 64 * 1024 * 1024;
    for (let i = 0; i < written; i += request.length) s.write(request);
    const closed = new Promise<void>((r) => s.once("close", () => r()));
    s.on("error", () => {});
    await closed; // the tunnel gave up on the client
    // it stopped reading the client's requests long before all were sent (every one would ask 64× its size back)
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(written / 4);
    for (let i = 0; i < 100 && !wsClosed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(wsClosed).toBe(true);
  });
});
