/**
 * One HTTP request on a connection of its own (`agent: false`, closed after
 * the answer), for end-to-end tests that drive the local broker while it is
 * flooded: there, a keep-alive connection that fetch() reuses was seen
 * closed by workerd before its next answer ("other side closed", #28 item 1
 * — a runtime defect reported, not worked around in the product), which
 * would fail the test for the transport, not for what it measures.
 */
import { request } from "node:http";

/** The answer: status, headers (lower-case names) and body text. */
export interface OnceAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * Sends `method url` with `headers` and `body` on a new connection; rejects
 * on a connection error. `url` is `http://` only.
 */
export function httpOnce(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {}): Promise<OnceAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? "GET", headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(opts.body);
  });
}
