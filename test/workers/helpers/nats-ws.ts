/**
 * Test helper: a raw NATS-protocol client over a real WebSocket to the
 * Worker (`SELF.fetch` with `Upgrade: websocket`). Collects everything the
 * server sends as text and lets a test wait for it.
 */
import { env, SELF } from "cloudflare:test";
import type { Env } from "../../../objects/env";

/** The test env with this project's binding types. */
export const testEnv = env as unknown as Env;

const te = new TextEncoder();
const td = new TextDecoder();

export interface RawNats {
  ws: WebSocket;
  /** Everything received so far. */
  readonly text: string;
  /** Close event (code) once the server closed. */
  readonly closed: Promise<number>;
  /**
   * Sends `data` as ONE message. To split a stream across several messages
   * use deliverInOrder (helpers/deliver.ts): the pool can hand back-to-back
   * messages to the object out of order.
   */
  send(data: string | Uint8Array): void;
  /** Waits until the received text matches, returns the match. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Drops received text up to the end of the last match handed out. */
  clear(): void;
}

/** Opens `GET /nats` on the Worker (optionally with extra upgrade headers). */
export async function openNats(headers: Record<string, string> = {}, ws?: WebSocket): Promise<RawNats> {
  let socket = ws;
  if (!socket) {
    const res = await SELF.fetch("http://broker/nats", { headers: { Upgrade: "websocket", ...headers } });
    if (res.status !== 101 || !res.webSocket) throw new Error(`upgrade failed: ${res.status} ${await res.text()}`);
    socket = res.webSocket;
  }
  return wrap(socket);
}

/** Wraps an already-obtained client WebSocket end. */
export function wrap(socket: WebSocket): RawNats {
  socket.accept();
  socket.binaryType = "arraybuffer"; // workerd defaults to Blob at this compatibility date
  let text = "";
  const waiters = new Set<() => void>();
  let closeCode: (code: number) => void = () => {};
  const closed = new Promise<number>((r) => (closeCode = r));
  socket.addEventListener("message", (e) => {
    text += typeof e.data === "string" ? `[TEXT]${e.data}` : td.decode(new Uint8Array(e.data as ArrayBuffer));
    for (const w of waiters) w();
  });
  socket.addEventListener("close", (e) => {
    closeCode(e.code);
    for (const w of waiters) w();
  });
  return {
    ws: socket,
    get text() {
      return text;
    },
    closed,
    send(data) {
      socket.send(typeof data === "string" ? te.encode(data) : data);
    },
    waitFor(re, timeoutMs = 4000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = text.match(re);
          if (m) {
            waiters.delete(check);
            clearTimeout(t);
            resolve(m);
          }
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${re}; received: ${JSON.stringify(text)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    clear() {
      text = "";
    },
  };
}
