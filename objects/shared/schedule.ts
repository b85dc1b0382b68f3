/**
 * One alarm per object, driven by a schedule table (DESIGN.md §3).
 *
 * Each row is a named job with a due time (ms since the epoch). The object's
 * single storage alarm is armed for the earliest row; `alarm()` takes the due
 * jobs, runs them, and calls `rearm()`. Running a job twice must be harmless
 * (alarms can be retried), so jobs are idempotent by construction.
 */

/** Persistent schedule table for one Durable Object. */
export class Schedule {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec("CREATE TABLE IF NOT EXISTS schedule(job TEXT PRIMARY KEY, due INTEGER NOT NULL)");
  }

  /** Sets (or moves) `job` to run at `due` ms and re-arms the alarm. */
  async set(job: string, due: number): Promise<void> {
    this.put(job, due);
    await this.rearm();
  }

  /** Sets (or moves) `job` without re-arming (inside alarm(), which re-arms at the end). */
  put(job: string, due: number): void {
    this.storage.sql.exec("INSERT OR REPLACE INTO schedule(job, due) VALUES (?, ?)", job, due);
  }

  /** Removes `job` (no-op if absent); the alarm is re-armed by the next `rearm()`. */
  clear(job: string): void {
    this.storage.sql.exec("DELETE FROM schedule WHERE job = ?", job);
  }

  /** Jobs due at `now` (ms), earliest first. They stay scheduled until cleared or moved. */
  due(now: number): string[] {
    return this.storage.sql
      .exec<{ job: string }>("SELECT job FROM schedule WHERE due <= ? ORDER BY due", now)
      .toArray()
      .map((r) => r.job);
  }

  /** When `job` is due (ms), or null when it is not scheduled. */
  get(job: string): number | null {
    for (const r of this.storage.sql.exec<{ due: number }>("SELECT due FROM schedule WHERE job = ?", job)) return r.due;
    return null;
  }

  /** Earliest due time, or null when nothing is scheduled. */
  earliest(): number | null {
    return this.storage.sql.exec<{ d: number | null }>("SELECT min(due) AS d FROM schedule").one().d;
  }

  /** Arms the storage alarm for the earliest job (or deletes it when none). */
  async rearm(): Promise<void> {
    const next = this.earliest();
    const armed = await this.storage.getAlarm();
    if (next === null) {
      if (armed !== null) await this.storage.deleteAlarm();
    } else if (armed !== next) {
      await this.storage.setAlarm(next);
    }
  }
}
