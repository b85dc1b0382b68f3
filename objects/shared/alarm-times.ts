/**
 * The times of the alarm scheduler (scheduler.ts), pure: bounds of a run
 * and the retry delays of a failed part.
 */

/** While a live part keeps a run open, the stored alarm is at most this far ahead (crash recovery bound), ms. */
export const WATCHDOG_MS = 15_000;
/** Longest one alarm invocation keeps a live part running, ms (alarm handlers have a wall-clock limit). */
export const MAX_RUN_MS = 60_000;
/** First retry after a failed handler, ms; doubles per failure in a row. */
export const RETRY_BASE_MS = 1_000;
/** Longest retry delay after failures in a row, ms. */
export const RETRY_MAX_MS = 300_000;

/** Delay before retry number `failures` (≥ 1) of a part that failed that many times in a row, ms. */
export function retryDelayMs(failures: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

/** Earliest of the given times (ms), ignoring nulls; null when none. */
export function earliest(...times: (number | null | undefined)[]): number | null {
  let out: number | null = null;
  for (const t of times) if (t != null && (out === null || t < out)) out = t;
  return out;
}
