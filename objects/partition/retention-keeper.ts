/**
 * Retention of one Partition (docs/protocol.md "Topic retention"): holds
 * the settings its TopicRegistry told it, refuses what a `discard = new`
 * log has no room for, moves the log start up (exactly the newest
 * `retention_messages` stay visible) and deletes the oldest segments that
 * lie wholly below it or that the byte and age limits let go — after an
 * append that took the log past a size limit (in the append's turn), and
 * from the Partition's one alarm (schedule job "retention", armed for the
 * moment the oldest segment passes `ms`, and run at once after a change of
 * settings). Decisions are pure (retention.ts); deletes are index-driven
 * range deletes (log-store.ts), O(segments deleted), never reading a value.
 *
 * Every deletion commits, in one transaction, the new log start, the
 * deleted segments, the log totals, `last_seq` (so an emptied log keeps its sequence) and the
 * read path's reaction (consumers.ts `truncate`: groups below the new log
 * start move up to it, deliveries of deleted records are dropped); the
 * owners' sessions are told about dropped in-flight deliveries afterwards.
 * Producer dedupe state (producer-store.ts) is never touched.
 */
import type { Env } from "../env";
import type { AlarmScheduler } from "../shared/scheduler";
import { resolveRetention, retentionDefaults, type Retention } from "../shared/retention-config";
import { CHUNK_BYTES, PUB_OVERHEAD, type LogStore } from "./log-store";
import { appendRoom, countStart, nextExpiry, planDeletion, type AppendRoom } from "./retention";
import type { RetentionSettingsStore } from "./retention-store";
import type { RetentionUpdate } from "./rpc";

/** Oldest segments deleted at most after one append; the alarm job continues if more must go. */
const APPEND_MAX = 64;
/** Oldest segments deleted at most per run of the alarm job. */
const JOB_MAX = 256;
/** The first read of segment rows takes this many (an append at its limit usually deletes one or two); each further read twice as many. */
const FIRST_READ = 4;
/** Retry delay after a failed deletion, ms. */
const RETRY_MS = 1_000;
/** The schedule job. */
export const RETENTION_JOB = "retention";

/** What retention needs from its Partition. */
export interface RetentionHost {
  storage: DurableObjectStorage;
  env: Env;
  log: LogStore;
  settings: RetentionSettingsStore;
  schedule: AlarmScheduler;
  lastSeq(): number;
  setMeta(k: string, v: number): void;
  /**
   * Every record below `logStart` is gone: the read path drops what it
   * holds below it (inside the deletion's transaction). Returns what to do
   * once that committed (notify sessions).
   */
  truncated(logStart: number): () => void;
}

export class RetentionKeeper {
  private current: RetentionUpdate;
  private inForce: Retention;
  /** When the "retention" job is due (mirrors the schedule row), null = not scheduled. */
  private due: number | null;
  /** A job row was written in a synchronous step; the alarm must be re-armed before the reply. */
  private rearm = false;

  constructor(private readonly host: RetentionHost) {
    this.current = host.settings.load();
    this.inForce = resolveRetention(this.current.overrides, retentionDefaults(host.env));
    this.due = host.schedule.get(RETENTION_JOB);
    // e.g. a log written before retention existed, or limits lowered by a deployment var
    if (this.due === null && (this.needsAgeJob() || this.over())) this.put(Date.now());
  }

  /** The settings in force (the topic's, resolved with the deployment defaults). */
  get settings(): Retention {
    return this.inForce;
  }

  /** The topic's name as the registry last told it ("" before it did). */
  get topic(): string {
    return this.current.topic;
  }

  /** Version of the settings held (−1 before the registry told any). */
  get version(): number {
    return this.current.version;
  }

  /** Room left for new records when the topic refuses them at its limits (discard = new), else null. */
  room(): AppendRoom | null {
    return appendRoom({ records: this.host.log.count(), bytes: this.host.log.payloadBytes() }, this.inForce);
  }

  /**
   * Applies settings from the registry (registration answer or push) when
   * they are at least as new as those held, and runs the job at once (a
   * lowered limit deletes now, a changed age re-arms). Idempotent.
   */
  async apply(u: RetentionUpdate): Promise<void> {
    if (u.version < this.current.version) return;
    this.host.storage.transactionSync(() => this.host.settings.save(u));
    this.current = u;
    this.inForce = resolveRetention(u.overrides, retentionDefaults(this.host.env));
    this.put(Date.now());
    await this.flushArm();
  }

  /**
   * Called right after an append committed, in the same turn: when the log
   * is over a size limit, deletes the oldest segments (at most APPEND_MAX;
   * the job goes on at once if more must go); arms the age job for a log
   * that was empty. A failed deletion is retried by the job (the append
   * itself stands). Returns the records deleted (for the telemetry, stored
   * in this turn).
   */
  appended(now: number): number {
    let deleted = 0;
    if (this.over()) {
      try {
        const d = this.enforce(now, APPEND_MAX);
        deleted = d.records;
        if (d.more) this.put(now);
      } catch {
        this.put(now + RETRY_MS);
      }
    }
    if (this.due === null && this.needsAgeJob()) this.put(this.nextDue() ?? now);
    return deleted;
  }

  /** Re-arms the alarm if a synchronous step scheduled the job (call before replying). */
  async flushArm(): Promise<void> {
    if (!this.rearm) return;
    this.rearm = false;
    await this.host.schedule.rearm();
  }

  /**
   * The alarm's "retention" job: deletes up to JOB_MAX of the oldest
   * segments the settings say must go, then schedules itself again — now
   * when more may have to go, else when the oldest segment left expires (or
   * not at all). Re-arming happens in the Partition's alarm(). Returns the
   * records deleted.
   */
  runJob(now: number): number {
    let d: { records: number; more: boolean };
    try {
      d = this.enforce(now, JOB_MAX);
    } catch {
      this.host.schedule.put(RETENTION_JOB, (this.due = now + RETRY_MS));
      return 0;
    }
    const next = d.more ? now : this.nextDue();
    this.due = next;
    if (next === null) this.host.schedule.clear(RETENTION_JOB);
    else this.host.schedule.put(RETENTION_JOB, next);
    return d.records;
  }

  // ------------------------------------------------------------ internals

  /** Whether records will expire: retention by age is on and the log holds records (size limits are kept on append). */
  private needsAgeJob(): boolean {
    return this.inForce.ms > 0 && this.host.log.count() > 0;
  }

  /**
   * Whether a size limit has something to remove: more visible records
   * than `messages`, or an oldest segment the log can lose and still hold
   * `bytes` (one primary-key read, only when over the byte limit).
   */
  private over(): boolean {
    const r = this.inForce;
    const log = this.host.log;
    if (r.messages > 0 && log.count() > r.messages) return true;
    if (r.bytes <= 0 || log.payloadBytes() <= r.bytes) return false;
    const oldest = log.oldest(1)[0];
    return oldest !== undefined && log.payloadBytes() - (oldest.bytes - oldest.count * PUB_OVERHEAD) >= r.bytes;
  }

  /** The visible log's bounds for planDeletion. */
  private bounds(): { start: number; last: number } {
    const last = this.host.lastSeq();
    return { start: this.host.log.firstSequence() || last + 1, last };
  }

  /** When the oldest segment expires, null when age retention is off or the log is empty. */
  private nextDue(): number | null {
    if (this.inForce.ms === 0) return null;
    return nextExpiry(this.host.log.oldest(1)[0]?.ts ?? null, this.inForce);
  }

  private put(at: number): void {
    if (this.due !== null && this.due <= at) return;
    this.due = at;
    this.host.schedule.put(RETENTION_JOB, at);
    this.rearm = true;
  }

  /**
   * Moves the log start and deletes, in one transaction, what the settings
   * say must go among the oldest segments, at most `max` of them: reads
   * segment rows a few at a time (FIRST_READ, then doubling) until one must
   * stay. Returns the visible records removed (hidden or deleted) and
   * whether more may have to go (`max` reached).
   * @throws when the transaction fails (nothing was deleted)
   */
  private enforce(now: number, max: number): { records: number; more: boolean } {
    const { log } = this.host;
    const visible = log.count();
    const level = { records: visible, bytes: log.payloadBytes() };
    const bounds = this.bounds();
    const startBefore = log.firstSequence();
    let segments = 0, records = 0, encoded = 0, lastFirstSeq = 0, nextSeq = 0;
    let more = false, chunked = false;
    let logStart = countStart(bounds, this.inForce);
    for (let read = FIRST_READ, after = 0; segments < max; read *= 2) {
      const page = log.oldest(Math.min(read, max - segments), after);
      const d = planDeletion(page, level, bounds, this.inForce, now, PUB_OVERHEAD);
      for (let i = 0; i < d.segments; i++) if (page[i]!.bytes > CHUNK_BYTES) chunked = true;
      logStart = bounds.start = d.logStart;
      if (d.segments > 0) {
        segments += d.segments;
        records += d.records;
        encoded += d.encodedBytes;
        lastFirstSeq = d.lastFirstSeq;
        nextSeq = d.nextSeq;
        level.bytes -= d.bytes;
      }
      if (d.segments < page.length || page.length === 0) break; // one must stay, or the log ended
      more = segments >= max;
      after = d.lastFirstSeq;
    }
    const hides = log.count() > 0 && logStart > startBefore;
    if (segments === 0 && !hides) return { records: 0, more: false };
    let after: () => void = () => {};
    try {
      this.host.storage.transactionSync(() => {
        log.hideBelow(logStart);
        if (segments > 0) log.deleteThrough(lastFirstSeq, records, encoded, nextSeq, chunked);
        if (log.count() === 0) this.host.setMeta("last_seq", this.host.lastSeq()); // an emptied log keeps its sequence
        after = this.host.truncated(log.firstSequence() || this.host.lastSeq() + 1);
      });
    } catch (e) {
      log.reloadTotals();
      throw e;
    }
    after();
    return { records: visible - log.count(), more };
  }
}
