/**
 * The benchmarks' HTTP client: node:http with keep-alive (much cheaper than
 * fetch, which would otherwise eat the CPU the broker needs).
 */
import { Agent, request } from "node:http";

/** An HTTP client for one broker port. */
export interface HttpCaller {
  /**
   * One request; resolves with the body once the status is `okStatus` (default: any 2xx).
   * @throws Error `<path>: <status> <body>` on another status, or the socket error
   */
  call(method: string, path: string, opts?: { body?: string; token?: string; okStatus?: number }): Promise<string>;
  /** Requests sent again because the kept-alive connection they went out on had just been closed by the server. */
  readonly resent: number;
  /** Closes the pooled sockets. */
  close(): void;
}

/**
 * workerd closes a keep-alive connection 5 s after its last response without
 * saying so (no `Keep-Alive: timeout=` header), like Node's own HTTP server.
 * Idle sockets are dropped well before that, ms; a request that still meets
 * a connection closed under it (the client's event loop can lag that much on
 * a loaded machine) is sent again once on a new one — the server closed the
 * connection idle, so it never saw that request (Node's documented pattern:
 * `request.reusedSocket` and ECONNRESET).
 */
const IDLE_SOCKET_MS = 2_000;

/** A keep-alive client for `127.0.0.1:<port>` with up to `sockets` connections. */
export function httpCaller(port: number, sockets: number): HttpCaller {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, timeout: IDLE_SOCKET_MS });
  let resent = 0;
  const once = (method: string, path: string, opts: { body?: string; token?: string; okStatus?: number }, retry: boolean): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const headers: Record<string, string | number> = {};
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined) headers["content-length"] = Buffer.byteLength(opts.body);
      let answered = false;
      const req = request({ host: "127.0.0.1", port, path, method, agent, headers }, (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("error", reject);
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const ok = opts.okStatus !== undefined ? res.statusCode === opts.okStatus : res.statusCode! >= 200 && res.statusCode! < 300;
          if (ok) resolve(Buffer.concat(chunks).toString());
          else reject(new Error(`${path}: ${res.statusCode} ${Buffer.concat(chunks)}`));
        });
      });
      req.on("error", (e: NodeJS.ErrnoException) => {
        if (retry && !answered && req.reusedSocket && (e.code === "ECONNRESET" || e.message === "socket hang up")) {
          resent++;
          resolve(once(method, path, opts, false));
        } else reject(e);
      });
      req.end(opts.body);
    });
  return {
    call: (method, path, opts = {}) => once(method, path, opts, true),
    get resent() {
      return resent;
    },
    close: () => agent.destroy(),
  };
}
