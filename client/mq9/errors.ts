/**
 * The one error class of the mq9 client. A failed request keeps the mq9
 * `error` string the broker sent (docs/mq9.md "Errors and HTTP status"),
 * classified into a small set of kinds that are the same over every
 * transport: the kind is read from the `error` text, which HTTP and NATS
 * carry alike (NATS has no status code); the HTTP status only decides for a
 * text this client does not know.
 */

/** What went wrong, in terms a caller acts on. */
export type Mq9ErrorKind =
  /** `mailbox X does not exist` (never created, or its TTL ended). */
  | "mailbox_not_found"
  /** `mailbox X already exists` (CREATE is not idempotent). */
  | "mailbox_exists"
  /** `message not found` (DELETE, or ACK of an id never assigned). */
  | "message_not_found"
  /** A tenant quota, a per-mailbox bound or broker overload refused the request. */
  | "quota_exceeded"
  /** Missing, unknown or revoked token (HTTP 401, NATS `Authorization Violation`). */
  | "unauthorized"
  /** The request itself is wrong: fix it, do not retry it unchanged. */
  | "invalid_request"
  /** The broker could not be reached or could not serve the request now. */
  | "unavailable";

/** Where the failure came from. */
export type Mq9ErrorSource =
  /** The broker answered with a non-empty `error`. */
  | "broker"
  /** No answer: the broker could not be reached, or the connection failed. */
  | "connection"
  /** No answer within the request's time limit. */
  | "timeout"
  /** Refused by this client before anything was sent (e.g. `reply()` without reply_to). */
  | "client";

/** Details of a failure, for {@link Mq9ClientError}'s constructor. */
export interface Mq9ErrorInit {
  kind: Mq9ErrorKind;
  source: Mq9ErrorSource;
  /** True when sending the same request again later may succeed. */
  retryable: boolean;
  /** HTTP status of the answer (http transport only), else null. */
  status?: number | null;
  /** The broker's `Retry-After` (http transport only), ms, else null. */
  retryAfterMs?: number | null;
  /** The subject of the request, when there was one. */
  subject?: string | null;
  /** For `source: "timeout"`: the time that passed without an answer, ms. */
  timeoutMs?: number | null;
  cause?: unknown;
}

/**
 * A failed mq9 request (or a refused client-side call). `message` is the
 * broker's `error` string unchanged for `source: "broker"`, otherwise a
 * description of the connection failure or client refusal.
 */
export class Mq9ClientError extends Error {
  override readonly name = "Mq9ClientError";
  readonly kind: Mq9ErrorKind;
  readonly source: Mq9ErrorSource;
  readonly retryable: boolean;
  /** HTTP status (http transport), null over NATS and for failures without an answer. */
  readonly status: number | null;
  /** How long the broker asked to wait before retrying (HTTP `Retry-After`), ms, or null. */
  readonly retryAfterMs: number | null;
  /** The request's subject, or null. */
  readonly subject: string | null;
  /** For `source: "timeout"`: how long it waited, ms; else null. */
  readonly timeoutMs: number | null;

  constructor(message: string, init: Mq9ErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.kind = init.kind;
    this.source = init.source;
    this.retryable = init.retryable;
    this.status = init.status ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.subject = init.subject ?? null;
    this.timeoutMs = init.timeoutMs ?? null;
  }

  /** The mq9 `error` string of a broker answer (same as `message`), or null for other sources. */
  get error(): string | null {
    return this.source === "broker" ? this.message : null;
  }

  /**
   * The error of a broker answer whose `error` is `text`.
   * @param status HTTP status (http transport) or null (NATS)
   * @param retryAfterMs the `Retry-After` header, ms, or null
   */
  static fromReply(text: string, status: number | null, retryAfterMs: number | null, subject: string): Mq9ClientError {
    const { kind, retryable } = classifyMq9Error(text, status);
    return new Mq9ClientError(text, { kind, retryable, source: "broker", status, retryAfterMs, subject });
  }

  /** The broker could not be reached / the connection failed before an answer. */
  static connection(message: string, subject: string | null, cause?: unknown): Mq9ClientError {
    return new Mq9ClientError(message, { kind: "unavailable", retryable: true, source: "connection", subject, cause });
  }

  /** No answer within `timeoutMs`. */
  static timeout(subject: string | null, timeoutMs: number, cause?: unknown): Mq9ClientError {
    const what = subject === null ? "no answer" : `no answer to ${subject}`;
    return new Mq9ClientError(`${what} within ${timeoutMs} ms`, { kind: "unavailable", retryable: true, source: "timeout", subject, timeoutMs, cause });
  }

  /** A call this client refuses before sending anything (always `invalid_request`, not retryable). */
  static client(message: string): Mq9ClientError {
    return new Mq9ClientError(message, { kind: "invalid_request", retryable: false, source: "client" });
  }
}

/**
 * Rules from the broker's `error` texts (docs/mq9.md, docs/agents.md,
 * docs/tenants.md) to a kind; first match wins. `retryable` says whether
 * the same request may succeed later without being changed.
 */
const RULES: readonly { re: RegExp; kind: Mq9ErrorKind; retryable: boolean }[] = [
  { re: /^mailbox .* does not exist$/s, kind: "mailbox_not_found", retryable: false },
  { re: /^mailbox .* already exists$/s, kind: "mailbox_exists", retryable: false },
  { re: /^message not found$/, kind: "message_not_found", retryable: false },
  { re: /^unauthorized: /, kind: "unauthorized", retryable: false },
  { re: /^Authorization Violation$/i, kind: "unauthorized", retryable: false },
  { re: /^publish rate limit exceeded /, kind: "quota_exceeded", retryable: true },
  { re: /^broker overloaded, retry later: /, kind: "quota_exceeded", retryable: true },
  { re: /^mailbox .* already holds \d+ waiting FETCH requests$/s, kind: "quota_exceeded", retryable: true },
  { re: /^(storage|mailbox) quota exceeded: /, kind: "quota_exceeded", retryable: false },
  { re: /^mailbox .* already has \d+ consumer groups: /s, kind: "quota_exceeded", retryable: false },
  { re: /^agent registry is full/, kind: "quota_exceeded", retryable: false },
  { re: /^unavailable: /, kind: "unavailable", retryable: true },
  { re: /^mailbox temporarily unavailable, retry: /, kind: "unavailable", retryable: true },
  { re: /^semantic search is unavailable: /, kind: "unavailable", retryable: true },
  { re: /^Authorization Unavailable$/i, kind: "unavailable", retryable: true },
  { re: /^internal error: /, kind: "unavailable", retryable: true },
];

/**
 * The kind of a broker `error` text. Unknown texts fall back on the HTTP
 * status when there is one (401 unauthorized; 429 quota_exceeded,
 * retryable; 5xx unavailable, retryable), else `invalid_request`.
 */
export function classifyMq9Error(text: string, status: number | null = null): { kind: Mq9ErrorKind; retryable: boolean } {
  for (const r of RULES) if (r.re.test(text)) return { kind: r.kind, retryable: r.retryable };
  if (status === 401) return { kind: "unauthorized", retryable: false };
  if (status === 429) return { kind: "quota_exceeded", retryable: true };
  if (status !== null && status >= 500) return { kind: "unavailable", retryable: true };
  return { kind: "invalid_request", retryable: false };
}
