/**
 * A meter whose counts live only in memory, for reporters without storage
 * of their own to spare: the Worker's isolates (worker/telemetry.ts) and the
 * cost reports of objects without per-message counts (cost-report.ts). Its
 * counts are per tenant and reach each tenant's UsageAggregator like every
 * other reporter's (docs/operations.md "How counters are gathered"):
 *
 * - reporter id `<prefix>:<random uuid>` per meter, report numbers per
 *   tenant from 1; a report whose answer was lost is resent with its number,
 *   so the aggregator never counts it twice;
 * - no storage and no timers: reports ride on the reporter's own work —
 *   after a request (or an alarm), when the meter's last report is at least
 *   one flush interval old, one is sent ({@link MemoryMeter.maybeFlush}).
 *
 * No promise crosses requests (DESIGN.md §10: the runtime cancels a
 * continuation awaited by a request other than the one that created it): a
 * flush never waits for another request's flush. A tenant whose report is
 * in flight elsewhere gets the same report (same number) sent again by the
 * request that wants it delivered now; the aggregator applies a report
 * number once, and a report is cleared only by the send that delivered it
 * while it is still the tenant's outbox.
 *
 * Bound: counts of a meter whose holder receives no further request stay in
 * memory until it is evicted, when they are lost (at most one flush interval
 * of them). Reports carry the time of their newest count (`countedUntil`),
 * so counts of a tenant that was purged meanwhile are dropped by its
 * aggregator instead of landing in the (re-created) tenant's usage.
 */
import { Buckets, type UsageReport } from "./report";
import { telemetryFlushMs } from "./config";
import { usageStub } from "./stub";
import type { Env } from "../env";

/** Delivers one report to `tenant`'s UsageAggregator; rejects when it was not acknowledged. */
export type SendReport = (env: Env, tenant: string, report: UsageReport) => Promise<unknown>;

const sendToAggregator: SendReport = (env, tenant, report) => usageStub(env, tenant).report(report);

interface TenantState {
  pending: Buckets;
  /** Time of the newest count in `pending`, ms (the report's countedUntil). */
  lastCount: number;
  /** Last report number built for this tenant. */
  no: number;
  /** Built, not acknowledged. */
  outbox: UsageReport | null;
}

/** Counts per tenant in memory, reported at most once per flush interval. */
export class MemoryMeter {
  /**
   * @param send how a report reaches its tenant's aggregator (the UsageAggregator's RPC; tests pass their own).
   * @param prefix first part of the reporter id (`worker`, `group`, …), for the aggregator's reporter list.
   */
  constructor(private readonly send: SendReport = sendToAggregator, private readonly prefix = "worker") {}

  private reporter: string | null = null;
  private readonly tenants = new Map<string, TenantState>();
  private lastFlush = 0;

  /** Adds `n` to `series` of `tenant` in the current hour. */
  add(tenant: string, series: string, n = 1): void {
    let t = this.tenants.get(tenant);
    if (!t) this.tenants.set(tenant, (t = { pending: new Buckets(), lastCount: 0, no: 0, outbox: null }));
    const now = Date.now();
    t.pending.add(series, n, now);
    t.lastCount = now;
  }

  /** True when the last report is at least one flush interval old (a flush would start now). */
  due(env: Env, now = Date.now()): boolean {
    return now - this.lastFlush >= telemetryFlushMs(env);
  }

  /**
   * Starts a report when the last one is at least one flush interval old
   * and hands it to `keepAlive` (the request's `waitUntil`, if it has one).
   * When none is due — the common case — nothing is started and
   * `keepAlive` is not called (a `waitUntil` per request was a visible part
   * of a small request's CPU).
   */
  maybeFlush(env: Env, keepAlive?: (p: Promise<unknown>) => void): void {
    if (!this.due(env)) return;
    const flushing = this.flush(env);
    keepAlive?.(flushing);
  }

  /**
   * Reports every tenant's counts now (one report per tenant with counts),
   * in this request: a report another request is sending is sent again with
   * its number rather than awaited. Never rejects.
   */
  async flush(env: Env): Promise<void> {
    this.lastFlush = Date.now();
    this.reporter ??= `${this.prefix}:${crypto.randomUUID()}`;
    const reporter = this.reporter;
    await Promise.all([...this.tenants].map(async ([tenant, t]) => {
      for (let round = 0; round < 2; round++) {
        if (!t.outbox) {
          if (t.pending.empty) return;
          t.outbox = { reporter, no: ++t.no, at: Date.now(), countedUntil: t.lastCount, entries: t.pending.entries() };
          t.pending.clear();
        }
        const report = t.outbox;
        try {
          await this.send(env, tenant, report);
          if (t.outbox === report) t.outbox = null; // not a newer report built meanwhile by another request
        } catch {
          return; // resent (same number) with the next flush
        }
      }
    }));
  }
}
