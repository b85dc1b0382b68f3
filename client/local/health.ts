/**
 * Liveness of a running local broker, pure: `mortarmq dev` probes
 * `/healthz` every HEALTH_INTERVAL_MS and gives up once no probe succeeded
 * for HEALTH_DEAD_AFTER_MS (wrangler or workerd died, or hangs).
 */

/** Time between two /healthz probes, ms. */
export const HEALTH_INTERVAL_MS = 3_000;
/** A broker whose /healthz did not answer 200 for this long is considered dead, ms. */
export const HEALTH_DEAD_AFTER_MS = 10_000;

/**
 * True for the request-log line of a successful `/healthz` probe —
 * Miniflare's `[mf:info] GET /healthz 200 OK (2ms)` or wrangler's
 * `[wrangler:info] …`, colours or not: `mortarmq dev --verbose` does not show
 * those, or its probe would print one every HEALTH_INTERVAL_MS.
 */
export function isHealthProbeLog(line: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /\bGET \/healthz 200\b/.test(line.replace(/\x1b\[[0-9;]*m/g, ""));
}

/**
 * True for workerd output lines that say nothing to a user of the broker:
 * the symbolizer notice, the recursive-isolate-lock notice, the `stack:`
 * lines of raw addresses that follow a runtime error (the error line itself
 * is kept) — the filter Miniflare applies for wrangler, on our own output —
 * and the notice that an alarm which fired after the object had moved it
 * was not run (`NOSENTRY SQLite alarm handler canceled`: workerd runs it at
 * the new time; every object's alarm() reads its own schedule table).
 */
export function isRuntimeNoise(line: string): boolean {
  return line.includes("Not symbolizing stack traces because $LLVM_SYMBOLIZER is not set")
    || line.includes("took recursive isolate lock")
    || line.includes("NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm")
    || /^\s*stack:( (0|[a-f\d]{4,}|\S+@[a-f\d]+))+;?( .*)?$/.test(line);
}

export class HealthWatch {
  private lastOk: number;

  /** @param now start time, ms (counts as a success: the broker was just found ready) */
  constructor(now: number, private readonly deadAfterMs = HEALTH_DEAD_AFTER_MS) {
    this.lastOk = now;
  }

  /** Records one probe result at `now` (ms); returns true once the broker is dead. */
  observe(ok: boolean, now: number): boolean {
    if (ok) this.lastOk = now;
    return now - this.lastOk >= this.deadAfterMs;
  }

  /** Time since the last successful probe, ms. */
  silentFor(now: number): number {
    return now - this.lastOk;
  }
}
