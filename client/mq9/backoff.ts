/**
 * Waiting between retries (pure apart from timers): exponential backoff
 * with jitter, and an abortable sleep.
 */

/**
 * Exponential backoff: the n-th delay is drawn from [b/2, b] with
 * b = min(maxMs, initialMs · 2^n) (jitter keeps many clients that failed
 * together from retrying together). `reset()` after a success.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    /** First delay's upper bound, ms. */
    readonly initialMs = 100,
    /** Largest delay, ms. */
    readonly maxMs = 10_000,
    private readonly random: () => number = Math.random,
  ) {}

  /** The next delay, ms. */
  next(): number {
    const bound = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(bound / 2 + (bound / 2) * this.random());
  }

  /** Starts over at `initialMs`. */
  reset(): void {
    this.attempt = 0;
  }
}

/** Resolves after `ms`, or as soon as `signal` aborts; true when the full time passed. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (full: boolean) => {
      clearTimeout(t);
      signal?.removeEventListener("abort", onAbort);
      resolve(full);
    };
    const onAbort = () => done(false);
    const t = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
