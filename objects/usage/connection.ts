/**
 * Telemetry of one client connection object (MortarSession, NatsSession):
 * the object's per-connection counters, connections opened, the open
 * connection gauge and connection-seconds, reported through a Meter
 * (meter.ts) to the tenant's aggregator. docs/operations.md.
 *
 * Sessions do not write storage per frame, so counting stays in memory;
 * the first count after a report asks the host, through `schedule`, for a
 * flush one interval later — a deadline of the session's one storage alarm
 * (objects/session-base/SocketSession.ts), never a timer: nothing here
 * keeps an idle session in memory (DESIGN.md §10). So a session reports at
 * most once per flush interval while anything changes, and an idle one
 * (keep-alives are not counted) reports nothing. Counts made since the last
 * report are lost when the runtime evicts the session before its flush, as
 * in a crash (docs/operations.md "Exactness"). The last flush happens when
 * the connection closes; a session object that restarts without its
 * connection (crash, redeploy) withdraws what it reported from its next
 * alarm (`recover`).
 */
import type { Env } from "../env";
import { series } from "./catalog";
import { Meter, type MeterOptions } from "./meter";
import { telemetryFlushMs } from "./config";
import { usageStub } from "./stub";

/** Mark holding the start of the connection-seconds not yet reported (ms). */
const SINCE = "since";

/** What the telemetry needs from its session object. */
export interface ConnectionTelemetryHost {
  storage: DurableObjectStorage;
  env: Env;
  /** This object's id (hex). */
  reporter: string;
  protocol: "mortar" | "nats";
  /** Moves the connection's own counts (frames, bytes, requests) into `add`. */
  drain(add: (series: string, n: number) => void): void;
  /** Levels besides the open-connection gauge (e.g. waiting PULLs). */
  levels?(): Record<string, number>;
  /** Asks for `flush()` at `at` ms since the epoch (the session's alarm); a later call replaces it. */
  schedule(at: number): void;
}

export class ConnectionTelemetry {
  private meter: Meter | null = null;
  private readonly open: string;
  private readonly opened: string;
  /** The Worker request that upgraded the connection, billed to its tenant once it authenticated (docs/tenants.md "What a tenant costs"). */
  private readonly upgrade: string;
  private readonly seconds: string;

  constructor(private readonly host: ConnectionTelemetryHost) {
    this.open = series("mortarmq_open_connections", { protocol: host.protocol });
    this.opened = series("mortarmq_connections_opened_total", { protocol: host.protocol });
    this.upgrade = series("mortarmq_tenant_worker_requests_total");
    this.seconds = series("mortarmq_connection_seconds_total", { protocol: host.protocol });
  }

  /** True once the connection has a tenant (counts are reported). */
  get started(): boolean {
    return this.meter !== null;
  }

  /**
   * The connection is authenticated as `tenant`. `fresh`: it just
   * authenticated (counted as opened; connection-seconds start now);
   * otherwise the object was rebuilt for a live connection (after
   * hibernation) and continues from its stored state.
   */
  start(tenant: string, fresh: boolean, now = Date.now()): void {
    if (this.meter) return;
    const meter = this.newMeter(() => tenant, () => ({ [this.open]: 1, ...this.host.levels?.() }), () => {
      const now = Date.now();
      this.host.drain((k, n) => meter.add(k, n, now));
    });
    this.meter = meter;
    meter.tag = tenant;
    if (fresh) {
      meter.add(this.opened, 1, now);
      meter.add(this.upgrade, 1, now);
      meter.mark(SINCE, now);
    } else {
      meter.resume();
    }
  }

  /** Something was counted: a flush is due within the interval. Cheap enough for every message. */
  touch(): void {
    this.meter?.touch();
  }

  /**
   * Reports now. `final` (the connection closed): connection-seconds up to
   * now, and the gauges withdrawn. Resolves true when everything reached
   * the aggregator.
   */
  async flush(final = false): Promise<boolean> {
    const m = this.meter;
    if (!m) return true;
    const now = Date.now();
    this.host.drain((k, n) => m.add(k, n, now));
    const since = m.markOf(SINCE);
    if (since > 0) m.addSpan(this.seconds, since, now);
    m.mark(SINCE, final ? 0 : now);
    return m.flush(final);
  }

  /**
   * The connection is gone: final report (connection-seconds, gauges
   * withdrawn), then the meter's storage is dropped. Also covers an object
   * that lost its connection state (see recover). Resolves false when the
   * report could not be delivered (storage kept; call again later, e.g.
   * from the object's alarm).
   */
  async finish(): Promise<boolean> {
    const ok = this.meter ? await this.flush(true) : await this.recover();
    if (ok) this.meter?.discard();
    return ok;
  }

  /**
   * For a session object that restarted without its connection: reports
   * what was left and withdraws the gauges it had reported (open connection,
   * waiting long-polls). Resolves true when nothing is left to report.
   */
  async recover(): Promise<boolean> {
    if (this.meter) return this.flush(true);
    const m = this.newMeter(() => m.tag ?? "", undefined);
    if (m.tag === null) return true;
    this.meter = m;
    return m.flush(true);
  }

  private newMeter(tenant: () => string, levels: MeterOptions["levels"], collect?: () => void): Meter {
    return new Meter(this.host.storage, {
      collect,
      reporter: this.host.reporter,
      flushMs: telemetryFlushMs(this.host.env),
      send: (r) => usageStub(this.host.env, tenant()).report(r),
      levels,
      schedule: (at) => this.host.schedule(at),
    });
  }
}
