/**
 * The reporter side of the counting pipeline: one Meter per counting
 * Durable Object (Partition, Mailbox, MortarSession, NatsSession). See
 * docs/operations.md "How counters are gathered".
 *
 * - Counting is in memory: `add()` bumps a per-hour bucket, nothing else;
 *   no storage write per message or per commit (issue #26 (g)). A crash
 *   loses the counts made since the last report was built (at most one
 *   flush interval of them), never more: docs/operations.md "Exactness".
 * - Levels (gauges like open connections or stored bytes, and cumulative
 *   counters the object already stores, like ledger acks) are read only at
 *   flush time; the meter reports the difference to what it last reported.
 * - The first count (or `touch()`) after a flush asks the object, through
 *   `schedule`, to flush at now + flushMs: through its one alarm (Partition,
 *   Mailbox) or a timer (sessions). So each object reports at most once per
 *   flush interval, and only when something changed.
 * - `flush()` moves the counts and level changes into a numbered report (the
 *   outbox), stores it with the new report number and levels as ONE row,
 *   and sends it to the tenant's UsageAggregator. A report whose answer was
 *   lost is resent with the same number; the aggregator ignores numbers it
 *   has already applied: nothing is counted twice. The stored report is not
 *   deleted once acknowledged (that would be a second row per report): a
 *   restarted object resends it with its next report, as a duplicate.
 *
 * - What the object costs on Cloudflare's bill (rows written and read,
 *   requests received: cost.ts, when its class is wrapped) rides along with
 *   every report built, and never asks for one.
 *
 * Storage: table `telemetry(k, v)`, one row, all SQL in meter-store.ts.
 */
import { costCounterOf, type CostCounter } from "./cost";
import { MeterStore } from "./meter-store";
import { Buckets, hourOf, levelDeltas, type UsageReport } from "./report";

/**
 * How long (ms) after its last count a meter stores the counts it holds:
 * under the 10 s after which the runtime hibernates an idle object (and
 * drops its memory), so counts survive an object that goes quiet before its
 * report is due. One row written per quiet spell, not per message.
 */
export const QUIET_SAVE_MS = 2_000;

/** What a Meter needs from its object. */
export interface MeterOptions {
  /** Unique id of the reporting object (its Durable Object id). */
  reporter: string;
  /** Sends a report to the tenant's UsageAggregator (`UsageAggregator.report`); rejects when the call failed. */
  send(report: UsageReport): Promise<unknown>;
  /** Current levels by series (gauges and cumulative counters the object stores); read at flush time. */
  levels?(): Record<string, number>;
  /**
   * Levels that live only in memory (held long-polls, open connections):
   * if a restarted object finds one of them reported non-zero, it flushes
   * soon to correct it.
   */
  memoryLevels?: readonly string[];
  /** Arms the object's flush (alarm job or timer) for `at` ms since the epoch. */
  schedule(at: number): void;
  /** Flush interval, ms. */
  flushMs: number;
  /**
   * Moves counts the object keeps itself (a session's frame counters) into
   * the meter with `add`; called before the meter stores its counts when
   * the object went quiet. Given, `touch()` counts as a count for that.
   */
  collect?(): void;
}

interface MeterState {
  /** Number of the last report built. */
  no: number;
  /** Levels as last reported (only non-zero ones). */
  reported: Record<string, number>;
  /** Small named numbers the object keeps with the report (e.g. the connection-seconds watermark). */
  marks: Record<string, number>;
  /** A string the object keeps with the report (sessions: their tenant, to report after losing their connection). */
  tag?: string | null;
  /**
   * When the report asked for is due, unix ms (set while one is asked for):
   * stored with the counts by a quiet save, so an object rebuilt before its
   * report asks for it at that time again, not an interval later — one
   * rebuilt by every message (an idle member's HEARTBEATs, a SEND every
   * 15 s) would otherwise push its report later each time and never send it.
   */
  due?: number;
}

export class Meter {
  private readonly buckets = new Buckets();
  private state: MeterState = { no: 0, reported: {}, marks: {} };
  private outbox: UsageReport | null = null;
  private scheduled = false;
  private flushing: Promise<boolean> | null = null;
  private readonly store: MeterStore<MeterState>;
  /** The object's billable units (cost.ts), drained into each report; undefined for an unwrapped class. */
  private readonly cost: CostCounter | undefined;
  private discarded = false;
  /** A final flush was asked for: levels are withdrawn from now on, whatever flush runs. */
  private ended = false;
  /** Counts not stored yet (neither in a report nor by a quiet save). */
  private unsaved = false;
  /** Last count, ms since the epoch (the quiet timer measures from it). */
  private lastCountAt = 0;
  /** The quiet timer: stores the counts QUIET_SAVE_MS after the last one (saveQuiet). */
  private quietTimer: ReturnType<typeof setTimeout> | null = null;
  private collecting = false;

  constructor(storage: DurableObjectStorage, private readonly opts: MeterOptions) {
    this.store = new MeterStore<MeterState>(storage);
    this.cost = costCounterOf(storage);
    const stored = this.store.load();
    if (stored.pending) this.buckets.addEntries(stored.pending);
    if (stored.state) this.state = stored.state;
    this.outbox = stored.outbox;
  }

  /**
   * Asks for a flush when something is left unreported from before a
   * restart: counts stored (a quiet save, an earlier version), or in-memory
   * levels reported non-zero — at the time the report was due before the
   * restart when that is known (`due`), else an interval from now. The stored last report (most likely acknowledged
   * already) does not ask for one: it is resent before the object's next
   * report, so an idle object woken by a request costs no aggregator call.
   * Call once the object is ready.
   */
  resume(): void {
    const stale = (this.opts.memoryLevels ?? []).some((k) => (this.state.reported[k] ?? 0) !== 0);
    if (this.scheduled || this.discarded || (this.buckets.empty && !stale)) return;
    const later = Date.now() + this.opts.flushMs;
    this.arm(this.state.due !== undefined ? Math.min(this.state.due, later) : later);
  }

  /** The level of `series` as last reported (stored with the report; 0 when never reported). */
  reportedLevel(series: string): number {
    return this.state.reported[series] ?? 0;
  }

  /** Adds `n` to `series` in the current hour (memory only, until the next report). */
  add(series: string, n: number, now = Date.now()): void {
    if (n === 0 || this.discarded) return;
    this.buckets.add(series, n, now);
    this.counted();
    if (!this.scheduled) this.arm(now + this.opts.flushMs);
  }

  /** Adds the seconds of [fromMs, toMs) to `series`, split per hour. */
  addSpan(series: string, fromMs: number, toMs: number): void {
    if (toMs <= fromMs || this.discarded) return;
    this.buckets.addSpan(series, fromMs, toMs);
    this.counted();
    if (!this.scheduled) this.arm(Date.now() + this.opts.flushMs);
  }

  /** A level may have changed (or, with `collect`, the object counted something itself): flush within the interval. */
  touch(): void {
    if (this.discarded) return;
    if (this.opts.collect) this.counted();
    if (!this.scheduled) this.arm(Date.now() + this.opts.flushMs);
  }

  /**
   * Something was counted: unless a report comes sooner, the counts are
   * stored QUIET_SAVE_MS after the last one (one timer per quiet spell, moved
   * by nothing: it looks at `lastCountAt` when it fires). A report interval
   * that short needs no timer: the report itself is due first.
   */
  private counted(): void {
    this.unsaved = true;
    this.lastCountAt = Date.now();
    if (this.quietTimer || this.collecting || this.opts.flushMs <= QUIET_SAVE_MS) return;
    this.quietTimer = setTimeout(() => this.quiet(), QUIET_SAVE_MS);
  }

  private quiet(): void {
    this.quietTimer = null;
    const idle = Date.now() - this.lastCountAt;
    if (idle < QUIET_SAVE_MS) {
      this.quietTimer = setTimeout(() => this.quiet(), QUIET_SAVE_MS - idle);
      return;
    }
    this.saveQuiet();
  }

  /**
   * Stores the counts held in memory (and the object's own, through
   * `collect`) with the meter's row, without reporting: the object may now
   * hibernate and lose its memory; the report already asked for sends them
   * (the constructor reads them back). One row written.
   */
  saveQuiet(): void {
    if (this.discarded || !this.unsaved) return;
    this.collecting = true;
    try {
      this.opts.collect?.();
    } finally {
      this.collecting = false;
    }
    const now = Date.now();
    this.cost?.drain((k, n) => this.buckets.add(k, n, now));
    this.unsaved = false;
    if (this.buckets.empty) return;
    this.store.savePending(this.buckets.entries(), this.state, this.outbox);
  }

  private stopQuiet(): void {
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = null;
  }

  /**
   * A level changed that the pipeline should see at once (a mailbox created
   * or gone: the mailbox quota reads it): flush at the next opportunity,
   * pulling in a flush already scheduled later. The object is then idle
   * and can be evicted, instead of staying in memory one interval longer
   * for a flush it would make anyway.
   */
  touchNow(): void {
    if (!this.discarded) this.arm(Date.now());
  }

  /**
   * Builds a report now, in the caller's synchronous turn — its rows commit
   * with the caller's writes (a mailbox's CREATE) — and sends it at once
   * (after that commit: the output gate holds the call), instead of asking
   * for a flush through the object's alarm: no alarm write, no commit of its
   * own (#14 item 3). Resolves true when the aggregator answered, false
   * when the send failed (then it is retried like any flush). Null when
   * nothing was sent now: a flush in flight or a report unacknowledged (then
   * a flush is asked for at once, as {@link touchNow}), or nothing to report.
   */
  reportNow(): Promise<boolean> | null {
    if (this.discarded) return null;
    if (this.flushing || this.outbox) {
      this.touchNow();
      return null;
    }
    if (!this.build(false)) return null;
    const sending = this.send();
    this.flushing = sending;
    void sending.finally(() => {
      if (this.flushing === sending) this.flushing = null;
    });
    return sending;
  }

  /**
   * Drops the meter's storage after a successful final flush (the object is
   * never used again, e.g. a closed connection). Later counts are ignored.
   */
  discard(): void {
    if (this.outbox || !this.buckets.empty) return; // something is still unreported: keep it
    this.discarded = true;
    this.stopQuiet();
    this.store.drop();
  }

  /**
   * The object's storage was deleted by a purge (its tenant's aggregator is
   * purged after it): waits for a flush in flight, then forgets everything —
   * nothing counted before is reported, the next report is number 1, the
   * table is created again on the next write. Counts during the wait are
   * dropped. The meter is usable afterwards (the object may be used again).
   */
  async abandon(): Promise<void> {
    this.discarded = true;
    this.stopQuiet();
    while (this.flushing) await this.flushing;
    this.buckets.clear();
    this.unsaved = false;
    this.state = { no: 0, reported: {}, marks: {} };
    this.outbox = null;
    this.scheduled = false;
    this.ended = false;
    this.store.drop();
    this.discarded = false;
  }

  /** A number kept with the meter's state (0 when never set). */
  markOf(name: string): number {
    return this.state.marks[name] ?? 0;
  }

  /** Sets a mark; it is stored with the next report. */
  mark(name: string, value: number): void {
    this.state.marks[name] = value;
  }

  /** The tag stored with the reports (null when never set). */
  get tag(): string | null {
    return this.state.tag ?? null;
  }

  /** Sets the tag; it is stored with the next report. */
  set tag(value: string | null) {
    this.state.tag = value;
  }

  /** True while a report is built but not acknowledged. */
  get hasOutbox(): boolean {
    return this.outbox !== null;
  }

  /**
   * Reports everything counted and every level change to the aggregator.
   * `final`: the object is going away (connection closed, data purged):
   * every level is withdrawn (reported as back to 0). Resolves true when
   * everything was reported, false when the send failed (the report stays in
   * the outbox and a retry is scheduled). Concurrent calls share one flush.
   */
  async flush(final = false): Promise<boolean> {
    if (final) this.ended = true;
    while (this.flushing) await this.flushing;
    this.flushing = this.run(final);
    try {
      return await this.flushing;
    } finally {
      this.flushing = null;
    }
  }

  private async run(final: boolean): Promise<boolean> {
    this.scheduled = false;
    delete this.state.due;
    if (this.outbox && !(await this.send())) return false;
    if (!this.build(final)) return true;
    if (!(await this.send())) return false;
    if (!this.buckets.empty) this.touch(); // counted while the report was in flight
    return true;
  }

  /** Moves counts and level changes into a new outbox report; false when there is nothing to report. */
  private build(final: boolean): boolean {
    const now = Date.now();
    const levels = final || this.ended ? {} : (this.opts.levels?.() ?? {});
    const deltas = levelDeltas(levels, this.state.reported);
    if (this.buckets.empty && deltas.length === 0) return false;
    this.cost?.drain((k, n) => this.buckets.add(k, n, now));
    const entries = this.buckets.entries();
    const hour = hourOf(now);
    for (const [k, d] of deltas) entries.push([hour, k, d]);
    const reported: Record<string, number> = {};
    for (const [k, v] of Object.entries(levels)) if (v !== 0) reported[k] = v;
    const state: MeterState = { no: this.state.no + 1, reported, marks: this.state.marks, tag: this.state.tag ?? null };
    const report: UsageReport = { reporter: this.opts.reporter, no: state.no, at: now, entries };
    if (!this.discarded) this.store.saveReport(report, state); // a discarded meter's object is gone: nothing more is stored
    this.state = state;
    this.outbox = report;
    this.buckets.clear();
    this.unsaved = false;
    return true;
  }

  /**
   * Sends the outbox; forgets it (in memory: the stored row stays until the
   * next report replaces it) once acknowledged. On failure schedules a
   * retry and returns false.
   */
  private async send(): Promise<boolean> {
    const report = this.outbox!;
    try {
      await this.opts.send(report);
    } catch {
      this.arm(Date.now() + this.opts.flushMs);
      return false;
    }
    if (this.outbox === report) this.outbox = null;
    return true;
  }

  private arm(at: number): void {
    this.scheduled = true;
    this.state.due = at;
    this.opts.schedule(at);
  }
}
