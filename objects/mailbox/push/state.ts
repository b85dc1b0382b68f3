/**
 * Push delivery decisions (pure; docs/push.md): where a push group starts
 * and what it sends next, how an attempt's answer is judged, when the next
 * attempt happens (exponential backoff with jitter, Retry-After), when a
 * message is dead-lettered, and how the group's ack floors follow the
 * settled messages. The glue (driver.ts) does the I/O.
 */
import { LANE_COUNT, WEBHOOK_SECRET_PREFIX, bytesToBase64, type Lane, type PushBackoff } from "../../../wire/mq9";
import type { GroupCursor } from "../cursor";

/** The backoff schedule a deployment uses (wire/mq9 DEFAULT_PUSH_BACKOFF, or its Worker vars). */
export type BackoffPolicy = PushBackoff;

/** A `Retry-After` is honoured up to this long, ms (1 hour); a longer one waits this long. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Wait after `failures` failed attempts (≥ 1) before the next one, ms:
 * d = min(maxMs, baseMs × 2^(failures − 1)), jittered uniformly into
 * [d/2, d] ("equal jitter": receivers that failed together do not retry
 * together, and the wait never falls below half the schedule).
 * `random` returns [0, 1).
 */
export function backoffMs(failures: number, policy: BackoffPolicy, random: () => number): number {
  const d = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(failures, 1) - 1, 40));
  return Math.round(d / 2 + random() * (d / 2));
}

/**
 * A `Retry-After` header value as a wait in ms from `nowMs`: delta-seconds
 * (`120`) or an HTTP date; null when absent or unparsable. A date in the
 * past is 0.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^[0-9]{1,10}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** How one attempt ended. */
export type AttemptOutcome =
  | { kind: "ok"; status: number }
  /** `retryAfterMs`: the answer's Retry-After capped at MAX_RETRY_AFTER_MS (`capped` set when it asked for longer). */
  | { kind: "http_error"; status: number; retryAfterMs: number | null; capped?: true }
  | { kind: "timeout"; timeoutMs: number }
  | { kind: "connection_error"; detail: string };

/** The `outcome` label of `mortarmq_push_attempts_total`. */
export type OutcomeLabel = AttemptOutcome["kind"];

/** Every outcome label (the metric's initial series). */
export const OUTCOME_LABELS: readonly OutcomeLabel[] = ["ok", "http_error", "timeout", "connection_error"];

/**
 * Judges an HTTP answer: 2xx acknowledges the message; anything else
 * (3xx included: redirects are not followed) is a failed attempt, with
 * the answer's Retry-After if it has one, capped at MAX_RETRY_AFTER_MS
 * (the wait the broker actually honours).
 */
export function outcomeOfStatus(status: number, retryAfter: string | null, nowMs: number): AttemptOutcome {
  if (status >= 200 && status <= 299) return { kind: "ok", status };
  const asked = parseRetryAfter(retryAfter, nowMs);
  if (asked !== null && asked > MAX_RETRY_AFTER_MS) return { kind: "http_error", status, retryAfterMs: MAX_RETRY_AFTER_MS, capped: true };
  return { kind: "http_error", status, retryAfterMs: asked };
}

/** workerd's text for a failure it does not explain to JavaScript (`internal error; reference = …`: DNS, TLS, a malformed answer). */
const PLATFORM_INTERNAL_ERROR = /\binternal error\b/i;

/** What `last_error` says for such a failure (workerd logs the details on its side). */
export const UNREACHABLE_DETAIL = "the endpoint could not be reached or did not answer valid HTTP (DNS, TLS, routing or a malformed answer)";

/**
 * The `connection_error` detail for the message of a failed `fetch`:
 * workerd's own explanations (`Network connection lost.`) are kept, its
 * internal-error text (with a reference that means nothing to a tenant) is
 * replaced by {@link UNREACHABLE_DETAIL} — the platform's text is never
 * shown (docs/operations.md "Under a flood").
 */
export function connectionErrorDetail(message: string): string {
  return PLATFORM_INTERNAL_ERROR.test(message) ? UNREACHABLE_DETAIL : message;
}

/** Longest receiver-provided detail kept in `last_error`, characters. */
const MAX_DETAIL_CHARS = 200;

/** The `last_error` text of a failed attempt. */
export function describeOutcome(o: AttemptOutcome): string {
  switch (o.kind) {
    case "ok":
      return "";
    case "http_error": {
      const redirect = o.status >= 300 && o.status <= 399 ? " (redirects are not followed)" : "";
      const after = o.retryAfterMs !== null ? ` (Retry-After ${o.capped ? "capped to " : ""}${Math.ceil(o.retryAfterMs / 1000)} s)` : "";
      return `HTTP ${o.status}${redirect}${after}`;
    }
    case "timeout":
      return `no answer within ${o.timeoutMs} ms`;
    case "connection_error":
      return `connection failed: ${o.detail.slice(0, MAX_DETAIL_CHARS)}`;
  }
}

/** What happens to a message after a failed attempt. */
export type AfterFailure = { kind: "retry"; atMs: number } | { kind: "dead_letter" };

/**
 * After the `attempts`-th attempt (1-based) failed with `o` at `nowMs`:
 * dead-letter once `maxAttempts` are used, else retry after the backoff —
 * or after the answer's Retry-After when that is longer (outcomeOfStatus
 * capped it at MAX_RETRY_AFTER_MS).
 */
export function afterFailure(
  attempts: number, maxAttempts: number, o: AttemptOutcome, nowMs: number, policy: BackoffPolicy, random: () => number,
): AfterFailure {
  if (attempts >= maxAttempts) return { kind: "dead_letter" };
  let wait = backoffMs(attempts, policy, random);
  if (o.kind === "http_error" && o.retryAfterMs !== null) wait = Math.max(wait, Math.min(o.retryAfterMs, MAX_RETRY_AFTER_MS));
  return { kind: "retry", atMs: nowMs + wait };
}

/**
 * The cursor a push subscription starts its group with. A group that has
 * a stored position keeps its ack floors, and everything at or above them
 * is delivered again (nothing unacknowledged is skipped); a new group
 * starts every lane at `startId` (the CREATE's `deliver`, as FETCH).
 */
export function pushStartCursor(stored: GroupCursor | null, startId: number): GroupCursor {
  const floors = stored ? [...stored.floors] : Array.from({ length: LANE_COUNT }, () => startId);
  return { floors, delivered: floors.map((f) => f - 1), batch: null };
}

/** A message taken by a push subscription and not yet settled. */
export interface OpenMessage {
  lane: Lane;
  msgId: number;
}

/**
 * The group's ack floors while the subscription holds `open` messages: in
 * each lane, everything below the lowest open message is settled
 * (acknowledged by a 2xx or dead-lettered), else everything up to the
 * highest taken (`cursor.delivered`). This is the mailbox's ACK rule
 * applied per settled message: a floor never moves backwards and never
 * passes a message of its lane that is still open — with `concurrency` > 1
 * a later message can be settled first without acknowledging an earlier
 * one.
 */
export function pushFloors(cursor: GroupCursor, open: Iterable<OpenMessage>): number[] {
  const floors = cursor.delivered.map((d) => d + 1);
  for (const m of open) floors[m.lane] = Math.min(floors[m.lane]!, m.msgId);
  return floors.map((f, lane) => Math.max(f, cursor.floors[lane]!));
}

/** The cursor after taking message `m` (highest taken per lane). */
export function takeMessage(cursor: GroupCursor, m: OpenMessage): GroupCursor {
  const delivered = [...cursor.delivered];
  delivered[m.lane] = Math.max(delivered[m.lane]!, m.msgId);
  return { floors: cursor.floors, delivered, batch: null };
}

/** Where each lane's next untaken message is: just after the highest taken. */
export function nextPositions(cursor: GroupCursor): number[] {
  return cursor.delivered.map((d, lane) => Math.max(d + 1, cursor.floors[lane]!));
}

/** Outbound connections one invocation keeps open at most (Cloudflare's limit per invocation: 6). */
export const PUSH_MAX_CONNECTIONS = 6;

/** What one alarm run of a mailbox's push deliveries has open and has spent. */
export interface RunUse {
  /** Attempts waiting for their endpoint's answer. */
  inFlight: number;
  /** Dead-letter copies being stored (calls to another Mailbox). */
  copying: number;
  /** A budget lease from the tenant is in flight. */
  leasing: boolean;
  /** Subrequests started in this run: attempts, dead-letter copies, leases. */
  spent: number;
}

/**
 * How many more attempts or dead-letter copies may start now in this run:
 * at most PUSH_MAX_CONNECTIONS open at once, at most `budget` subrequests
 * per run (the rest waits for the next run, a new invocation with its own
 * budget). Never negative.
 */
export function startSlots(use: RunUse, budget: number): number {
  const open = use.inFlight + use.copying + (use.leasing ? 1 : 0);
  return Math.max(0, Math.min(PUSH_MAX_CONNECTIONS - open, budget - use.spent));
}

/**
 * May an attempt of `size` payload bytes start while `inFlightBytes` are in
 * flight? Within `budgetBytes`, and always when nothing is in flight (one
 * large message can never stall a subscription).
 */
export function admitsBytes(inFlightBytes: number, size: number, budgetBytes: number): boolean {
  return inFlightBytes === 0 || inFlightBytes + size <= budgetBytes;
}

function hex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** A new push_id: `push_` + 24 hex digits (96 random bits from `fill`). */
export function newPushId(fill: (b: Uint8Array) => void): string {
  const b = new Uint8Array(12);
  fill(b);
  return `push_${hex(b)}`;
}

/** A generated signing secret, Standard Webhooks style: `whsec_` + base64 of 32 random bytes (from `fill`), which are the HMAC key (wire/mq9/push-signature.ts). */
export function newPushSecret(fill: (b: Uint8Array) => void): string {
  const b = new Uint8Array(32);
  fill(b);
  return `${WEBHOOK_SECRET_PREFIX}${bytesToBase64(b)}`;
}
