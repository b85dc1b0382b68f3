/**
 * mq9 answers to platform faults (docs/mq9.md "Errors and HTTP status"):
 * the error kind, the `error` string and the `Retry-After` for a thrown
 * error that is not an Mq9Error. The platform's text never goes into the
 * string (objects/shared/platform-faults.ts): unexpected failures are
 * logged under a reference the string names; overloads are logged at most
 * every 10 s.
 */
import type { Mq9ErrorCode } from "../../wire/mq9";
import { RETRY_AFTER_S, faultKind, internalErrorText, logFault, logOverload } from "../shared/platform-faults";

/** An mq9 error for a platform fault. */
export interface Mq9Fault {
  code: Mq9ErrorCode;
  error: string;
  /** Seconds after which a retry may succeed (HTTP `Retry-After`), absent for internal errors. */
  retryAfterS?: number;
}

/** Maps a thrown platform error to its mq9 answer; `where` names the object or handler in the log. */
export function mq9Fault(e: unknown, where: string): Mq9Fault {
  const kind = faultKind(e);
  switch (kind) {
    case "overloaded":
      logOverload(where, e);
      return { code: "too_many_requests", error: "broker overloaded, retry later", retryAfterS: RETRY_AFTER_S.overloaded };
    case "out_of_memory":
      logOverload(where, e);
      return { code: "unavailable", error: "broker out of memory, retry later", retryAfterS: RETRY_AFTER_S.out_of_memory };
    case "unavailable":
      logOverload(where, e);
      return { code: "unavailable", error: "mailbox temporarily unavailable, retry", retryAfterS: RETRY_AFTER_S.unavailable };
    default:
      return { code: "internal", error: internalErrorText(logFault(where, e)) };
  }
}
