/**
 * UsageAggregator Durable Object: the per-tenant end of the counting
 * pipeline (`usage/<tenant>`, see usageStub). Every counting object reports
 * its increments here in numbered reports (objects/usage/meter.ts); this
 * object applies each report exactly once and keeps the cumulative series
 * for `/metrics`, the hourly usage for `GET /admin/tenants/:id/usage`, and
 * gauge values `/stats` needs (mailboxes). docs/operations.md.
 *
 * The instance `usage-index/all` (usageIndexStub) has a second role: the
 * list of tenants that ever reported (a Worker cannot enumerate Durable
 * Objects), and the storage probe of `/healthz`.
 *
 * Applying a report writes one row (store.ts; issue #26 (g)), and the
 * object's own rows and requests (cost.ts) are added to the tenant's with it.
 *
 * One alarm: daily pruning of reporters silent for 7 days before the latest
 * report (their numbers are only needed while a retry could still arrive)
 * and of usage older than 400 days.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { AggregateStore, RECENT_KEEP_MS, type RecentBucket } from "./store";
import type { HourUsage, ReportAck } from "./rpc";
import { checkReport, hourOf, type ReportEntry, type UsageReport } from "./report";
import { costCounterOf } from "./cost";
import { tenantOfName, usageIndexStub } from "./stub";
import { rememberedName } from "../shared/object-name";
import { AlarmScheduler } from "../shared/scheduler";

/** A reporter silent this long is forgotten, ms (7 days). */
export const REPORTER_TTL_MS = 7 * 24 * 3_600_000;
/** Usage hours kept, ms (400 days). */
export const USAGE_TTL_MS = 400 * 24 * 3_600_000;
/** Pruning interval, ms (1 day). */
const PRUNE_EVERY_MS = 24 * 3_600_000;

export class UsageAggregator extends DurableObject<Env> {
  private store: AggregateStore;
  /** The pruning alarm is known to be armed (checked once per instance). */
  private alarmArmed = false;
  /** When the next prune is due (ms); null = not known in memory (a stored alarm still prunes: `everyAlarm`). */
  private pruneAt: number | null = null;
  /** The one alarm: the daily prune. */
  private readonly scheduler: AlarmScheduler;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.scheduler = new AlarmScheduler(ctx.storage, { owner: "UsageAggregator" }).part("prune", {
      due: () => this.pruneAt,
      everyAlarm: true,
      run: (now) => {
        this.store.prune(now, REPORTER_TTL_MS, now - USAGE_TTL_MS);
        this.pruneAt = now + PRUNE_EVERY_MS;
      },
    });
    this.store = new AggregateStore(ctx.storage);
  }

  /**
   * Applies one report exactly once (by reporter id and report number) and
   * answers after the commit. A malformed report is refused with `error`
   * (and not retried by the reporter: it is a bug, logged here).
   */
  async report(r: UsageReport): Promise<ReportAck> {
    const bad = checkReport(r);
    if (bad) {
      console.error(`UsageAggregator: malformed report: ${bad}`);
      return { applied: false, error: bad };
    }
    // After a tenant purge, counts made before it are dropped (a reporter that still held them).
    const acceptsFrom = this.store.meta("accepts_from");
    if (acceptsFrom > 0 && (r.countedUntil ?? r.at) < acceptsFrom) return { applied: false };
    const now = Date.now();
    // This object's own cost (earlier reports' writes, these requests) is the tenant's too: it rides along with each report.
    const own: ReportEntry[] = [];
    costCounterOf(this.ctx.storage)?.drain((k, n) => own.push([hourOf(now), k, n]));
    const applied = this.store.apply(r, now, own);
    if (!this.alarmArmed) {
      if ((await this.scheduler.armed()) === null) {
        this.pruneAt = now + PRUNE_EVERY_MS;
        await this.scheduler.rearm();
      }
      this.alarmArmed = true;
    }
    if (this.store.meta("registered") !== 1) {
      const tenant = tenantOfName(rememberedName(this.ctx) ?? undefined);
      if (tenant !== null) {
        try {
          await usageIndexStub(this.env).addTenant(tenant);
          this.store.setMeta("registered", 1);
        } catch {
          /* registered with a later report */
        }
      }
    }
    return { applied };
  }

  /** Every series of this tenant with its cumulative value (counters) or current value (gauges). */
  metrics(): [string, number][] {
    return this.store.allSeries();
  }

  /** The value of one series key (0 when never reported), e.g. `mortarmq_mq9_mailboxes`. */
  seriesValue(key: string): number {
    return this.store.seriesValue(key);
  }

  /** Usage per hour for [fromHour, toHour) (hour starts, ms). */
  usage(fromHour: number, toHour: number): HourUsage[] {
    return this.store.usage(fromHour, toHour);
  }

  /**
   * The recent intervals (RECENT_BUCKET_MS each) of the last `windowMs`
   * (at most RECENT_KEEP_MS) up to now: counts by report arrival, levels at
   * each interval's end (the console's live charts, docs/console.md).
   */
  recent(windowMs: number): RecentBucket[] {
    const now = Date.now();
    return this.store.recent(now - Math.max(0, Math.min(RECENT_KEEP_MS, windowMs)), now);
  }

  /** Index role: records a tenant that has usage. Idempotent. */
  addTenant(tenant: string): void {
    this.store.addTenant(tenant, Date.now());
  }

  /**
   * Tenant purge: deletes every series, usage hour and reporter record of
   * the tenant with all of the object's storage and its alarm, keeping one
   * row, `accepts_from` = now: a report whose counts are older (a reporter
   * that still held counts of the purged tenant — a Worker isolate, a
   * session's retried last report) is dropped; later ones start the usage
   * afresh. Idempotent (a repeated purge moves `accepts_from` on). Its
   * objects are purged first and abandon what they had not reported
   * (objects/usage/meter.ts).
   */
  async purge(): Promise<void> {
    await this.scheduler.stop();
    this.pruneAt = null;
    await this.ctx.storage.deleteAll();
    this.store = new AggregateStore(this.ctx.storage);
    this.store.setMeta("accepts_from", Date.now());
    this.alarmArmed = false;
  }

  /** Index role: forgets a purged tenant. Idempotent. */
  removeTenant(tenant: string): void {
    this.store.removeTenant(tenant);
  }

  /** Index role: the tenants that ever reported usage, sorted. */
  tenants(): string[] {
    return this.store.tenants();
  }

  /** Storage probe for /healthz: a SQLite read; returns the number of known tenants. */
  probe(): number {
    return this.store.tenants().length;
  }

  /** The daily prune of reporters and old usage hours (shared/scheduler.ts). */
  override async alarm(): Promise<void> {
    await this.scheduler.alarm();
  }
}
