/**
 * Counts of the Worker itself (mq9 over HTTP: requests by verb and outcome,
 * request and reply body bytes), per tenant, kept in the isolate's memory
 * and reported to each tenant's UsageAggregator like every other reporter
 * (objects/usage/, docs/operations.md):
 *
 * - reporter id `worker:<random uuid>` per isolate, report numbers per
 *   tenant from 1; a report whose answer was lost is resent with its number,
 *   so the aggregator never counts it twice;
 * - a Worker has no storage and no timers outliving a request, so reports
 *   ride on requests: after a request, when the last report of the isolate
 *   is at least one flush interval old, one is sent in `waitUntil`; the
 *   operator endpoints (/metrics, /stats, usage) flush first.
 *
 * Bound: counts of an isolate that receives no further request stay in its
 * memory until it is evicted, when they are lost. Reports carry the time of
 * their newest count (`countedUntil`), so counts of a tenant that was
 * purged meanwhile are dropped by its aggregator instead of landing in the
 * (re-created) tenant's usage. Only requests and HTTP
 * body bytes are counted here; messages and their bytes are counted by the
 * Mailbox objects, durably.
 */
import { Buckets, type UsageReport } from "../objects/usage/report";
import { telemetryFlushMs, usageStub } from "../objects/usage/stub";
import type { Env } from "../objects/env";

interface TenantState {
  pending: Buckets;
  /** Time of the newest count in `pending`, ms (the report's countedUntil). */
  lastCount: number;
  /** Last report number built for this tenant. */
  no: number;
  /** Built, not acknowledged. */
  outbox: UsageReport | null;
}

/** The isolate's counts and reports. */
export class IsolateMeter {
  private reporter: string | null = null;
  private readonly tenants = new Map<string, TenantState>();
  private lastFlush = 0;
  private flushing: Promise<void> | null = null;

  /** Adds `n` to `series` of `tenant` in the current hour. */
  add(tenant: string, series: string, n = 1): void {
    let t = this.tenants.get(tenant);
    if (!t) this.tenants.set(tenant, (t = { pending: new Buckets(), lastCount: 0, no: 0, outbox: null }));
    const now = Date.now();
    t.pending.add(series, n, now);
    t.lastCount = now;
  }

  /**
   * Starts a report when the last one is at least one flush interval old
   * and hands it to `keepAlive` (the request's `waitUntil`, if it has one).
   * When none is due — the common case — nothing is started and
   * `keepAlive` is not called (a `waitUntil` per request was a visible part
   * of a small request's CPU).
   */
  maybeFlush(env: Env, keepAlive?: (p: Promise<unknown>) => void): void {
    if (Date.now() - this.lastFlush < telemetryFlushMs(env)) return;
    const flushing = this.flush(env);
    keepAlive?.(flushing);
  }

  /** Reports every tenant's counts now (one report per tenant with counts). Never rejects. */
  async flush(env: Env): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushing = this.run(env);
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
  }

  private async run(env: Env): Promise<void> {
    this.lastFlush = Date.now();
    this.reporter ??= `worker:${crypto.randomUUID()}`;
    const reporter = this.reporter;
    await Promise.all([...this.tenants].map(async ([tenant, t]) => {
      for (let round = 0; round < 2; round++) {
        if (!t.outbox) {
          if (t.pending.empty) return;
          t.outbox = { reporter, no: ++t.no, at: Date.now(), countedUntil: t.lastCount, entries: t.pending.entries() };
          t.pending.clear();
        }
        try {
          await usageStub(env, tenant).report(t.outbox);
          t.outbox = null;
        } catch {
          return; // resent (same number) with the next flush
        }
      }
    }));
  }
}

/** The isolate's meter (module state: one per isolate). */
export const isolateMeter = new IsolateMeter();
