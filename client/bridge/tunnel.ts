/**
 * Generic TCP ↔ WebSocket tunnel (Workers cannot accept inbound TCP): every
 * accepted TCP connection gets its own WebSocket to `target`, and bytes are
 * carried unchanged both ways as binary WebSocket messages (message
 * boundaries mean nothing; the protocols on top are byte streams).
 *
 * Backpressure, both ways, with bounded buffers: the TCP socket is paused
 * while more than `highWaterMark` bytes sent to the WebSocket are not yet
 * written out; while the TCP client does not read what it was sent (its
 * socket's write buffer is full), the WebSocket is paused (the broker's
 * answers wait in the broker, which bounds them: docs/nats.md "Slow
 * consumers") AND the TCP socket is paused, so a client that does not read
 * its answers cannot go on sending requests; one that reads nothing for
 * `stallTimeoutMs` is closed (both sides). Used for MortarMQ v0
 * (`/v0/mortar`) and NATS (`/nats`).
 *
 * Each upgrade carries `X-Forwarded-For: <the TCP client's address>`: the
 * broker sees the bridge's address, and the NATS session reports the
 * client's own as INFO `client_ip` (docs/nats.md).
 *
 * Closing: the WebSocket closing ends the TCP side (after what was written).
 * TCP half-close is supported (`printf … | nc -N host port`): when the TCP
 * client ends its side, the WebSocket is NOT closed at once — answers keep
 * flowing to the TCP side until the broker closes the WebSocket or nothing
 * arrived from it for `halfCloseGraceMs` (default 2 s, counted from the FIN
 * and from each message), then the WebSocket is closed and the TCP side
 * ended. A request still unanswered after that grace (e.g. a long PULL) is lost.
 */
import { createServer, type Server, type Socket } from "node:net";
import WebSocket from "ws";

export interface TunnelOptions {
  /** Address to listen on. */
  host: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** WebSocket URL each connection is tunnelled to (ws:// or wss://). */
  target: string;
  /** Sent as `Authorization: Bearer <token>` on every upgrade (the NATS tunnel; `/v0/mortar` ignores it). */
  token?: string;
  /** Pause reading TCP above this many unsent WebSocket bytes (default 1 MiB). */
  highWaterMark?: number;
  /** Largest WebSocket message, bytes (default 64 KiB; Workers accept at most 1 MiB per message). */
  maxMessageBytes?: number;
  /**
   * Offer permessage-deflate on the WebSocket (default false). The local
   * runtime's MortarMQ v0 bridge uses it (~1.2× the pipelined PUB rate for
   * incompressible 128 B values at ~28 % more CPU per message); its NATS
   * bridge does not: with the bridge in the launcher process and the client
   * in another, mq9 request/reply ran at the same rate uncompressed for
   * ~10 µs less launcher CPU per request (docs/operations.md). Off for
   * `mortarmq bridge`: a deployed Worker would pay the compression in its
   * CPU time.
   */
  compress?: boolean;
  /**
   * Send every WebSocket frame with the all-zero masking key (default false:
   * a random key per frame). RFC 6455 requires a client to mask, against
   * proxies that would read a browser's frames as HTTP; a zero key is a
   * valid mask that leaves the bytes as they are, so the XOR over every
   * byte sent (`ws` skips it for a zero key) is saved. For a tunnel to a
   * loopback socket only, where no proxy sits in between (`mortarmq dev`).
   */
  zeroMask?: boolean;
  /** Upgrade timeout: a broker that does not answer closes the TCP connection after this long, ms (default 10000). */
  handshakeTimeoutMs?: number;
  /**
   * How long the TCP client may leave what it was sent unread (its socket's
   * write buffer full) before both sides are closed, ms (default 30000;
   * nats-server's write deadline for a slow consumer, longer than the
   * broker's own NATS_WRITE_DEADLINE_MS so the broker judges first).
   */
  stallTimeoutMs?: number;
  /** After the TCP client half-closes, how long the WebSocket may stay idle before both are closed, ms (default 2000). */
  halfCloseGraceMs?: number;
  /** Called for per-connection failures (default: ignored). */
  onConnectionError?: (err: Error) => void;
}

export interface Tunnel {
  host: string;
  /** The port actually listened on. */
  port: number;
  /** Open TCP connections. */
  readonly connections: number;
  /** Stops listening and closes every open connection (both sides). */
  close(): Promise<void>;
}

/** `http(s)://host:port` + `path` → `ws(s)://host:port/path`. */
export function toWebSocketUrl(base: string, path: string): string {
  const u = new URL(path, base.endsWith("/") ? base : `${base}/`);
  if (u.protocol === "http:") u.protocol = "ws:";
  else if (u.protocol === "https:") u.protocol = "wss:";
  return u.toString();
}

/** Parses `host:port` (or a bare port) into its parts. Throws on a malformed address. */
export function parseHostPort(addr: string, defaultHost = "127.0.0.1"): { host: string; port: number } {
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(addr.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new Error(`not a host:port address: ${JSON.stringify(addr)}`);
  return { host: m[1] ? m[1].replace(/^\[(.*)\]$/, "$1") : defaultHost, port };
}

/** Starts listening; resolves once bound (rejects e.g. with EADDRINUSE). */
export async function startTunnel(opts: TunnelOptions): Promise<Tunnel> {
  const open = new Set<() => void>();
  const server: Server = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    const kill = pipe(socket, opts, () => open.delete(kill));
    open.add(kill);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  return {
    host: opts.host,
    port,
    get connections() {
      return open.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const kill of [...open]) kill();
        server.close(() => resolve());
      }),
  };
}

/** `ws`'s generateMask: the all-zero masking key (TunnelOptions.zeroMask). */
const zeroMask = (mask: Buffer) => mask.fill(0);

/** Tunnels one TCP connection; returns a function that tears both sides down. */
function pipe(socket: Socket, opts: TunnelOptions, done: () => void): () => void {
  const high = opts.highWaterMark ?? 1024 * 1024;
  const maxMsg = opts.maxMessageBytes ?? 64 * 1024;
  const headers: Record<string, string> = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
  // the broker sees the bridge's address; this names the TCP client's (NATS INFO client_ip)
  if (socket.remoteAddress) headers["X-Forwarded-For"] = socket.remoteAddress;
  const ws = new WebSocket(opts.target, {
    headers, perMessageDeflate: opts.compress === true, handshakeTimeout: opts.handshakeTimeoutMs ?? 10_000,
    ...(opts.zeroMask ? { generateMask: zeroMask } : {}),
  });
  let opened = false;
  const peer = `${socket.remoteAddress}:${socket.remotePort}`;
  let unsent = 0; // bytes handed to the WebSocket, not yet written to its socket
  let blocked = false; // the TCP client is not reading what it was sent
  const stallMs = opts.stallTimeoutMs ?? 30_000;
  let finished = false;

  const finish = (err?: Error) => {
    if (finished) return;
    finished = true;
    if (err) opts.onConnectionError?.(err);
    done();
  };
  const teardown = () => {
    socket.destroy();
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
    finish();
  };

  socket.pause(); // nothing to send to until the WebSocket is open
  ws.on("open", () => {
    opened = true;
    socket.resume();
  });

  socket.on("data", (chunk: Buffer) => {
    for (let o = 0; o < chunk.length; o += maxMsg) {
      const part = chunk.subarray(o, o + maxMsg);
      unsent += part.length;
      ws.send(part, { binary: true }, (err) => {
        unsent -= part.length;
        if (err) return teardown();
        if (socket.isPaused() && !blocked && unsent <= high / 2 && ws.readyState === WebSocket.OPEN) socket.resume();
      });
    }
    if (unsent > high) socket.pause();
  });
  ws.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (grace) grace.refresh();
    if (!socket.write(buf) && !blocked) {
      // the client does not read: stop reading its answers from the broker and its requests from it
      blocked = true;
      ws.pause();
      socket.pause();
      const stall = setTimeout(() => {
        opts.onConnectionError?.(new Error(`the TCP client ${peer} read nothing for ${stallMs} ms; closed both sides`));
        teardown();
      }, stallMs);
      socket.once("close", () => clearTimeout(stall));
      socket.once("drain", () => {
        clearTimeout(stall);
        blocked = false;
        ws.resume();
        if (unsent <= high / 2 && ws.readyState === WebSocket.OPEN) socket.resume();
      });
    }
  });

  // TCP side half-closed (FIN) → keep forwarding answers until the broker closes or goes idle.
  let grace: ReturnType<typeof setTimeout> | null = null;
  const graceMs = opts.halfCloseGraceMs ?? 2_000;
  socket.on("end", () => {
    grace = setTimeout(() => {
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, "tcp closed");
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      socket.end();
    }, graceMs);
  });
  socket.on("close", () => {
    if (grace) clearTimeout(grace);
    if (ws.readyState === WebSocket.OPEN) ws.close(1000, "tcp closed");
    else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    if (ws.readyState === WebSocket.CLOSED) finish();
  });
  socket.on("error", (err) => {
    opts.onConnectionError?.(err);
    teardown();
  });
  // WebSocket side finished → end TCP after flushing what was written.
  ws.on("close", () => {
    if (grace) clearTimeout(grace);
    socket.end();
    finish();
  });
  ws.on("error", (err) => {
    socket.destroy();
    finish(opened ? err : new Error(`broker unreachable at ${opts.target}: ${err.message}; closed the TCP connection from ${peer}`));
  });
  ws.on("unexpected-response", (_req, res) => {
    // the broker's reason (e.g. 401 "invalid token", "token expired at …") goes into the log line: its first 200 characters
    let reason = "";
    const done = () => {
      const why = reason.trim().replace(/\s+/g, " ").slice(0, 200);
      socket.destroy();
      finish(new Error(`${opts.target}: upgrade refused with HTTP ${res.statusCode}${why ? ` (${why})` : ""}; closed the TCP connection from ${peer}`));
      ws.terminate();
    };
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => void (reason.length < 1024 && (reason += chunk)));
    res.once("end", done);
    res.once("error", done);
  });
  return teardown;
}
