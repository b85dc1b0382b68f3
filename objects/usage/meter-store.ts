/**
 * SQLite storage of a Meter (meter.ts), in the storage of the object it
 * counts for: table `telemetry(k, v)` with ONE row, `meter`, holding the
 * last report built (`outbox`: UsageReport, kept after it was acknowledged —
 * a restart resends it and the aggregator ignores its number) and the meter's
 * state after it (MeterState). It is written once per report built, never per
 * message or per commit: counts between two reports live in memory, and
 * are stored with the row (`pending`) when the object goes quiet before its
 * report (Meter.saveQuiet: the runtime may hibernate it and drop its
 * memory; docs/operations.md "Exactness"). The table is created on the
 * first write, so an object that never reports has none.
 *
 * Objects stored by earlier versions may hold the rows `pending`, `state`
 * and `outbox` instead: they are read once and removed with the next write.
 */
import type { ReportEntry, UsageReport } from "./report";

/** What a Meter finds stored when its object starts. */
export interface StoredMeter<S> {
  /** Counts stored before a report took them (a quiet save, or an earlier version's `pending` row), else null. */
  pending: ReportEntry[] | null;
  state: S | null;
  /** The last report built (possibly already acknowledged), or null. */
  outbox: UsageReport | null;
}

/** The `telemetry` table of one object. `S` is the meter's state shape. */
export class MeterStore<S> {
  private ready: boolean;
  /** Rows of the earlier layout exist: removed with the next write. */
  private legacy = false;

  constructor(private readonly storage: DurableObjectStorage) {
    this.ready = this.exists();
  }

  /** The stored report and state (all null when the table does not exist). */
  load(): StoredMeter<S> {
    const out: StoredMeter<S> = { pending: null, state: null, outbox: null };
    if (!this.ready) return out;
    for (const r of this.storage.sql.exec<{ k: string; v: string }>("SELECT k, v FROM telemetry")) {
      if (r.k === "meter") {
        const m = JSON.parse(r.v) as { state: S; outbox: UsageReport | null; pending?: ReportEntry[] };
        out.state = m.state;
        out.outbox = m.outbox;
        if (m.pending) out.pending = (out.pending ?? []).concat(m.pending);
        continue;
      }
      this.legacy = true;
      if (r.k === "pending") out.pending = (out.pending ?? []).concat(JSON.parse(r.v) as ReportEntry[]);
      else if (r.k === "state") out.state ??= JSON.parse(r.v) as S;
      else if (r.k === "outbox") out.outbox ??= JSON.parse(r.v) as UsageReport;
    }
    return out;
  }

  /**
   * Stores a newly built report and the state after it: one row, in the
   * caller's synchronous turn (it commits with whatever else that turn wrote).
   */
  saveReport(report: UsageReport, state: S): void {
    const v = JSON.stringify({ state, outbox: report });
    this.write(() => {
      // An upsert that finds the row updates it in place: one row written (the key's index is untouched).
      this.storage.sql.exec("INSERT INTO telemetry(k, v) VALUES ('meter', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", v);
      if (this.legacy) {
        this.storage.sql.exec("DELETE FROM telemetry WHERE k <> 'meter'");
        this.legacy = false;
      }
    });
  }

  /**
   * Stores counts not reported yet (`pending`: all the meter holds) with the
   * state and the last report, in the same one row; the next saveReport
   * writes the row without them (they moved into that report).
   */
  savePending(pending: ReportEntry[], state: S, outbox: UsageReport | null): void {
    const v = JSON.stringify({ state, outbox, pending });
    this.write(() => {
      this.storage.sql.exec("INSERT INTO telemetry(k, v) VALUES ('meter', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", v);
    });
  }

  /** Drops the table (the object is never used again, or its data was purged). */
  drop(): void {
    this.storage.sql.exec("DROP TABLE IF EXISTS telemetry");
    this.ready = false;
    this.legacy = false;
  }

  /** Creates the table on first use. */
  private ensure(): void {
    if (this.ready) return;
    this.storage.sql.exec("CREATE TABLE IF NOT EXISTS telemetry(k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    this.ready = true;
  }

  /**
   * Runs a write; when the table vanished under the meter (a session drops
   * all its storage once its connection ended, possibly while a report was
   * in flight, and deleteAll drops every table), creates it again and
   * retries once. No cost on the normal path.
   */
  private write(fn: () => void): void {
    this.ensure();
    try {
      fn();
    } catch (e) {
      if (this.exists()) throw e;
      this.ready = false;
      this.legacy = false;
      this.ensure();
      fn();
    }
  }

  private exists(): boolean {
    return this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'telemetry'").toArray().length > 0;
  }
}
