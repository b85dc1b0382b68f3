/**
 * What a TopicRegistry reports to its tenant's UsageAggregator (the
 * counting pipeline, objects/usage/meter.ts): the storage its consumer
 * groups take, GROUP_STORAGE_BYTES (config.ts) per recorded group, as part
 * of `mortarmq_stored_bytes{system="mortar"}` — so the groups count toward
 * the tenant's `storage_bytes` quota like the records of its partitions
 * (issue 28 item 3). A level, read at flush time; a group recorded or
 * forgotten asks for a flush at once (the quota reads it).
 */
import type { Env } from "../env";
import type { AlarmScheduler } from "../shared/scheduler";
import { series } from "../usage/catalog";
import { telemetryFlushMs } from "../usage/config";
import { Meter } from "../usage/meter";
import { usageStub } from "../usage/stub";
import { GROUP_STORAGE_BYTES } from "./config";

const STORED = series("mortarmq_stored_bytes", { system: "mortar" });

/** What the telemetry needs from its registry. */
export interface RegistryTelemetryHost {
  storage: DurableObjectStorage;
  env: Env;
  /** This object's id (hex): the reporter id. */
  reporter: string;
  schedule: AlarmScheduler;
  tenant(): string;
  /** Groups recorded over all of the tenant's topics. */
  groups(): number;
}

export class RegistryTelemetry {
  private readonly meter: Meter;

  constructor(private readonly host: RegistryTelemetryHost) {
    this.meter = new Meter(host.storage, {
      reporter: host.reporter,
      flushMs: telemetryFlushMs(host.env),
      send: (r) => usageStub(host.env, host.tenant()).report(r),
      levels: () => ({ [STORED]: host.groups() * GROUP_STORAGE_BYTES }),
      schedule: (at) => {
        if (host.schedule.get("telemetry") === null) void host.schedule.set("telemetry", at);
      },
    });
    this.meter.resume();
  }

  /** A group was recorded or forgotten: report at the next opportunity. */
  groupsChanged(): void {
    this.meter.touchNow();
  }

  /** The alarm's "telemetry" job: report to the tenant's aggregator (a failure re-schedules it). */
  async flush(): Promise<void> {
    this.host.schedule.clear("telemetry");
    await this.meter.flush();
  }

  /** The registry's storage is being deleted by a tenant purge: nothing reported before counts (Meter.abandon). */
  abandon(): Promise<void> {
    return this.meter.abandon();
  }
}
