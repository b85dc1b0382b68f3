/**
 * Byte-stream transports for MortarClient: a WebSocket to `/v0/mortar`
 * (binary messages; boundaries mean nothing) or a raw TCP socket (e.g. to
 * `mortarmq bridge`). Both carry the same MortarMQ v0 frame stream.
 */
import { connect as netConnect, type Socket } from "node:net";
import WebSocket from "ws";
import { MAX_WS_MESSAGE_BYTES } from "../../wire/bytes";

/** Largest WebSocket message sent, bytes (the broker's limit too; bigger writes are cut into pieces of this size). */
export const MAX_WS_MESSAGE = MAX_WS_MESSAGE_BYTES;

/** A connected byte stream. */
export interface Transport {
  /** Writes bytes (one socket write / one WebSocket message). */
  write(bytes: Uint8Array): void;
  /** Registers the receiver of incoming bytes (called once). */
  onData(cb: (chunk: Uint8Array) => void): void;
  /** Registers the close handler (called once, with a reason). */
  onClose(cb: (reason: string) => void): void;
  /** Closes the stream. */
  close(): void;
  /** Bytes accepted by write() but not yet handed to the OS. */
  readonly bufferedAmount: number;
}

/** Options for opening a transport. */
export interface TransportOptions {
  /** Connect timeout, ms (default 10000). */
  timeoutMs?: number;
}

/**
 * Opens a transport for `address`:
 * - `ws://host:port[/path]`, `wss://…`: WebSocket (path defaults to /v0/mortar)
 * - `http://host:port`, `https://…`: WebSocket to `/v0/mortar` on that origin
 * - `tcp://host:port`: raw TCP
 * @throws Error for another scheme, or when the connection fails / times out.
 */
export async function openTransport(address: string, opts: TransportOptions = {}): Promise<Transport> {
  const url = new URL(address);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  switch (url.protocol) {
    case "tcp:":
      return openTcp(url.hostname, Number(url.port), timeoutMs);
    case "http:":
    case "https:":
    case "ws:":
    case "wss:": {
      url.protocol = url.protocol === "https:" || url.protocol === "wss:" ? "wss:" : "ws:";
      if (url.pathname === "/" || url.pathname === "") url.pathname = "/v0/mortar";
      return openWebSocket(url.toString(), timeoutMs);
    }
    default:
      throw new Error(`unsupported MortarMQ address ${address}: use ws://, wss://, http://, https:// or tcp://`);
  }
}

/** A close notification delivered at most once, to the handler registered later. */
function onceClose(): { fire(reason: string): void; register(cb: (reason: string) => void): void } {
  let cb: ((reason: string) => void) | undefined;
  let closed = false;
  return {
    fire(reason) {
      if (closed) return;
      closed = true;
      cb?.(reason);
    },
    register(fn) {
      cb = fn;
    },
  };
}

function toU8(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return new Uint8Array(Buffer.concat(data));
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

async function openWebSocket(url: string, timeoutMs: number): Promise<Transport> {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
  ws.binaryType = "nodebuffer";
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", (e) => reject(new Error(`WebSocket ${url}: ${e.message}`)));
    ws.once("unexpected-response", (_req, res) => reject(new Error(`WebSocket ${url}: HTTP ${res.statusCode}`)));
  });
  const onClose = onceClose();
  ws.on("close", (code, reason) => onClose.fire(`WebSocket closed (${code}${reason.length ? ` ${reason.toString()}` : ""})`));
  ws.on("error", (e) => onClose.fire(`WebSocket error: ${e.message}`));
  return {
    write: (bytes) => {
      for (let o = 0; o < bytes.length; o += MAX_WS_MESSAGE) ws.send(bytes.subarray(o, o + MAX_WS_MESSAGE), { binary: true });
    },
    onData: (cb) => ws.on("message", (data) => cb(toU8(data))),
    onClose: onClose.register,
    close: () => ws.close(1000, "client closed"),
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
  };
}

async function openTcp(host: string, port: number, timeoutMs: number): Promise<Transport> {
  const sock: Socket = netConnect({ host, port, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => {
      sock.destroy();
      reject(new Error(`tcp://${host}:${port}: connect timeout`));
    }, timeoutMs);
    sock.once("connect", () => {
      clearTimeout(t);
      resolve();
    });
    sock.once("error", (e) => {
      clearTimeout(t);
      reject(new Error(`tcp://${host}:${port}: ${e.message}`));
    });
  });
  const onClose = onceClose();
  sock.on("close", () => onClose.fire("TCP connection closed"));
  sock.on("error", (e) => onClose.fire(`TCP error: ${e.message}`));
  return {
    write: (bytes) => {
      sock.write(bytes);
    },
    onData: (cb) => sock.on("data", (d: Buffer) => cb(new Uint8Array(d.buffer, d.byteOffset, d.byteLength))),
    onClose: onClose.register,
    close: () => sock.end(),
    get bufferedAmount() {
      return sock.writableLength;
    },
  };
}
