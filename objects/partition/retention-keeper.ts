/**
 * Retention of one Partition (docs/protocol.md "Topic retention"): holds
 * the settings its TopicRegistry told it, refuses what a `discard = new`
 * log has no room for, and deletes the oldest whole segments — after an
 * append that took the log past a size limit (in the append's turn), and
 * from the Partition's one alarm (schedule job "retention", armed for the
 * moment the oldest segment passes `ms`, and run at once after a change of
 * settings). Decisions are pure (retention.ts); deletes are index-driven
 * range deletes (log-store.ts), O(segments deleted), never reading a value.
 *
 * Every deletion commits, in one transaction, the deleted segments, the
 * log totals, `last_seq` (so an emptied log keeps its sequence) and the
 * read path's reaction (consumers.ts `truncate`: groups below the new log
 * start move up to it, deliveries of deleted records are dropped); the
 * owners' sessions are told about dropped in-flight deliveries afterwards.
 * Producer dedupe state (producer-store.ts) is never touched.
 */
import type { Env } from "../env";
import type { Schedule } from "../shared/schedule";
import { resolveRetention, retentionDefaults, type Retention } from "../shared/retention-config";
import { PUB_OVERHEAD, type LogStore } from "./log-store";
import { appendRoom, nextExpiry, planDeletion, type AppendRoom } from "./retention";
import type { RetentionSettingsStore } from "./retention-store";
import type { RetentionUpdate } from "./rpc";

/** Oldest segments examined (and at most deleted) after one append; the alarm job continues if more must go. */
const APPEND_PAGE = 64;
/** Oldest segments examined per run of the alarm job. */
const JOB_PAGE = 256;
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
  schedule: Schedule;
  lastSeq(): number;
  setMeta(k: string, v: number): void;
  /**
   * Every record below `logStart` is gone: the read path drops what it
   * holds below it (inside the deletion's transaction). Returns what to do
   * once that committed (notify sessions).
   */
  truncated(logStart: number): () => void;
  /** `records` records with `bytes` of keys + values were deleted (same turn as the commit; telemetry). */
  deleted(records: number, bytes: number): void;
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
    if (this.due === null && this.needsJob()) this.put(Date.now()); // e.g. a log written before retention existed
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
   * is over a size limit, deletes the oldest segments (at most APPEND_PAGE;
   * the job goes on at once if more must go); arms the age job for a log
   * that was empty. A failed deletion is retried by the job (the append
   * itself stands).
   */
  appended(now: number): void {
    const r = this.inForce;
    const over = (r.messages > 0 && this.host.log.count() > r.messages) || (r.bytes > 0 && this.host.log.payloadBytes() > r.bytes);
    if (over) {
      try {
        if (this.enforce(now, APPEND_PAGE)) this.put(now);
      } catch {
        this.put(now + RETRY_MS);
      }
    }
    if (this.due === null && this.needsJob()) this.put(this.nextDue() ?? now);
  }

  /** Re-arms the alarm if a synchronous step scheduled the job (call before replying). */
  async flushArm(): Promise<void> {
    if (!this.rearm) return;
    this.rearm = false;
    await this.host.schedule.rearm();
  }

  /**
   * The alarm's "retention" job: deletes a page of the oldest segments the
   * settings say must go, then schedules itself again — now when a whole
   * page went, else when the oldest segment left expires (or not at all).
   * Re-arming happens in the Partition's alarm().
   */
  runJob(now: number): void {
    let more: boolean;
    try {
      more = this.enforce(now, JOB_PAGE);
    } catch {
      this.host.schedule.put(RETENTION_JOB, (this.due = now + RETRY_MS));
      return;
    }
    const next = more ? now : this.nextDue();
    this.due = next;
    if (next === null) this.host.schedule.clear(RETENTION_JOB);
    else this.host.schedule.put(RETENTION_JOB, next);
  }

  // ------------------------------------------------------------ internals

  /** Whether anything can ever be deleted: a limit is set and the log holds records. */
  private needsJob(): boolean {
    const r = this.inForce;
    return (r.ms > 0 || r.bytes > 0 || r.messages > 0) && this.host.log.count() > 0;
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
   * Deletes what the settings say must go among the `page` oldest segments,
   * in one transaction. Returns true when the whole page went (more may
   * have to). @throws when the transaction fails (nothing was deleted)
   */
  private enforce(now: number, page: number): boolean {
    const { log } = this.host;
    const oldest = log.oldest(page);
    const d = planDeletion(oldest, { records: log.count(), bytes: log.payloadBytes() }, this.inForce, now, PUB_OVERHEAD);
    if (d.segments === 0) return false;
    let after: () => void = () => {};
    try {
      this.host.storage.transactionSync(() => {
        log.deleteThrough(d.lastFirstSeq, d.records, d.encodedBytes);
        this.host.setMeta("last_seq", this.host.lastSeq());
        after = this.host.truncated(log.firstSequence() || this.host.lastSeq() + 1);
      });
    } catch (e) {
      log.reloadTotals();
      throw e;
    }
    this.host.deleted(d.records, d.bytes);
    after();
    return d.segments === oldest.length;
  }
}
