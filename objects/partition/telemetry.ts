/**
 * What a Partition counts for /metrics and usage metering (objects/usage/,
 * docs/operations.md): appended records and their value bytes, duplicates,
 * deliveries and their value bytes — counted in memory and stored with the
 * append / delivery commit that did the work — plus levels read at flush
 * time: retained bytes (keys + values), and the ledger's cumulative acks,
 * redeliveries and dead letters and the non-idempotent PUB count, which the
 * partition stores anyway. Reports go through the partition's one alarm
 * (schedule job "telemetry").
 */
import { Op } from "../../wire/mortar/constants";
import { frameSize } from "../../wire/mortar/codec";
import type { Env } from "../env";
import { series } from "../usage/catalog";
import { Meter } from "../usage/meter";
import { telemetryFlushMs, usageStub } from "../usage/stub";
import type { Schedule } from "../shared/schedule";
import type { LogStore } from "./log-store";
import type { GroupCursorInfo } from "./rpc";

/** Encoded bytes of a PUB frame beyond its key and value (stored records are whole PUB frames). */
const PUB_OVERHEAD = frameSize({
  op: Op.PUB, topicId: 0, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new Uint8Array(0),
});

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

/** What the telemetry needs from its Partition. */
export interface PartitionTelemetryHost {
  storage: DurableObjectStorage;
  env: Env;
  /** This object's id (hex): the reporter id. */
  reporter: string;
  schedule: Schedule;
  tenant(): string;
  log: LogStore;
  groups(): GroupCursorInfo[];
  nonIdempotent(): number;
}

export class PartitionTelemetry {
  private readonly meter: Meter;
  /** Retained key + value bytes; null = compute from the log on next use. */
  private retained: number | null = null;

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
   * An append of `count` records (`valueBytes` of values, `storedBytes` of
   * keys + values) and `duplicates` duplicate PUBs. Call right after the
   * append's transaction, in the same synchronous turn: the counts are
   * written in that turn and so commit with it (and are not counted when it
   * failed).
   */
  published(count: number, valueBytes: number, storedBytes: number, duplicates: number): void {
    const now = Date.now();
    this.meter.add(PUBLISHED, count, now);
    this.meter.add(PUBLISHED_BYTES, valueBytes, now);
    this.meter.add(DEDUPLICATED, duplicates, now);
    if (this.retained !== null) this.retained += storedBytes;
    if (count > 0) this.meter.persist();
  }

  /** `count` deliveries of `bytes` value bytes; call in the same synchronous turn as the commit that records them. */
  delivered(count: number, bytes: number): void {
    const now = Date.now();
    this.meter.add(DELIVERED, count, now);
    this.meter.add(DELIVERED_BYTES, bytes, now);
    this.meter.persist();
  }

  /** Records that are not publishes (dead letters from the source) were stored: `bytes` of keys + values. */
  stored(bytes: number): void {
    if (this.retained !== null) this.retained += bytes;
    this.meter.touch();
  }

  /** Levels changed (settlements, dead letters): report within the flush interval. */
  touch(): void {
    this.meter.touch();
  }

  /** A purge step deleted records. */
  purged(): void {
    this.retained = null;
    this.meter.touch();
  }

  /** Retained bytes: keys + values of the stored records. */
  storedBytes(): number {
    if (this.retained === null) {
      const t = this.host.log.totals();
      this.retained = t.bytes - t.count * PUB_OVERHEAD;
    }
    return this.retained;
  }

  /** The alarm's "telemetry" job: report to the tenant's aggregator (a failure re-schedules it). */
  async flush(): Promise<void> {
    this.host.schedule.clear("telemetry");
    await this.meter.flush();
  }

  private levels(): Record<string, number> {
    let acked = 0, redelivered = 0, dead = 0;
    for (const g of this.host.groups()) {
      acked += g.acked;
      redelivered += g.redelivered;
      dead += g.deadLettered;
    }
    return {
      [STORED]: this.storedBytes(), [ACKED]: acked, [REDELIVERED]: redelivered, [DEAD_LETTERED]: dead,
      [NON_IDEMPOTENT]: this.host.nonIdempotent(),
    };
  }
}
