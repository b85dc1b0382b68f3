/**
 * The push driver's bookkeeping (driver.ts does the deliveries): loading
 * the subscriptions, recording each attempt's and dead-letter copy's
 * outcome (open rows, group floors, counters), and the subscriptions'
 * `schedule` rows (kind `push`) that say when each needs the alarm.
 * Outcomes are recorded in batches (the driver's group commit of answers):
 * counters are written once per subscription at the end of a batch.
 */
import { earliest } from "../../shared/alarm-times";
import { afterFailure, backoffMs, describeOutcome, nextPositions, pushFloors, pushStartCursor, type AttemptOutcome } from "./state";
import type { StatsChange } from "./store";
import type { PushHost } from "./host";
import { addStats, openOf, type Open, type PushRuns, type Run } from "./runs";
import { copyFailedError } from "./dead-letter";

/** The bookkeeping of one mailbox's subscriptions (see the file's comment). */
export class PushLedger {
  /** Subscriptions with answers recorded in the current batch: they start their next attempts at its end. */
  private readonly answeredRuns = new Set<Run>();

  constructor(private readonly host: PushHost, private readonly runs: PushRuns) {}

  /** Loads the subscriptions and their open messages from storage into `runs` (object start); schedule rows as stored. */
  load(): void {
    const h = this.host;
    this.runs.clear();
    const dues = h.pushes.dueTimes();
    const tops = h.laneTops();
    for (const { config, stats } of h.pushes.loadPushes()) {
      const run: Run = {
        cfg: config, stats, cursor: h.store.loadGroup(config.group) ?? pushStartCursor(null, 0),
        open: new Map(), due: dues.get(config.seq) ?? null, more: false, key: null, pending: null,
      };
      run.more = nextPositions(run.cursor).some((p, lane) => p <= tops[lane]!);
      this.runs.add(run);
    }
    for (const row of h.pushes.loadOpen()) this.runs.get(row.pushSeq)?.open.set(row.msgId, openOf(row));
  }

  /** Records an attempt's outcome at `now` (ms; inside a batch of answers): a 2xx settles it, anything else schedules a retry or the dead letter. */
  attempted(run: Run, o: Open, bytes: number, outcome: AttemptOutcome): void {
    const h = this.host;
    const now = Date.now();
    h.telemetry.pushAttempt(outcome.kind, bytes);
    this.answeredRuns.add(run);
    if (outcome.kind === "ok") {
      run.stats.delivered++;
      run.stats.lastSuccessMs = now;
      this.settle(run, o, { delivered: 1, successMs: now });
    } else {
      const error = describeOutcome(outcome);
      run.stats.failed++;
      run.stats.lastError = error;
      run.stats.lastFailureMs = now;
      const next = afterFailure(o.row.attempts, run.cfg.maxAttempts, outcome, now, h.backoff, h.random);
      o.row.lastError = error;
      o.row.deadLetter = next.kind === "dead_letter";
      o.row.nextMs = next.kind === "retry" ? next.atMs : now;
      h.storage.transactionSync(() => h.pushes.putOpen(o.row));
      addStats(run, { failed: 1, lastError: error, failureMs: now });
    }
  }

  /** Records how storing the dead-letter copy in mailbox `dlq` ended (`failure` null = stored): settles it, or retries after its own backoff. */
  copied(run: Run, o: Open, dlq: string, failure: string | null): void {
    const h = this.host;
    const at = Date.now();
    this.answeredRuns.add(run);
    if (failure === null) {
      run.stats.deadLettered++;
      h.telemetry.pushDeadLettered();
      this.settle(run, o, { deadLettered: 1 });
    } else {
      const error = copyFailedError(dlq, failure);
      o.copyFailures++;
      o.row.nextMs = at + backoffMs(o.copyFailures, h.backoff, h.random);
      run.stats.lastError = error;
      run.stats.lastFailureMs = at;
      h.storage.transactionSync(() => h.pushes.putOpen(o.row));
      addStats(run, { lastError: error, failureMs: at });
    }
  }

  /**
   * The message leaves the open set (acknowledged, dead-lettered or gone);
   * the group's floors follow. `change` (counters) is written at the end of
   * the batch of answers it is part of (endBatch) — non-null only there.
   */
  settle(run: Run, o: Open, change: StatsChange | null): void {
    const h = this.host;
    run.open.delete(o.row.msgId);
    run.cursor = { floors: pushFloors(run.cursor, [...run.open.values()].map((x) => x.row)), delivered: run.cursor.delivered, batch: null };
    h.storage.transactionSync(() => {
      h.pushes.deleteOpen(run.cfg.seq, o.row.msgId);
      h.store.saveGroup(run.cfg.group, run.cursor);
    });
    if (change) addStats(run, change);
  }

  /**
   * The end of a batch of answers, in its turn (before its commit): the
   * counters of each subscription are written once, the telemetry once.
   * Returns the subscriptions that had answers (they start their next
   * attempts, in the same commit).
   */
  endBatch(): Run[] {
    const h = this.host;
    const runs = [...this.answeredRuns].filter((run) => this.runs.has(run));
    this.answeredRuns.clear();
    if (runs.length === 0) return runs; // only answers of deleted subscriptions or a purged mailbox: nothing to write
    h.storage.transactionSync(() => {
      for (const run of runs) {
        if (run.pending) h.pushes.changeStats(run.cfg.seq, run.pending);
        run.pending = null;
      }
    });
    return runs;
  }

  /**
   * When `run` needs the alarm next (nothing in flight) at `now` (ms): its
   * earliest retry, or now / after the tenant's throttle (`throttledUntil`)
   * when it can take messages.
   */
  dueOf(run: Run, now: number, throttledUntil: number): number | null {
    let t: number | null = null;
    for (const o of run.open.values()) t = earliest(t, o.cancel || o.copying ? now : o.row.nextMs);
    if (run.more && run.open.size < run.cfg.concurrency) t = earliest(t, Math.max(now, throttledUntil));
    return t;
  }

  /** Writes the schedule rows that `due` changes (one transaction); true when any changed. */
  writeDues(due: (run: Run) => number | null): boolean {
    const changes: [Run, number | null][] = [];
    for (const run of this.runs.values()) {
      const d = due(run);
      if (d !== run.due) changes.push([run, d]);
    }
    if (changes.length === 0) return false;
    this.host.storage.transactionSync(() => {
      for (const [run, d] of changes) this.host.pushes.setDue(run.cfg.seq, d);
    });
    for (const [run, d] of changes) run.due = d;
    return true;
  }

  /** When the driver needs the alarm (for the scheduler): the earliest schedule row. */
  dueAt(): number | null {
    let t: number | null = null;
    for (const run of this.runs.values()) t = earliest(t, run.due);
    return t;
  }

  /** Unacknowledged messages over all subscriptions at `now` (ms; gauge). */
  backlog(now: number): number {
    let n = 0;
    for (const run of this.runs.values()) n += this.host.pushes.backlog(run.cursor.floors, now);
    return n;
  }
}
