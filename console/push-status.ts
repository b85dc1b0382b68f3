/** What the console shows as a push subscription's status (docs/push.md PUSH.LIST fields). Pure. */
import type { PushInfo } from "../wire/mq9/push";

/**
 * `state`, followed by `last_error` only when the latest attempt failed:
 * a failure recorded after the last success (in the same second: when a
 * message still waits for its retry). "active" after a failure that later
 * deliveries followed. A failure stored before last_failure_time existed
 * (null with a last_error) counts as the latest when nothing succeeded
 * since, or a message waits for its retry.
 */
export function pushStatus(p: Pick<PushInfo, "state" | "last_error" | "last_success_time" | "last_failure_time">): string {
  const failure = p.last_failure_time;
  const success = p.last_success_time;
  const retrying = p.state === "retrying";
  const failedLast = p.last_error !== "" && (failure === null
    ? success === null || retrying
    : success === null || failure > success || (failure === success && retrying));
  return failedLast ? `${p.state}: ${p.last_error}` : p.state;
}
