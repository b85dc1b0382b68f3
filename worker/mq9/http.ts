/**
 * mq9 over HTTP: `POST /mq9/<subject>` mirrors `nats request <subject>
 * <payload>` (DESIGN.md §1, §5). Body = payload bytes, `mq9-*` request
 * headers = NATS headers, `Authorization: Bearer <token>` = tenant.
 * Response = the JSON reply (`error` always present) with a fitting status.
 * A client that disconnects releases its held long-poll FETCH at once
 * (`Request.signal`, compatibility flag `enable_request_signal`).
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { MAX_PAYLOAD_BYTES, echo } from "../../wire/mq9";
import { authenticateToken, bearerToken } from "../../objects/tenants/auth";
import type { Env } from "../../objects/env";
import { handleMq9Request, replyJson, type Mq9Reply } from "../../objects/mq9/dispatch";
import { isolateMeter } from "../telemetry";
import { series } from "../../objects/usage/catalog";
import { mq9RequestSeries } from "../../objects/mq9/request-metrics";
import { httpQuota } from "../quota";

const BYTES_IN = series("mortarmq_bytes_received_total", { protocol: "http" });
const BYTES_OUT = series("mortarmq_bytes_sent_total", { protocol: "http" });
const te = new TextEncoder();

/** Path prefix of the route. */
export const MQ9_HTTP_PREFIX = "/mq9/";

/** Handler for `POST /mq9/*`. */
export async function mq9HttpHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const auth = await authenticateToken(c.env, bearerToken(c.req.header("authorization")));
  if (!auth.ok) {
    if (auth.reason === "unavailable") return c.json({ error: `unavailable: ${auth.message}` }, 503, { "Retry-After": "1" });
    const error = auth.reason === "missing" ? "unauthorized: missing bearer token"
      : auth.reason === "revoked" ? "unauthorized: token revoked"
      : auth.reason === "expired" ? "unauthorized: token expired"
      : auth.reason === "deleted" ? "unauthorized: tenant deleted" : "unauthorized: invalid token";
    return c.json({ error }, 401, { "WWW-Authenticate": 'Bearer realm="mortarmq"' });
  }
  const path = new URL(c.req.url).pathname;
  const waitUntil = waitUntilOf(c);
  // Every request of an authenticated caller is metered, those refused here too (docs/operations.md).
  let subject: string | null = null;
  try {
    subject = decodeURIComponent(path.slice(path.indexOf(MQ9_HTTP_PREFIX) + MQ9_HTTP_PREFIX.length));
  } catch {
    /* answered below */
  }
  const payload = subject === null ? new Uint8Array() : await readBody(c.req.raw, MAX_PAYLOAD_BYTES);
  let reply: Mq9Reply;
  if (subject === null) {
    reply = { status: 400, code: "bad_request", body: { error: "subject in the path is not valid percent-encoding" } };
  } else if (typeof payload === "string") {
    reply = { status: 413, code: "payload_too_large", body: { error: `payload of ${echo(payload)} bytes exceeds the limit of ${MAX_PAYLOAD_BYTES} bytes` } };
  } else {
    const headers = new Map<string, string>();
    for (const [name, value] of c.req.raw.headers) if (name.toLowerCase().startsWith("mq9-")) headers.set(name, value);
    const quota = httpQuota(c.env, auth.tenant, auth.state);
    reply = await handleMq9Request(c.env, auth.tenant, { subject, headers, payload }, { signal: c.req.raw.signal, waitUntil, quota });
  }
  const body = te.encode(replyJson(reply)) as Uint8Array<ArrayBuffer>;
  isolateMeter.add(auth.tenant, mq9RequestSeries(subject ?? "", reply, "http"));
  isolateMeter.add(auth.tenant, BYTES_IN, typeof payload === "string" ? 0 : payload.byteLength);
  isolateMeter.add(auth.tenant, BYTES_OUT, body.length);
  waitUntil?.(isolateMeter.maybeFlush(c.env));
  const out: Record<string, string> = { "Content-Type": "application/json" };
  if (reply.retryAfterS !== undefined) out["Retry-After"] = String(reply.retryAfterS);
  return c.body(body, reply.status as ContentfulStatusCode, out);
}

/**
 * `ctx.waitUntil` of the invocation, if there is one (the release of a held
 * FETCH after the client disconnected must outlive the request).
 */
function waitUntilOf(c: Context<{ Bindings: Env }>): ((p: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (p) => ctx.waitUntil(p);
  } catch {
    return undefined; // no execution context (app.fetch called without one)
  }
}

/**
 * Reads the request body. When it exceeds `maxBytes` (declared, or counted
 * while streaming) returns its size as text instead: the declared length,
 * or "more than <maxBytes>" for a streamed body (not read to the end).
 */
async function readBody(req: Request, maxBytes: number): Promise<Uint8Array | string> {
  const declared = req.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > maxBytes) return declared.trim();
    return new Uint8Array(await req.arrayBuffer());
  }
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      return `more than ${maxBytes}`;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const ch of chunks) {
    out.set(ch, off);
    off += ch.byteLength;
  }
  return out;
}
