/**
 * Cost reports of the objects that count nothing per message and so have no
 * telemetry of their own for their costs to ride along with (cost.ts):
 * ConsumerGroup, TopicRegistry, AgentRegistry and TenantDirectory (issue #26
 * §3, docs/tenants.md "What a tenant costs").
 *
 * Their billable units (rows written and read, requests received) are
 * counted by {@link CostCounter} like every metered object's, and reported
 * through a {@link MemoryMeter}: after a call into the object finished
 * (an RPC, a fetch, an alarm), when the last report is at least one flush
 * interval (TELEMETRY_FLUSH_MS) old, the counts since go to the tenant's
 * UsageAggregator in one report. So an object reports at most once per
 * flush interval, only after it did something, and never writes a row or
 * sets an alarm for it: the only cost of the attribution is the report
 * itself (one aggregator request, its state row), per object and interval.
 *
 * The tenant is the one in the object's name (`<kind>/<tenant>/…`,
 * shared/names.ts): every call into such an object is on that tenant's
 * behalf — but the methods a class names as the operator's
 * (`operatorMethods`: the TenantDirectory's admin and index roles, e.g.
 * creating the tenant or issuing its tokens), whose requests and rows are
 * counted apart and dropped. Unattributed — counted, then dropped — are
 * also the costs of objects whose name is not of that kind (the tenant
 * directory's index, `tenants-index/all`), of an instance the runtime
 * started for its alarm without a name it can find (a TenantDirectory
 * running a purge step), and of a TenantDirectory whose tenant does not
 * exist or was deleted (bogus tokens name any id;
 * objects/tenants/cost-scope.ts).
 *
 * A report is worth sending only when it carries more than it costs: it is
 * one aggregator request and a row there, so it waits until the counts hold
 * at least {@link COST_REPORT_MIN_UNITS} billed requests or rows written, or
 * their oldest is {@link COST_REPORT_MAX_AGE_MS} old (issue #26 §2 (f): an
 * idle member's session renews its group lease every 3.75 min and re-checks
 * its token with the TenantDirectory every 2 min; a report after each call
 * doubled what those calls cost).
 *
 * Bound: the counts since the last report stay in memory until the object's
 * next call after the interval (and after they are worth a report); an
 * object evicted before it loses them — at most one interval of its
 * traffic, or fewer than COST_REPORT_MIN_UNITS requests and as many rows of
 * an object called now and then — like every in-memory count
 * (docs/operations.md "Exactness").
 */
import type { Env } from "../env";
import { nameParts } from "../shared/names";
import { nameToRemember } from "../shared/object-name";
import type { CostCounter } from "./cost";
import { MemoryMeter } from "./memory-meter";

/** A report is sent once the counts since the last one reach this many billed requests, or as many rows written. */
export const COST_REPORT_MIN_UNITS = 10;
/** … or once the oldest of them is this old, ms (15 min). */
export const COST_REPORT_MAX_AGE_MS = 15 * 60_000;

/** Which objects of a class report their costs, and as whom. */
export interface CostReportOptions {
  /** The object kind of the class's names (`group`, `registry`, `agents`, `tenants`): other names are not attributed. */
  kind: string;
  /**
   * Whether the counts go to `tenant` now (checked once per report; default
   * yes): the TenantDirectory's are dropped while its tenant does not exist
   * (objects/tenants/cost-scope.ts). Reads only.
   */
  attributed?(storage: DurableObjectStorage, env: Env, tenant: string): boolean;
  /**
   * Methods that are the operator's calls, not the tenant's traffic (the
   * TenantDirectory's admin and index roles): their requests, and the rows
   * their statements write and read, are counted apart and not reported.
   */
  operatorMethods?: readonly string[];
}

/** The cost reports of one object instance. */
export class CostReporter {
  private readonly meter: MemoryMeter;
  /** The tenant, once found (null: not found yet, or not attributed). */
  private tenant: string | null = null;
  /** Time the counts not reported yet began, unix ms (construction, then each report). */
  private since = Date.now();

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly counter: CostCounter,
    /** Counts of the operator's calls (`operatorMethods`): dropped at each report. */
    readonly operator: CostCounter,
    private readonly opts: CostReportOptions,
  ) {
    this.meter = new MemoryMeter(undefined, opts.kind);
  }

  /**
   * A call into the object finished: when a report is due (one flush
   * interval after the last, and worth its request: COST_REPORT_MIN_UNITS,
   * COST_REPORT_MAX_AGE_MS), the counts since the last one are reported (in the background: `ctx.waitUntil`) to the
   * tenant's aggregator — or dropped, when the object has no tenant. None
   * before a call of the tenant's came in (the operator's calls alone, and
   * the instance's construction, wait for one). Cheap when none is due (a
   * clock read).
   */
  settled(): void {
    if (!this.meter.due(this.env)) return;
    if (!this.counter.requested) {
      // only the operator's calls since the last report (or the construction their first call caused): nothing to report
      this.operator.drain(() => {});
      return;
    }
    const now = Date.now();
    const u = this.counter.units();
    if (u.requests < COST_REPORT_MIN_UNITS && u.rowsWritten < COST_REPORT_MIN_UNITS && now - this.since < COST_REPORT_MAX_AGE_MS) return;
    this.since = now;
    let tenant = this.tenantOf();
    if (tenant !== null && this.opts.attributed && !this.attributedTo(tenant)) tenant = null;
    this.counter.drain(tenant === null ? () => {} : (k, n) => this.meter.add(tenant, k, n));
    this.operator.drain(() => {});
    const flushing = this.meter.flush(this.env);
    try {
      this.ctx.waitUntil(flushing);
    } catch {
      /* no waitUntil: the report goes on in the background anyway */
    }
  }

  private attributedTo(tenant: string): boolean {
    try {
      return this.opts.attributed!(this.ctx.storage, this.env, tenant);
    } catch {
      return false; // storage unavailable: not attributed this time
    }
  }

  /** The tenant in the object's name (its remembered name when started without one), or null. */
  private tenantOf(): string | null {
    if (this.tenant !== null) return this.tenant;
    let name: string | null | undefined = this.ctx.id.name;
    if (!name) {
      try {
        name = nameToRemember(this.ctx).name;
      } catch {
        name = null; // storage unavailable: not attributed this time
      }
    }
    const parts = nameParts(name);
    if (parts && parts[0] === this.opts.kind && parts[1]) this.tenant = parts[1];
    return this.tenant;
  }
}
