/**
 * The `http` transport: `POST <base>/mq9/<subject>` (docs/mq9.md
 * "Transport") with `fetch` only, so it runs unchanged in browsers, Workers
 * and Node. The body is the payload bytes, `mq9-*` request headers carry
 * the SEND options, `Authorization: Bearer` the token. Cross-origin use
 * needs the broker's `CORS_ORIGINS` to allow the page's origin.
 */
import { Mq9ClientError } from "./errors";
import type { Mq9Transport, TransportAnswer, TransportOptions, TransportRequest } from "./transport";

/** Parses `Retry-After` (delay seconds or an HTTP date) into ms, or null. */
export function parseRetryAfter(value: string | null, nowMs = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** The cause of a failed fetch, as short as it can be said (`ECONNREFUSED`, …). */
function causeOf(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
}

/** mq9 over HTTP. */
export class HttpTransport implements Mq9Transport {
  readonly name = "http" as const;
  private readonly fetch: typeof fetch;

  /**
   * @param base the broker's http(s) URL without a trailing slash (a path is kept: a broker behind a path prefix)
   */
  constructor(
    readonly base: string,
    private readonly options: TransportOptions = {},
  ) {
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async request(req: TransportRequest): Promise<TransportAnswer> {
    const headers: Record<string, string> = { ...req.headers };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const timeout = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const url = `${this.base}/mq9/${encodeURIComponent(req.subject)}`;
    let res: Response;
    let text: string;
    try {
      res = await this.fetch(url, { method: "POST", headers, body: req.payload as Uint8Array<ArrayBuffer>, signal });
      text = await res.text();
    } catch (e) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (timeout.aborted) throw Mq9ClientError.timeout(req.subject, req.timeoutMs, e);
      throw Mq9ClientError.connection(`cannot reach the broker at ${this.base} (${causeOf(e)})`, req.subject, e);
    }
    return { text, status: res.status, retryAfterMs: parseRetryAfter(res.headers.get("retry-after")) };
  }

  async close(): Promise<void> {
    // nothing to close: every request is its own HTTP exchange
  }
}
