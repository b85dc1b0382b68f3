/**
 * What a Partition counts for /metrics and usage metering (objects/usage/,
 * docs/operations.md): appended records and their value bytes, duplicates,
 * deliveries and their value bytes, records deleted by retention — counted
 * in memory until the next report (Meter: no row per message) — plus levels read
 * at flush time: retained bytes (keys + values, the log's totals), and the
 * ledger's cumulative acks, redeliveries, dead letters and per-group
 * retention skips and the non-idempotent PUB count, which the partition
 * stores anyway. Reports go through the partition's one alarm (schedule job
 * "telemetry").
 */
import type { Env } from "../env";
import { series } from "../usage/catalog";
import { Meter } from "../usage/meter";
import { telemetryFlushMs } from "../usage/config";
import { usageStub } from "../usage/stub";
import type { AlarmScheduler } from "../shared/scheduler";
import type { LogStore } from "./log-store";
import type { GroupCursorInfo } from "./rpc";

const PUBLISHED = series("mortarmq_messages_published_total");
const PUBLISHED_BYTES = series("mortarmq_published_bytes_total");
const DEDUPLICATED = series("mortarmq_publishes_deduplicated_total");
const DELIVERED = series("mortarmq_messages_delivered_total");
const DELIVERED_BYTES = series("mortarmq_delivered_bytes_total");
const ACKED = series("mortarmq_messages_acked_total");
const REDELIVERED = series("mortarmq_messages_redelivered_total");
const DEAD_LETTERED = series("mortarmq_messages_dead_lettered_total");
const NON_IDEMPOTENT = series("mortarmq_non_idempotent_publishes_total");
const STORED = series("mortarmq_stored_bytes", { system: "mortar" });
const RETENTION_DELETED = series("mortarmq_messages_retention_deleted_total");
/** Per (topic, group): records retention deleted before the group settled them (a level: the ledger stores it). */
const RETENTION_SKIPPED = "mortarmq_messages_retention_skipped_total";

/** What the telemetry needs from its Partition. */
export interface PartitionTelemetryHost {
  storage: DurableObjectStorage;
  env: Env;
  /** This object's id (hex): the reporter id. */
  reporter: string;
  schedule: AlarmScheduler;
  tenant(): string;
  log: LogStore;
  groups(): GroupCursorInfo[];
  nonIdempotent(): number;
  /** The topic's name ("" while the registry has not told it), for per-group labels. */
  topic(): string;
}

export class PartitionTelemetry {
  private readonly meter: Meter;

  constructor(private readonly host: PartitionTelemetryHost) {
    this.meter = new Meter(host.storage, {
      reporter: host.reporter,
      flushMs: telemetryFlushMs(host.env),
      send: (r) => usageStub(host.env, host.tenant()).report(r),
      levels: () => this.levels(),
      schedule: (at) => {
        if (host.schedule.get("telemetry") === null) void host.schedule.set("telemetry", at);
      },
    });
    this.meter.resume();
  }

  /**
   * An append of `count` records (`valueBytes` of values) and `duplicates`
   * duplicate PUBs, and `retentionDeleted` records retention deleted right
   * after it. Call right after the append's transaction succeeded (a
   * failed append is not counted).
   */
  published(count: number, valueBytes: number, duplicates: number, retentionDeleted = 0): void {
    const now = Date.now();
    this.meter.add(PUBLISHED, count, now);
    this.meter.add(PUBLISHED_BYTES, valueBytes, now);
    this.meter.add(DEDUPLICATED, duplicates, now);
    if (retentionDeleted > 0) this.meter.add(RETENTION_DELETED, retentionDeleted, now);
  }

  /** `count` deliveries of `bytes` value bytes; call once the commit that records them succeeded. */
  delivered(count: number, bytes: number): void {
    const now = Date.now();
    this.meter.add(DELIVERED, count, now);
    this.meter.add(DELIVERED_BYTES, bytes, now);
  }

  /** Records that are not publishes (dead letters from the source) were stored: the retained level changed. */
  stored(): void {
    this.meter.touch();
  }

  /** Retention deleted `records` records; call once that commit succeeded. */
  retentionDeleted(records: number): void {
    this.meter.add(RETENTION_DELETED, records, Date.now());
  }

  /** Levels changed (settlements, dead letters): report within the flush interval. */
  touch(): void {
    this.meter.touch();
  }

  /** A purge step deleted records. */
  purged(): void {
    this.meter.touch();
  }

  /** The partition's storage is being deleted by a tenant purge: nothing more is reported (Meter.abandon). */
  async abandon(): Promise<void> {
    await this.meter.abandon();
  }

  /** Retained bytes: keys + values of the stored records. */
  storedBytes(): number {
    return this.host.log.payloadBytes();
  }

  /** The alarm's "telemetry" job: report to the tenant's aggregator (a failure re-schedules it). */
  async flush(): Promise<void> {
    this.host.schedule.clear("telemetry");
    await this.meter.flush();
  }

  private levels(): Record<string, number> {
    let acked = 0, redelivered = 0, dead = 0;
    const out: Record<string, number> = {};
    for (const g of this.host.groups()) {
      acked += g.acked;
      redelivered += g.redelivered;
      dead += g.deadLettered;
      if (g.retentionSkipped > 0) out[series(RETENTION_SKIPPED, { topic: this.host.topic(), group: g.group })] = g.retentionSkipped;
    }
    out[STORED] = this.storedBytes();
    out[ACKED] = acked;
    out[REDELIVERED] = redelivered;
    out[DEAD_LETTERED] = dead;
    out[NON_IDEMPOTENT] = this.host.nonIdempotent();
    return out;
  }
}
