/**
 * HTTP requests from the CLI to the broker (mq9 over HTTP, /stats): the
 * base URL from `--url`, `Authorization: Bearer` from `--token`, a timeout,
 * and a refused/unresolvable connection turned into the one-line
 * BROKER_UNREACHABLE error.
 */
import type { z } from "zod";
import { CliError, unreachable, usageError } from "./errors";
import type { GlobalOptions } from "./context";

/** Default time for one HTTP request, ms (long-polls add their own wait). */
export const HTTP_TIMEOUT_MS = 30_000;

/**
 * The http(s) origin for `url`: ws→http, wss→https; a path is dropped.
 * @throws CliError USAGE for tcp:// (only MortarMQ commands can use the TCP bridge) or another scheme
 */
export function httpBase(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw usageError(`--url ${url} is not a URL`, "use e.g. http://127.0.0.1:8787");
  }
  if (u.protocol === "ws:") u.protocol = "http:";
  else if (u.protocol === "wss:") u.protocol = "https:";
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    // the tcp:// note only for a tcp:// URL: a typo such as htp:// is not about the TCP bridge
    const hint = u.protocol === "tcp:" ? "use --url http://host:port (tcp:// works only for topics create/delete/alter, pub and sub)" : "use --url http://host:port";
    throw usageError(`this command needs an http(s) broker URL, not ${url}`, hint);
  }
  return u.origin;
}

/** A decoded HTTP answer. */
export interface HttpAnswer {
  status: number;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
  /** Raw body text. */
  text: string;
}

/** Options for brokerRequest. */
export interface BrokerRequestOptions {
  method: "GET" | "POST" | "PUT" | "DELETE";
  body?: Uint8Array | string;
  headers?: Record<string, string>;
  /** Total time allowed, ms (default HTTP_TIMEOUT_MS). */
  timeoutMs?: number;
}

/**
 * Sends one request to `path` (starting with "/") on the broker named by
 * `g.url`, with the bearer token when one is set.
 * @throws CliError BROKER_UNREACHABLE when nothing answers; TIMEOUT when no answer in time
 */
export async function brokerRequest(g: GlobalOptions, path: string, opts: BrokerRequestOptions): Promise<HttpAnswer> {
  const base = httpBase(g.url);
  const headers: Record<string, string> = { ...opts.headers };
  if (g.token) headers.authorization = `Bearer ${g.token}`;
  const timeoutMs = opts.timeoutMs ?? HTTP_TIMEOUT_MS;
  let res: Response;
  try {
    res = await fetch(base + path, {
      method: opts.method,
      headers,
      body: typeof opts.body === "string" || opts.body === undefined ? opts.body : new Uint8Array(opts.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err.name === "TimeoutError") throw new CliError("TIMEOUT", `no answer from ${base}${path} within ${timeoutMs} ms`, "check that the broker is healthy (GET /healthz)");
    throw unreachable(base, err.cause?.code ?? err.cause?.message ?? err.message);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** Per HTTP status: the error name and what to do next. */
export type StatusHints = Readonly<Record<number, readonly [string, string]>>;

/**
 * One JSON API call (admin, consumer groups); returns the answer validated
 * with `schema`. A 2xx answer that does not match is BAD_ANSWER; any other
 * status is a CliError named by `hints` (HTTP_ERROR otherwise) carrying the
 * broker's `error` text; a 404 without one means the broker does not serve
 * the route (NOT_SERVED, with `notServed` as the hint).
 * @throws CliError
 */
export async function apiRequest<S extends z.ZodType>(g: GlobalOptions, path: string, opts: BrokerRequestOptions, schema: S,
  hints: StatusHints, notServed: string): Promise<z.infer<S>> {
  const a = await brokerRequest(g, path, { ...opts, headers: { accept: "application/json", ...opts.headers } });
  if (a.status < 200 || a.status > 299) {
    const error = (a.json as { error?: unknown } | undefined)?.error;
    const [name, hint] = hints[a.status] ?? ["HTTP_ERROR", "check the broker's logs"];
    if (a.status === 404 && typeof error !== "string") throw new CliError("NOT_SERVED", `the broker does not serve ${path}`, notServed, 404);
    throw new CliError(name, typeof error === "string" ? error : `HTTP ${a.status}: ${a.text.slice(0, 200)}`, hint, a.status);
  }
  const parsed = schema.safeParse(a.json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message) : "invalid answer";
    throw new CliError("BAD_ANSWER", `${opts.method} ${path} answered an unexpected document (${where})`, "the CLI and the broker disagree on the API (see docs/)");
  }
  return parsed.data;
}
