/**
 * The mq9 reply (docs/mq9.md) as every handler builds it and every
 * transport sends it: a JSON body whose `error` is "" on success, its HTTP
 * status, and the error kind and Retry-After of a failure. The handlers
 * (dispatch.ts, push.ts, agents.ts) and the transports (NATS session, HTTP
 * and MCP routes) import it from here, so none of them imports another to
 * get it.
 */
import { MQ9_HTTP_STATUS, Mq9Error, type Mq9ErrorCode } from "../../wire/mq9";
import type { MailboxResult } from "../mailbox/rpc";
import type { Refusal } from "../tenants/gate";
import { mq9Fault } from "./faults";

/** The JSON reply (always has `error`, "" on success) and its HTTP status. */
export interface Mq9Reply {
  status: number;
  /** The error kind of a failed request, when known (the `outcome` label of mortarmq_mq9_requests_total). */
  code?: Mq9ErrorCode;
  body: { error: string } & Record<string, unknown>;
  /**
   * The exact reply text when the handler built it itself (DISCOVER splices
   * stored agent cards in verbatim; a SEND's reply is written directly);
   * otherwise absent. Transports send
   * {@link replyJson}, never `JSON.stringify(body)` directly.
   */
  json?: string;
  /** Refused by a quota or an overload: seconds after which a retry may succeed (HTTP `Retry-After`). */
  retryAfterS?: number;
}

/** The reply's JSON text: `json` when the handler built it, else `body` serialized. */
export function replyJson(reply: Mq9Reply): string {
  return reply.json ?? JSON.stringify(reply.body);
}

/** A failure of kind `code` with the status of MQ9_HTTP_STATUS (and Retry-After, seconds, when given). */
function failure(code: Mq9ErrorCode, error: string, retryAfterS?: number): Mq9Reply {
  return { status: MQ9_HTTP_STATUS[code], code, body: { error }, ...(retryAfterS !== undefined ? { retryAfterS } : {}) };
}

/** Turns a Mailbox RPC result into the reply: `fields` of a success, or `{error}` with its status. */
export function mailboxReply<R extends MailboxResult>(r: R, fields: (v: Extract<R, { ok: true }>) => Record<string, unknown>): Mq9Reply {
  if (!r.ok) {
    const f = r as Extract<MailboxResult, { ok: false }>;
    return failure(f.code, f.error, f.retryAfterS);
  }
  return { status: 200, body: { error: "", ...fields(r as Extract<R, { ok: true }>) } };
}

/**
 * The reply to a request refused by a tenant limit: 429 `too_many_requests`
 * (a rate) or `quota_exceeded`; 503 `unavailable` when the check found the
 * broker overloaded. Always with `Retry-After` (≥ 1 s).
 */
export function quotaReply(r: Refusal): Mq9Reply {
  const code: Mq9ErrorCode = r.kind === "rate" ? "too_many_requests" : r.kind === "overloaded" ? "unavailable" : "quota_exceeded";
  return failure(code, r.message, Math.max(1, Math.ceil(r.retryAfterMs / 1000)));
}

/**
 * Maps a thrown value to an mq9 error reply: an Mq9Error as it is, a
 * platform fault without the platform's text (mq9/faults.ts: 429/503 with
 * `Retry-After` for overloads, 500 with a log reference otherwise).
 */
export function errorReply(e: unknown): Mq9Reply {
  if (e instanceof Mq9Error) return failure(e.code, e.message);
  const f = mq9Fault(e, "mq9 request");
  return failure(f.code, f.error, f.retryAfterS);
}
