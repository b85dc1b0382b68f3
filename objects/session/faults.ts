/**
 * Platform faults → registry codes (DESIGN.md §4; docs/protocol.md
 * "Platform faults"), pure apart from logging. A failed Durable Object call
 * never drops the client's connection; it becomes an ERR:
 * - `overloaded` (the object is over its request queue/CPU limits) → BACKPRESSURE 0x4001
 * - the runtime out of memory (`SQLITE_NOMEM`, …) → BACKPRESSURE 0x4001
 * - `retryable` (the object was reset or moved mid-call) → LEADER_CHANGED 0x6001
 * - no answer within the call deadline → ELECTION_TIMEOUT 0x600c
 * - anything else (an exception in the object) → INTERNAL_ERROR 0x000f
 * All are "retry-with-backoff" for the client. The ERR message never holds
 * the platform's text (objects/shared/platform-faults.ts): an internal
 * error is logged under a reference the message names.
 */
import { ErrorCode } from "../../wire/mortar/errors";
import { faultKind, internalErrorText, logFault, logOverload } from "../shared/platform-faults";

/** Deadline for one Session → Partition/Registry call, ms. */
export const CALL_DEADLINE_MS = 10_000;

/** Thrown by withDeadline when the call did not answer in time. */
export class CallTimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** A registry code and diagnostic for a failed call. */
export interface Fault {
  code: number;
  message: string;
}

/**
 * Maps an error thrown by a Durable Object call (or by the session's own
 * code) to the code and message the client gets; `where` names the caller
 * in the log.
 */
export function faultOf(e: unknown, where = "MortarSession"): Fault {
  if (e instanceof CallTimeoutError) return { code: ErrorCode.ELECTION_TIMEOUT, message: e.message };
  switch (faultKind(e)) {
    case "overloaded":
      logOverload(where, e);
      return { code: ErrorCode.BACKPRESSURE, message: "object overloaded; retry later" };
    case "out_of_memory":
      logOverload(where, e);
      return { code: ErrorCode.BACKPRESSURE, message: "broker out of memory; retry later" };
    case "unavailable":
      logOverload(where, e);
      return { code: ErrorCode.LEADER_CHANGED, message: "object reset or moved mid-call; retry" };
    default:
      return { code: ErrorCode.INTERNAL_ERROR, message: internalErrorText(logFault(where, e)) };
  }
}

/**
 * Resolves like `p`, or rejects with CallTimeoutError after `ms`. The
 * underlying call is not cancelled (its late answer is ignored by the caller).
 */
export function withDeadline<T>(p: Promise<T>, ms = CALL_DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CallTimeoutError(ms)), ms);
  });
  return Promise.race([p, timeout]).finally(() => { if (timer !== null) clearTimeout(timer); });
}
