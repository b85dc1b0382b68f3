/**
 * The counting pipeline's data (pure): what a reporter object keeps until
 * it is reported (counts bucketed per hour), the report it sends to its
 * tenant's UsageAggregator, and the level bookkeeping that turns gauges and
 * the cumulative counters an object already stores into increments.
 * docs/operations.md "How counters are gathered".
 */

/** Length of a metering bucket, ms (one hour). */
export const HOUR_MS = 3_600_000;

/** Start (ms since the epoch) of the hour holding `ms`. */
export function hourOf(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/** One counted increment: [hour start ms, series key, value]. */
export type ReportEntry = [hour: number, series: string, value: number];

/**
 * One report from one reporter to its tenant's aggregator. `reporter` is
 * unique per counting object (its Durable Object id, or `worker:<uuid>` for
 * a Worker isolate); `no` starts at 1 and grows by one per report. The
 * aggregator applies a report only when `no` is above the last number it
 * applied for `reporter`, so a retried report is never counted twice.
 */
export interface UsageReport {
  reporter: string;
  no: number;
  /** When the report was built, ms since the epoch. */
  at: number;
  /**
   * The newest count in the report, ms — set by reporters that may build a
   * report long after counting (a Worker isolate); absent = `at`. A tenant's
   * aggregator purged after that time drops the report (UsageAggregator).
   */
  countedUntil?: number;
  entries: ReportEntry[];
}

/** Counts per hour and series, not yet reported. */
export class Buckets {
  private readonly hours = new Map<number, Map<string, number>>();
  /** Last hour used by add(), and its map (fast path: most adds hit the current hour). */
  private lastHour = -1;
  private last: Map<string, number> | null = null;

  /** Adds `n` to `key` in the hour of `now` (ms). */
  add(key: string, n: number, now: number): void {
    if (n === 0) return;
    const hour = hourOf(now);
    let m = hour === this.lastHour ? this.last : this.hours.get(hour);
    if (!m) this.hours.set(hour, (m = new Map()));
    this.lastHour = hour;
    this.last = m;
    m.set(key, (m.get(key) ?? 0) + n);
  }

  /**
   * Adds the seconds of [fromMs, toMs) to `key`, split across the hours
   * they fall in (connection-seconds of a long connection land in each hour).
   */
  addSpan(key: string, fromMs: number, toMs: number): void {
    for (let t = fromMs; t < toMs; ) {
      const end = Math.min(toMs, hourOf(t) + HOUR_MS);
      this.add(key, (end - t) / 1000, t);
      t = end;
    }
  }

  /** True when nothing is counted. */
  get empty(): boolean {
    for (const m of this.hours.values()) if (m.size > 0) return false;
    return true;
  }

  /** Every count as report entries (hour ascending). */
  entries(): ReportEntry[] {
    const out: ReportEntry[] = [];
    for (const [hour, m] of [...this.hours].sort((a, b) => a[0] - b[0])) {
      for (const [key, v] of m) if (v !== 0) out.push([hour, key, v]);
    }
    return out;
  }

  /** Adds entries (e.g. restored from storage). */
  addEntries(entries: readonly ReportEntry[]): void {
    for (const [hour, key, v] of entries) this.add(key, v, hour);
  }

  clear(): void {
    this.hours.clear();
    this.lastHour = -1;
    this.last = null;
  }
}

/**
 * Increments that bring the aggregator from the `reported` levels to the
 * `current` ones: current − reported per series; a series reported before
 * but absent now counts as 0 (its contribution is withdrawn). Zero
 * differences are left out.
 */
export function levelDeltas(current: Readonly<Record<string, number>>, reported: Readonly<Record<string, number>>): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(current)) {
    const d = v - (reported[k] ?? 0);
    if (d !== 0) out.push([k, d]);
  }
  for (const [k, v] of Object.entries(reported)) if (!(k in current) && v !== 0) out.push([k, -v]);
  return out;
}

/** Validates a report received over RPC; returns an error text or null. */
export function checkReport(r: unknown): string | null {
  const x = r as Partial<UsageReport> | null;
  if (!x || typeof x.reporter !== "string" || x.reporter.length === 0 || x.reporter.length > 200) return "reporter must be a non-empty string";
  if (!Number.isSafeInteger(x.no) || (x.no as number) < 1) return "no must be a positive integer";
  if (x.countedUntil !== undefined && !Number.isFinite(x.countedUntil)) return "countedUntil must be a time in ms";
  if (!Array.isArray(x.entries)) return "entries must be an array";
  for (const e of x.entries) {
    if (!Array.isArray(e) || e.length !== 3 || !Number.isSafeInteger(e[0]) || typeof e[1] !== "string" || !Number.isFinite(e[2])) {
      return "each entry must be [hour ms, series, finite value]";
    }
  }
  return null;
}
