/**
 * mq9 over HTTP: `POST /mq9/<subject>` mirrors `nats request <subject>
 * <payload>` (DESIGN.md §1, §5). Body = payload bytes, `mq9-*` request
 * headers = NATS headers, `Authorization: Bearer <token>` = tenant.
 * Response = the JSON reply (`error` always present) with a fitting status.
 * A client that disconnects releases its held long-poll FETCH at once
 * (`Request.signal`, compatibility flag `enable_request_signal`).
 */
import type { Context } from "hono";
import { MAX_PAYLOAD_BYTES, echo } from "../../wire/mq9";
import { authenticateToken, bearerToken } from "../../objects/tenants/auth";
import type { TenantState } from "../../objects/tenants/rpc";
import type { Env } from "../../objects/env";
import { handleMq9Request } from "../../objects/mq9/dispatch";
import type { Permit } from "../../objects/tenants/permissions";
import { replyJson, type Mq9Reply } from "../../objects/mq9/reply";
import { isolateMeter, WORKER_REQUESTS } from "../telemetry";
import { series } from "../../objects/usage/catalog";
import { mq9RequestSeries } from "../../objects/mq9/request-metrics";
import { httpQuota } from "../quota";
import { answerDiscardingRest, readLimitedBody } from "../body-limit";
import { tokenRefusal } from "../admin/access";
import { LongPollBudget } from "../../objects/mq9/long-poll";

const BYTES_IN = series("mortarmq_bytes_received_total", { protocol: "http" });
const BYTES_OUT = series("mortarmq_bytes_sent_total", { protocol: "http" });
const te = new TextEncoder();

/** Path prefix of the route. */
export const MQ9_HTTP_PREFIX = "/mq9/";

/**
 * Handler for `POST /mq9/*`. Every answer is JSON; a body over the size
 * limit is answered 413 as soon as the limit is crossed, while its rest is
 * discarded (worker/body-limit.ts).
 */
export async function mq9HttpHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const auth = await authenticateToken(c.env, bearerToken(c.req.header("authorization")));
  if (!auth.ok) {
    const r = tokenRefusal(auth);
    return c.json({ error: r.error }, r.status, r.headers);
  }
  isolateMeter.add(auth.tenant, WORKER_REQUESTS); // console mq9 requests are counted by their route (worker/admin/access.ts scopedTenant)
  return answerMq9(c, auth.tenant, auth.state, MQ9_HTTP_PREFIX, metered(auth));
}

/**
 * Answers one mq9 request over HTTP as `tenant` (already authenticated):
 * the subject is the path after `prefix`, the body the payload, `mq9-*`
 * headers the NATS headers; metered and quota-checked as the tenant's
 * (`state`: the tenant state its authentication answered, if any; `permit`:
 * the caller's token scopes, absent = full access). Shared
 * by `POST /mq9/*` and the console's `POST /v0/mq9/*` (worker/console/mq9-api.ts).
 */
export async function answerMq9(c: Context<{ Bindings: Env }>, tenant: string, state: TenantState | undefined, prefix: string, permit?: Permit): Promise<Response> {
  const path = new URL(c.req.url).pathname;
  const waitUntil = waitUntilOf(c);
  // Every request of an authenticated caller is metered, those refused here too (docs/operations.md).
  let subject: string | null = null;
  try {
    subject = decodeURIComponent(path.slice(path.indexOf(prefix) + prefix.length));
  } catch {
    /* answered below */
  }
  const body = await readLimitedBody(c.req.raw, MAX_PAYLOAD_BYTES);
  let reply: Mq9Reply;
  if (subject === null) {
    reply = { status: 400, code: "bad_request", body: { error: "subject in the path is not valid percent-encoding" } };
  } else if (!body.ok && body.encoding) {
    // 400 or 415 (an encoding other than gzip / deflate), counted as a bad request
    reply = { status: body.encoding.status, code: "bad_request", body: { error: body.encoding.error } };
  } else if (!body.ok) {
    reply = { status: 413, code: "payload_too_large", body: { error: `payload of ${echo(body.size ?? "")} bytes exceeds the limit of ${MAX_PAYLOAD_BYTES} bytes` } };
  } else {
    const headers = new Map<string, string>();
    for (const [name, value] of c.req.raw.headers) if (name.toLowerCase().startsWith("mq9-")) headers.set(name, value);
    const quota = httpQuota(c.env, tenant, state);
    reply = await handleMq9Request(c.env, tenant, { subject, headers, payload: body.bytes }, { signal: c.req.raw.signal, waitUntil, quota, permit, longPolls: new LongPollBudget(1) });
  }
  const answer = te.encode(replyJson(reply));
  isolateMeter.add(tenant, mq9RequestSeries(subject ?? "", reply, "http"));
  isolateMeter.add(tenant, BYTES_IN, body.ok ? body.bytes.byteLength : 0);
  isolateMeter.add(tenant, BYTES_OUT, answer.length);
  isolateMeter.maybeFlush(c.env, waitUntil);
  const out: Record<string, string> = { ...JSON_TYPE };
  if (reply.retryAfterS !== undefined) out["Retry-After"] = String(reply.retryAfterS);
  return answerDiscardingRest(answer, { status: reply.status, headers: out }, body.ok ? null : body.rest, waitUntil);
}

const JSON_TYPE = { "Content-Type": "application/json" };

/**
 * `ctx.waitUntil` of the invocation, if there is one (the release of a held
 * FETCH after the client disconnected must outlive the request).
 */
export function waitUntilOf(c: Context<{ Bindings: Env }>): ((p: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (p) => ctx.waitUntil(p);
  } catch {
    return undefined; // no execution context (app.fetch called without one)
  }
}

/** An authenticated caller as a Permit whose refusals count in the isolate's meter (undefined: no scopes). */
export function metered(who: Permit): Permit | undefined {
  return who.scopes ? { tenant: who.tenant, tokenId: who.tokenId, scopes: who.scopes, count: (s) => isolateMeter.add(who.tenant, s) } : undefined;
}
