/**
 * Platform faults, pure apart from logging: what a client may be told about
 * a failure it did not cause (docs/operations.md "Errors the broker does not
 * explain"). The platform's own text — SQLite messages, stack traces,
 * runtime errors — never leaves the broker on any transport: an unexpected
 * failure is logged here with a short reference (8 hex digits) that the
 * client's error names, so an operator can find it in the log.
 *
 * Kinds (`faultKind`):
 * - `overloaded`: a Durable Object call failed as `overloaded` (the object
 *   is over its request queue or CPU limits) — retry shortly;
 * - `out_of_memory`: the runtime ran out of memory (workerd's process-wide
 *   SQLite heap limit: `SQLITE_NOMEM`; an isolate over its memory limit) —
 *   the broker is overloaded, retry later;
 * - `unavailable`: the call failed `retryable` (the object was reset or
 *   moved mid-call) — retry;
 * - `internal`: anything else (a bug, a broken object) — logged.
 */

/** What kind of failure a thrown platform error is. */
export type FaultKind = "overloaded" | "out_of_memory" | "unavailable" | "internal";

/** How long a client should wait before retrying after each kind, seconds (HTTP `Retry-After`). */
export const RETRY_AFTER_S: Readonly<Record<Exclude<FaultKind, "internal">, number>> = {
  overloaded: 1,
  // memory comes back as idle objects are evicted, which workerd does 10 s after their last request
  out_of_memory: 5,
  unavailable: 1,
};

/** Text of the runtime's out-of-memory errors (SQLite's is "out of memory: SQLITE_NOMEM"). */
const OUT_OF_MEMORY = /\bSQLITE_NOMEM\b|\bout of memory\b|exceeded (its|the) memory limit/i;

/** Classifies a thrown error (Durable Object call failure, SQLite error, …). */
export function faultKind(e: unknown): FaultKind {
  const err = e as { message?: unknown; overloaded?: unknown; retryable?: unknown } | null | undefined;
  if (err?.overloaded === true) return "overloaded";
  if (OUT_OF_MEMORY.test(String(err?.message ?? e))) return "out_of_memory";
  if (err?.retryable === true) return "unavailable";
  return "internal";
}

/** True for the runtime's out-of-memory failures (see faultKind). */
export function isOutOfMemory(e: unknown): boolean {
  return faultKind(e) === "out_of_memory";
}

/** A fresh log reference: 8 hex digits. */
function newRef(): string {
  const b = crypto.getRandomValues(new Uint8Array(4));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** The error as one log line: its message and stack (never sent to a client). */
function describe(e: unknown): string {
  if (e instanceof Error) return e.stack && e.stack.includes(e.message) ? e.stack : `${e.message}\n${e.stack ?? ""}`;
  return String(e);
}

/**
 * Logs an unexpected failure (`console.error`: `<where>: internal error (ref
 * R): <message and stack>`) and returns R, for the client's
 * {@link internalErrorText}.
 */
export function logFault(where: string, e: unknown): string {
  const ref = newRef();
  console.error(`${where}: internal error (ref ${ref}): ${describe(e)}`);
  return ref;
}

/** At most one log line per this interval for overload faults, ms (a flood must not flood the log). */
export const OVERLOAD_LOG_EVERY_MS = 10_000;
let overloadLoggedAt = -Infinity;
let overloadSuppressed = 0;

/**
 * Logs an overload fault (`overloaded`, `out_of_memory`, `unavailable`) at
 * most once per OVERLOAD_LOG_EVERY_MS in this isolate, with the number of
 * others seen since the last line. `now`: ms (injectable for tests).
 */
export function logOverload(where: string, e: unknown, now = Date.now()): void {
  if (now - overloadLoggedAt < OVERLOAD_LOG_EVERY_MS) {
    overloadSuppressed++;
    return;
  }
  const more = overloadSuppressed > 0 ? ` (+${overloadSuppressed} more since the last report)` : "";
  overloadLoggedAt = now;
  overloadSuppressed = 0;
  console.warn(`${where}: ${faultKind(e)}${more}: ${e instanceof Error ? e.message : String(e)}`);
}

/** The client's text for an internal error logged under `ref`. */
export function internalErrorText(ref: string): string {
  return `internal error (ref ${ref}); the broker logged the details`;
}
