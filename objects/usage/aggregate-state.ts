/**
 * What a UsageAggregator holds in memory and stores as ONE row per report
 * (issue #26 (g): ≤ 1 row written per busy reporter per minute), pure:
 * every series' cumulative value, the reporters heard from lately with
 * their last report number, the running stored bytes, the usage of the
 * current and the previous hour, and the recent intervals of the console's
 * live charts. Older hours and reporters silent for a while move to their
 * own tables (store.ts), once each.
 */
import { SUMMED_USAGE_FIELDS, type UsageField } from "./catalog";
import { HOUR_MS, hourOf } from "./report";
import type { OverviewBucket } from "../../wire/admin/console";

/** Width of one recent interval, ms. */
export const RECENT_BUCKET_MS = 10_000;
/** How long recent intervals are kept, ms (1 hour). */
export const RECENT_KEEP_MS = 3_600_000;
/** A reporter silent this long leaves the state row for the `reporters` table, ms (1 hour). */
export const REPORTER_HOT_MS = 3_600_000;

/** The summed usage fields (storage is tracked apart). */
export type SummedField = (typeof SUMMED_USAGE_FIELDS)[number];

/** Usage of one tenant-hour as stored: the summed fields, the highest stored bytes, the stored bytes at its last report. */
export type HourRow = Partial<Record<SummedField, number>> & { storage_max?: number; storage_end?: number };

/** Counts of a recent interval (by report arrival). */
export const RECENT_COUNTS = ["messages_in", "messages_out", "bytes_in", "bytes_out", "requests", "errors"] as const;
export type RecentCount = (typeof RECENT_COUNTS)[number];

/** One recent interval: its start (ms), counts added, and the levels after its last report. */
export interface RecentRow {
  t: number;
  c: Partial<Record<RecentCount, number>>;
  conn_mortar: number;
  conn_nats: number;
  storage: number;
}

/** The aggregator's state row. */
export interface AggState {
  /** Series key → cumulative value (counters) or current value (gauges). */
  series: Record<string, number>;
  /** Reporter id → [last report number applied, last heard ms]; the quiet ones are in the `reporters` table. */
  reporters: Record<string, [number, number]>;
  /** Stored bytes now (MortarMQ + mq9). */
  storage: number;
  /** Hour start (ms, as a string key) → usage, for the hours not yet moved to the `usage` table. */
  hours: Record<string, HourRow>;
  /** Recent intervals, oldest first. */
  recent: RecentRow[];
}

/** A state with nothing in it. */
export function emptyState(): AggState {
  return { series: {}, reporters: {}, storage: 0, hours: {}, recent: [] };
}

/** The first hour kept in the state row at `now`: the previous one (a late report still lands in it without a table write). */
export function firstHotHour(now: number): number {
  return hourOf(now) - HOUR_MS;
}

/** Adds `row` into `into` (sums; the larger storage high-water mark; `row`'s end level when it has one). */
export function addHour(into: HourRow, row: HourRow): void {
  for (const f of SUMMED_USAGE_FIELDS) if (row[f]) into[f] = (into[f] ?? 0) + row[f]!;
  if (row.storage_max !== undefined) into.storage_max = Math.max(into.storage_max ?? 0, row.storage_max);
  if (row.storage_end !== undefined) into.storage_end = row.storage_end;
}

/** Adds a report's counts to the interval holding `now` (appended when new) and records the levels after it; drops intervals older than RECENT_KEEP_MS. */
export function addRecent(s: AggState, now: number, counts: Partial<Record<RecentCount, number>>, levels: Omit<RecentRow, "t" | "c">): void {
  const t = now - (now % RECENT_BUCKET_MS);
  let last = s.recent[s.recent.length - 1];
  if (!last || last.t !== t) s.recent.push((last = { t, c: {}, ...levels }));
  for (const [k, v] of Object.entries(counts) as [RecentCount, number][]) last.c[k] = (last.c[k] ?? 0) + v;
  Object.assign(last, levels);
  const keepFrom = t - RECENT_KEEP_MS;
  let drop = 0;
  while (drop < s.recent.length && s.recent[drop]!.t < keepFrom) drop++;
  if (drop > 0) s.recent.splice(0, drop);
}

/**
 * The intervals from the one holding `fromMs` to the one holding `nowMs`,
 * oldest first, one per RECENT_BUCKET_MS: zeros where no report arrived,
 * levels carried from the interval before (else the first report's own,
 * else `current`).
 */
export function recentBuckets(s: AggState, fromMs: number, nowMs: number, current: { m: number; n: number; s: number }): OverviewBucket[] {
  const first = fromMs - (fromMs % RECENT_BUCKET_MS);
  const rows = new Map<number, RecentRow>();
  let before: RecentRow | undefined;
  for (const r of s.recent) {
    if (r.t < first) before = r;
    else if (r.t <= nowMs) rows.set(r.t, r);
  }
  const start = before ?? rows.values().next().value;
  let levels = start ? { m: start.conn_mortar, n: start.conn_nats, s: start.storage } : current;
  const out: OverviewBucket[] = [];
  for (let t = first; t <= nowMs; t += RECENT_BUCKET_MS) {
    const r = rows.get(t);
    if (r) levels = { m: r.conn_mortar, n: r.conn_nats, s: r.storage };
    out.push({
      t,
      messages_in: r?.c.messages_in ?? 0, messages_out: r?.c.messages_out ?? 0,
      bytes_in: r?.c.bytes_in ?? 0, bytes_out: r?.c.bytes_out ?? 0,
      requests: r?.c.requests ?? 0, errors: r?.c.errors ?? 0,
      connections_mortar: Math.max(0, levels.m), connections_nats: Math.max(0, levels.n), storage_bytes: Math.max(0, levels.s),
    });
  }
  return out;
}

/** Unused-field guard: a usage field the hour rows sum. */
export function isSummed(f: UsageField | null): f is SummedField {
  return f !== null && f !== "storage_bytes";
}
