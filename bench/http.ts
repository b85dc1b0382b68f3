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
  /** Closes the pooled sockets. */
  close(): void;
}

/**
 * workerd closes a keep-alive connection idle for 5 s without saying so
 * (no `Keep-Alive: timeout=` header); a request sent on it just then fails
 * with "socket hang up" / ECONNRESET. Idle sockets are dropped before that
 * (what undici's 4 s keepAliveTimeout does for fetch), ms.
 */
const IDLE_SOCKET_MS = 4_000;

/** A keep-alive client for `127.0.0.1:<port>` with up to `sockets` connections. */
export function httpCaller(port: number, sockets: number): HttpCaller {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, timeout: IDLE_SOCKET_MS });
  return {
    call: (method, path, opts = {}) =>
      new Promise<string>((resolve, reject) => {
        const headers: Record<string, string | number> = {};
        if (opts.token) headers.authorization = `Bearer ${opts.token}`;
        if (opts.body !== undefined) headers["content-length"] = Buffer.byteLength(opts.body);
        const req = request({ host: "127.0.0.1", port, path, method, agent, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on("error", reject);
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const ok = opts.okStatus !== undefined ? res.statusCode === opts.okStatus : res.statusCode! >= 200 && res.statusCode! < 300;
            if (ok) resolve(Buffer.concat(chunks).toString());
            else reject(new Error(`${path}: ${res.statusCode} ${Buffer.concat(chunks)}`));
          });
        });
        req.on("error", reject);
        req.end(opts.body);
      }),
    close: () => agent.destroy(),
  };
}
