/**
 * SQLite storage of a Meter (meter.ts), in the storage of the object it
 * counts for: table `telemetry(k, v)` with rows `pending` (unreported
 * counts: ReportEntry[] JSON), `state` (MeterState JSON) and `outbox` (the
 * report being sent: UsageReport JSON). The table is created on the first
 * write, so an object that never counts has none.
 */
import type { ReportEntry, UsageReport } from "./report";

/** What a Meter finds stored when its object starts. */
export interface StoredMeter<S> {
  pending: ReportEntry[] | null;
  state: S | null;
  outbox: UsageReport | null;
}

/** The `telemetry` table of one object. `S` is the meter's state shape. */
export class MeterStore<S> {
  private ready: boolean;

  constructor(private readonly storage: DurableObjectStorage) {
    this.ready = storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'telemetry'").toArray().length > 0;
  }

  /** The stored rows (all null when the table does not exist). */
  load(): StoredMeter<S> {
    const out: StoredMeter<S> = { pending: null, state: null, outbox: null };
    if (!this.ready) return out;
    for (const r of this.storage.sql.exec<{ k: string; v: string }>("SELECT k, v FROM telemetry")) {
      if (r.k === "pending") out.pending = JSON.parse(r.v) as ReportEntry[];
      else if (r.k === "state") out.state = JSON.parse(r.v) as S;
      else if (r.k === "outbox") out.outbox = JSON.parse(r.v) as UsageReport;
    }
    return out;
  }

  /** Writes the unreported counts (one row; in the caller's synchronous turn, so it commits with the caller's work). */
  savePending(entries: ReportEntry[]): void {
    this.write(() => this.storage.sql.exec("INSERT OR REPLACE INTO telemetry(k, v) VALUES ('pending', ?)", JSON.stringify(entries)));
  }

  /** Stores a newly built report and the state after it, and empties the pending counts, in one transaction. */
  saveReport(report: UsageReport, state: S): void {
    this.write(() => this.storage.transactionSync(() => {
      this.storage.sql.exec("INSERT OR REPLACE INTO telemetry(k, v) VALUES ('outbox', ?)", JSON.stringify(report));
      this.storage.sql.exec("INSERT OR REPLACE INTO telemetry(k, v) VALUES ('state', ?)", JSON.stringify(state));
      this.storage.sql.exec("DELETE FROM telemetry WHERE k = 'pending'");
    }));
  }

  /**
   * Drops the acknowledged report. The object's storage may have been
   * deleted meanwhile (a session drops all its storage once its connection
   * ended, possibly while this report was in flight): then there is
   * nothing to drop.
   */
  dropOutbox(): void {
    if (!this.ready) return;
    if (!this.exists()) {
      this.ready = false;
      return;
    }
    this.storage.sql.exec("DELETE FROM telemetry WHERE k = 'outbox'");
  }

  /** Drops the table (the object is never used again). */
  drop(): void {
    this.storage.sql.exec("DROP TABLE IF EXISTS telemetry");
    this.ready = false;
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
      this.ensure();
      fn();
    }
  }

  private exists(): boolean {
    return this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'telemetry'").toArray().length > 0;
  }
}
