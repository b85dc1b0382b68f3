/**
 * The one owner of a Durable Object's storage alarm (DESIGN.md §3,
 * docs/architecture.md "The alarm scheduler"). Nothing else in `objects/`
 * calls `setAlarm`, `deleteAlarm` or `getAlarm` (test/unit/layering.test.ts).
 *
 * Each part of an object that needs to wake up later — a mailbox's
 * delayed messages and TTLs, held FETCHes, push deliveries, a telemetry
 * flush, an index update, retention, a purge — contributes when it is
 * next due and a handler:
 *
 * - a **part** (`part(name, …)`) keeps its due time itself (in memory,
 *   derived from its own tables) and answers it from `due()`;
 * - a **job** (`job(name, …)`) keeps its due time as a row of the
 *   `schedule(job TEXT PRIMARY KEY, due INTEGER)` table, the layout
 *   `shared/schedule.ts` wrote before (rows written by old objects are
 *   read as they are), moved with `set`/`put`/`clear`.
 *
 * The scheduler arms the alarm for the earliest due time (`rearm()`),
 * and `alarm()` runs what is due. A handler that throws never reaches the
 * runtime (which retries an alarm only 6 times, then drops it): the
 * failure is logged, recorded in the `alarm_failures` table (created on
 * the first failure), and that part alone is retried after an exponential
 * backoff (`retryDelayMs`); its first success forgets the record.
 *
 * A run's work is bounded: every due handler runs once per turn; a job
 * with more to do puts itself due again and runs in the next invocation.
 * Only a **live** part (push deliveries: requests in flight) keeps the
 * invocation open — the loop then waits for its next wake-up or a
 * `kick()`, at most `maxRunMs`, and keeps the stored alarm at most
 * WATCHDOG_MS ahead so that a crash mid-run resumes soon after restart.
 */

import { WATCHDOG_MS, MAX_RUN_MS, earliest, retryDelayMs } from "./alarm-times";

export { earliest, retryDelayMs } from "./alarm-times";

/** A part whose work can stay in flight after its handler returned (push attempts): it keeps the run open. */
export interface LivePart {
  /** A run begins (the alarm fired). */
  begin(): void;
  /** True while the part needs the run to stay open at `now` (ms). */
  holds(now: number): boolean;
  /** While the run is open: when the part must look again without an event (ms), null = only on a kick. */
  wake(): number | null;
  /** The run ends at `now` (ms): the part stores when it next needs the alarm. */
  end(now: number): void;
}

/** One contributor to the alarm. */
export interface AlarmPart {
  /** When the part next needs the alarm, ms since the epoch; null = not at all. */
  due(): number | null;
  /** Does the due work at `now` (ms). Throwing records a failure and retries this part with backoff. */
  run(now: number): void | Promise<void>;
  /** Run on every turn of an open run (not only when due), and keep the run open while it holds. */
  live?: LivePart;
  /**
   * Run whenever the alarm fires, due or not: for a part that cannot tell its due time after a
   * restart until it has run (a session rebuilt by its alarm).
   */
  everyAlarm?: boolean;
}

/** A job kept in the `schedule` table: its handler gets `now` (ms); the row stays until the handler clears or moves it. */
export type JobHandler = (now: number) => void | Promise<void>;

/** Options of a scheduler. */
export interface SchedulerOptions {
  /** For log lines: the object kind (e.g. "Partition"). */
  owner: string;
  /** Keep jobs in the `schedule(job, due)` table (created when missing). */
  jobs?: boolean;
  /**
   * Arm the alarm this far ahead before running any handler (ms): a crash
   * during a step leaves the alarm set, and the step runs again.
   */
  guardMs?: number;
  /** Longest run kept open by live parts, ms. */
  maxRunMs?: number;
  /** The clock (ms since the epoch); tests pass their own. */
  now?: () => number;
}

/** A recorded failure of one part: failures in a row and when it is retried (ms). */
interface Failure {
  failures: number;
  retryAt: number;
}

/** The storage alarm of one object and the parts that share it. */
export class AlarmScheduler {
  private readonly parts = new Map<string, AlarmPart>();
  private readonly handlers = new Map<string, JobHandler>();
  private readonly failed = new Map<string, Failure>();
  private failuresLoaded = false;
  /** The stored alarm as last set or read (ms; null = none; undefined = not known yet). */
  private armedAt: number | null | undefined = undefined;
  private running = false;
  private watchdogAt: number | null = null;
  private wakeUp: (() => void) | null = null;
  /** The loop's one timer and when it fires (ms; Infinity = none); only moved earlier. */
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = Infinity;
  private readonly now: () => number;

  constructor(private readonly storage: DurableObjectStorage, private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
    if (options.jobs) this.createJobTable();
  }

  /** Adds part `name` (names are unique per object; also the key of its failure record). */
  part(name: string, part: AlarmPart): this {
    this.parts.set(name, part);
    return this;
  }

  /** Adds the handler of job `name` of the `schedule` table. A due row without a handler is dropped. */
  job(name: string, handler: JobHandler): this {
    this.handlers.set(name, handler);
    return this;
  }

  // ---------------------------------------------------------------- the job table

  /** Sets (or moves) `job` to run at `due` ms and re-arms the alarm. */
  async set(job: string, due: number): Promise<void> {
    this.put(job, due);
    await this.rearm();
  }

  /** Sets (or moves) `job` without re-arming (the next `rearm()`, or the end of the run, does). */
  put(job: string, due: number): void {
    this.storage.sql.exec("INSERT OR REPLACE INTO schedule(job, due) VALUES (?, ?)", job, due);
  }

  /** Removes `job` (no-op if absent). */
  clear(job: string): void {
    this.storage.sql.exec("DELETE FROM schedule WHERE job = ?", job);
  }

  /** When `job` is due (ms), or null when it is not scheduled. */
  get(job: string): number | null {
    for (const r of this.storage.sql.exec<{ due: number }>("SELECT due FROM schedule WHERE job = ?", job)) return r.due;
    return null;
  }

  // ---------------------------------------------------------------- the alarm

  /** The stored alarm (ms), null when none is set. */
  async armed(): Promise<number | null> {
    if (this.armedAt === undefined) this.armedAt = await this.storage.getAlarm();
    return this.armedAt;
  }

  /**
   * Arms the alarm for the earliest due time of all parts and jobs (with
   * their retry delays), or deletes it when nothing is due; wakes an open
   * run so that it looks again. Callers on hot paths need not await it
   * (storage operations apply in order, under the output gate).
   */
  rearm(): Promise<void> {
    this.kick();
    if (this.armedAt === undefined) {
      return this.storage.getAlarm().then((at) => {
        if (this.armedAt === undefined) this.armedAt = at;
        return this.apply();
      });
    }
    return this.apply();
  }

  /** The earliest time the alarm is needed (ms), null = never. */
  next(): number | null {
    let t: number | null = this.running ? this.watchdogAt : null;
    for (const [name, p] of this.parts) t = earliest(t, this.effective(name, p.due(), p.everyAlarm));
    if (this.options.jobs) t = earliest(t, this.storage.sql.exec<{ d: number | null }>("SELECT min(due) AS d FROM schedule").one().d);
    return t;
  }

  /**
   * The alarm handler (the object's `alarm()` calls it and nothing else):
   * runs every due job and part, each failure caught and retried with
   * backoff; keeps the run open while a live part holds it (at most
   * `maxRunMs`); re-arms. Never throws.
   */
  async alarm(): Promise<void> {
    this.armedAt = undefined; // the alarm fired (or a caller ran it): read what is stored before changing it
    const start = this.now();
    const stopAt = start + (this.options.maxRunMs ?? MAX_RUN_MS);
    this.loadFailures();
    if (this.options.guardMs !== undefined) await this.guard(start + this.options.guardMs);
    this.running = true;
    this.watchdogAt = null;
    for (const p of this.parts.values()) this.safely(() => p.live?.begin());
    try {
      for (let first = true; ; first = false) {
        await this.turn(first);
        const now = this.now();
        if (!this.holding(now) || now >= stopAt) break;
        if (this.watchdog(now)) void this.apply();
        await this.wait(this.wakeAt());
      }
    } finally {
      this.running = false;
      this.watchdogAt = null;
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.timerAt = Infinity;
      const now = this.now();
      for (const p of this.parts.values()) this.safely(() => p.live?.end(now));
      await this.rearm().catch((e: unknown) => this.log("re-arming", e));
    }
  }

  /** Wakes an open run (an event happened: an answer, a SEND); no-op when no run waits. */
  kick(): void {
    this.wakeUp?.();
  }

  /** While a run is open: stores the alarm at most WATCHDOG_MS ahead now, when it is not already (work that must not be lost arrived). */
  keepArmed(now: number): void {
    if (this.running && this.watchdog(now)) void this.apply();
  }

  /** True while an alarm run is open (live parts step in it instead of scheduling rows). */
  get isRunning(): boolean {
    return this.running;
  }

  /**
   * Deletes the alarm and forgets every failure record and the armed time
   * (tenant purge, before `deleteAll()`). Call `reopen()` after
   * `deleteAll()` when the object goes on scheduling jobs.
   */
  async stop(): Promise<void> {
    this.failed.clear();
    this.armedAt = null;
    await this.storage.deleteAlarm();
  }

  /** After `deleteAll()`: the job table exists again (empty), failure records start afresh. */
  reopen(): void {
    this.failed.clear();
    this.failuresLoaded = true; // the table went with deleteAll
    if (this.options.jobs) this.createJobTable();
  }

  // ---------------------------------------------------------------- internals

  private createJobTable(): void {
    this.storage.sql.exec("CREATE TABLE IF NOT EXISTS schedule(job TEXT PRIMARY KEY, due INTEGER NOT NULL)");
  }

  /**
   * Due time of a part with its retry delay: a failed part is not due
   * before its retry; an `everyAlarm` part that failed is due at its retry
   * even when it cannot tell a due time.
   */
  private effective(name: string, due: number | null, everyAlarm = false): number | null {
    const f = this.failed.get(name);
    if (f === undefined) return due;
    if (due === null) return everyAlarm ? f.retryAt : null;
    return Math.max(due, f.retryAt);
  }

  /** One pass: due jobs (table order), then due parts (registration order); live parts every turn. */
  private async turn(first: boolean): Promise<void> {
    if (this.options.jobs) {
      const now = this.now();
      const due = this.storage.sql
        .exec<{ job: string }>("SELECT job FROM schedule WHERE due <= ? ORDER BY due", now)
        .toArray()
        .map((r) => r.job);
      for (const job of due) {
        const handler = this.handlers.get(job);
        if (handler === undefined) this.clear(job);
        else await this.attempt(job, () => handler(now), true);
      }
    }
    for (const [name, p] of this.parts) {
      const now = this.now();
      const f = this.failed.get(name);
      if (f !== undefined && f.retryAt > now) continue;
      const due = p.due();
      if (p.live ? true : (due !== null && due <= now) || (first && p.everyAlarm)) await this.attempt(name, () => p.run(now), false);
    }
  }

  /** Runs one handler; a failure is recorded and retried with backoff, a success forgets earlier failures. */
  private async attempt(name: string, run: () => void | Promise<void>, job: boolean): Promise<void> {
    try {
      await run();
      if (this.failed.has(name)) this.forget(name);
    } catch (e) {
      const failures = (this.failed.get(name)?.failures ?? 0) + 1;
      const retryAt = this.now() + retryDelayMs(failures);
      this.failed.set(name, { failures, retryAt });
      this.log(`${job ? "job" : "part"} ${name} failed (${failures} in a row, retried in ${retryAt - this.now()} ms)`, e);
      try {
        this.storage.transactionSync(() => {
          this.storage.sql.exec(
            "CREATE TABLE IF NOT EXISTS alarm_failures(part TEXT PRIMARY KEY, failures INTEGER NOT NULL, retry_ms INTEGER NOT NULL, error TEXT NOT NULL)",
          );
          this.storage.sql.exec(
            "INSERT OR REPLACE INTO alarm_failures(part, failures, retry_ms, error) VALUES (?, ?, ?, ?)",
            name, failures, retryAt, describe(e),
          );
          // a job still due is moved to its retry (a job the handler cleared stays cleared)
          if (job) this.storage.sql.exec("UPDATE schedule SET due = ? WHERE job = ? AND due < ?", retryAt, name, retryAt);
        });
      } catch (w) {
        this.log(`recording the failure of ${name}`, w); // kept in memory; retried all the same
      }
    }
  }

  private forget(name: string): void {
    this.failed.delete(name);
    try {
      this.storage.sql.exec("DELETE FROM alarm_failures WHERE part = ?", name);
    } catch {
      /* the table went with deleteAll */
    }
  }

  /** Reads the failure records once per object start (the table exists only after a failure). */
  private loadFailures(): void {
    if (this.failuresLoaded) return;
    this.failuresLoaded = true;
    const exists = this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alarm_failures'").toArray().length > 0;
    if (!exists) return;
    for (const r of this.storage.sql.exec<{ part: string; failures: number; retry_ms: number }>("SELECT part, failures, retry_ms FROM alarm_failures")) {
      if (!this.failed.has(r.part)) this.failed.set(r.part, { failures: r.failures, retryAt: r.retry_ms });
    }
  }

  private holding(now: number): boolean {
    for (const p of this.parts.values()) if (p.live?.holds(now)) return true;
    return false;
  }

  /** When the open run must look again: a part comes due, a live part's wake-up, the watchdog needs moving. */
  private wakeAt(): number | null {
    let t = this.watchdogAt === null ? null : this.watchdogAt - WATCHDOG_MS / 2;
    for (const [name, p] of this.parts) {
      const f = this.failed.get(name);
      if (p.live) t = earliest(t, f !== undefined ? f.retryAt : p.live.wake());
      else t = earliest(t, this.effective(name, p.due()));
    }
    return t;
  }

  /** While running, keeps the stored alarm within WATCHDOG_MS; true when it must be re-armed. */
  private watchdog(now: number): boolean {
    if (this.watchdogAt !== null && this.watchdogAt - now > WATCHDOG_MS / 2) return false;
    this.watchdogAt = now + WATCHDOG_MS;
    return true;
  }

  /**
   * Resolves at `untilMs` (null = no limit) or at the next kick, whichever is first.
   * The timer exists only inside an open alarm run while a live part holds it
   * (push attempts in flight, at most MAX_RUN_MS); `alarm()`'s `finally` clears
   * it, so an idle object never keeps a pending timer (DESIGN.md §10). This is
   * the push driver's former run-loop wait, moved here, not a new idle timer.
   */
  private wait(untilMs: number | null): Promise<void> {
    if (untilMs !== null && untilMs < this.timerAt) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timerAt = untilMs;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.timerAt = Infinity;
        this.kick();
      }, Math.max(0, untilMs - this.now()));
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      this.wakeUp = done;
    });
  }

  private async guard(at: number): Promise<void> {
    this.armedAt = at;
    await this.storage.setAlarm(at);
  }

  private apply(): Promise<void> {
    const next = this.next();
    if (next === this.armedAt) return Promise.resolve();
    this.armedAt = next;
    return next === null ? this.storage.deleteAlarm() : this.storage.setAlarm(next);
  }

  private safely(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.log("a live part's hook", e);
    }
  }

  private log(what: string, e: unknown): void {
    console.warn(`${this.options.owner} alarm: ${what}: ${describe(e)}`);
  }
}

/** A failure's text for the log and the failure record (at most 300 characters). */
function describe(e: unknown): string {
  return (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 300);
}
