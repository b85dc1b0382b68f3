/**
 * SQLite storage of a mailbox's push subscriptions (docs/push.md
 * "Storage"); part of the Mailbox's store (objects/mailbox/store.ts creates
 * these tables with the mailbox, adds them to mailboxes of earlier releases
 * on load, and drops them with it). Synchronous calls on
 * `ctx.storage.sql`; callers wrap changes in `transactionSync`.
 *
 * Tables:
 * - `pushes`     one row per subscription: push_id, group_name (its
 *                consumer group in `groups`), url, secret, max_attempts,
 *                concurrency, timeout_ms, created_ms, and the counters LIST
 *                shows (delivered, failed, dead_lettered, last_error,
 *                last_success_ms, last_failure_ms). `seq` (rowid) is its `schedule` ref.
 * - `push_open`  messages a subscription took and has not settled:
 *                (push_seq, msg_id) → lane, attempts made, next_ms (when
 *                the next attempt — or, while one is in flight, the retry
 *                after a crash — is due), last_error, dead_letter (1 once
 *                max_attempts are used: the copy to `<address>.dlq` is
 *                pending).
 * - `dead_letter_refs` in a dead-letter mailbox: the source message of
 *                each copy stored (`<tenant-free source>/<push_id>/<msg_id>`)
 *                for a day, so a copy resent after a lost answer is stored
 *                once.
 * - `schedule` rows of kind `push` (ref = seq, due_ms = when the alarm must
 *   look at the subscription next).
 */
import { SegmentStore } from "../segment-store";
import type { Lane } from "../../../wire/mq9";
import { ScheduleKind } from "../schedule";

/** Statements creating the push tables (idempotent). */
export const PUSH_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS pushes (seq INTEGER PRIMARY KEY, push_id TEXT NOT NULL UNIQUE, group_name TEXT NOT NULL UNIQUE,
     url TEXT NOT NULL, secret TEXT NOT NULL, max_attempts INTEGER NOT NULL, concurrency INTEGER NOT NULL,
     timeout_ms INTEGER NOT NULL, created_ms INTEGER NOT NULL, delivered INTEGER NOT NULL DEFAULT 0,
     failed INTEGER NOT NULL DEFAULT 0, dead_lettered INTEGER NOT NULL DEFAULT 0, last_error TEXT, last_success_ms INTEGER,
     last_failure_ms INTEGER)`,
  `CREATE TABLE IF NOT EXISTS push_open (push_seq INTEGER NOT NULL, msg_id INTEGER NOT NULL, lane INTEGER NOT NULL,
     attempts INTEGER NOT NULL, next_ms INTEGER NOT NULL, last_error TEXT, dead_letter INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (push_seq, msg_id))`,
  `CREATE TABLE IF NOT EXISTS dead_letter_refs (ref TEXT PRIMARY KEY, msg_id INTEGER NOT NULL, at_ms INTEGER NOT NULL)`,
];

/** The push tables (dropped with the mailbox). */
export const PUSH_TABLES = ["pushes", "push_open", "dead_letter_refs"];

/** How long a dead-letter mailbox remembers the source of a copy, ms (a resend after a lost answer comes within minutes). */
export const DEAD_LETTER_REF_MS = 86_400_000;

/** A subscription's configuration. */
export interface PushConfig {
  seq: number;
  pushId: string;
  group: string;
  url: string;
  secret: string;
  maxAttempts: number;
  concurrency: number;
  timeoutMs: number;
  createdMs: number;
}

/** A subscription's counters (LIST). */
export interface PushStats {
  delivered: number;
  failed: number;
  deadLettered: number;
  lastError: string | null;
  lastSuccessMs: number | null;
  /** When the last failure (failed attempt, failed dead-letter copy) was recorded, ms; null: never. */
  lastFailureMs: number | null;
}

/** A stored subscription. */
export interface PushRow {
  config: PushConfig;
  stats: PushStats;
}

/** An open (taken, unsettled) message of a subscription. */
export interface OpenRow {
  pushSeq: number;
  msgId: number;
  lane: Lane;
  /** Attempts made so far (an attempt counts from its start). */
  attempts: number;
  /** When the next attempt is due, ms. */
  nextMs: number;
  lastError: string | null;
  /** max_attempts are used: the dead-letter copy is pending. */
  deadLetter: boolean;
}

/** Changes to a subscription's counters. */
export interface StatsChange {
  delivered?: number;
  failed?: number;
  deadLettered?: number;
  /** Sets last_error. */
  lastError?: string;
  /** Sets last_success_ms. */
  successMs?: number;
  /** Sets last_failure_ms. */
  failureMs?: number;
}

/** Storage access for the push tables of one mailbox. */
export class PushStore {
  constructor(private readonly sql: SqlStorage) {}

  /** Creates the tables if missing (a mailbox from a release before push delivery). */
  ensureSchema(): void {
    for (const stmt of PUSH_SCHEMA) this.sql.exec(stmt);
  }

  /** True when the push tables exist. */
  private has(): boolean {
    return this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pushes'").toArray().length > 0;
  }

  /** Every subscription, by seq. */
  loadPushes(): PushRow[] {
    if (!this.has()) return [];
    return this.sql.exec("SELECT * FROM pushes ORDER BY seq").toArray().map((r) => ({
      config: {
        seq: r.seq as number, pushId: r.push_id as string, group: r.group_name as string, url: r.url as string,
        secret: r.secret as string, maxAttempts: r.max_attempts as number, concurrency: r.concurrency as number,
        timeoutMs: r.timeout_ms as number, createdMs: r.created_ms as number,
      },
      stats: {
        delivered: r.delivered as number, failed: r.failed as number, deadLettered: r.dead_lettered as number,
        lastError: r.last_error as string | null, lastSuccessMs: r.last_success_ms as number | null,
        lastFailureMs: (r.last_failure_ms as number | null | undefined) ?? null,
      },
    }));
  }

  /** Every open message of every subscription. */
  loadOpen(): OpenRow[] {
    if (!this.has()) return [];
    return this.sql.exec("SELECT * FROM push_open ORDER BY push_seq, lane, msg_id").toArray().map((r) => ({
      pushSeq: r.push_seq as number, msgId: r.msg_id as number, lane: r.lane as Lane, attempts: r.attempts as number,
      nextMs: r.next_ms as number, lastError: r.last_error as string | null, deadLetter: r.dead_letter === 1,
    }));
  }

  /** Stores a new subscription; returns its seq. */
  insertPush(c: Omit<PushConfig, "seq">): number {
    return this.sql.exec(
      `INSERT INTO pushes (push_id, group_name, url, secret, max_attempts, concurrency, timeout_ms, created_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
      c.pushId, c.group, c.url, c.secret, c.maxAttempts, c.concurrency, c.timeoutMs, c.createdMs,
    ).one().seq as number;
  }

  /** Removes a subscription, its open messages and its schedule row. */
  deletePush(seq: number): void {
    this.sql.exec("DELETE FROM pushes WHERE seq = ?", seq);
    this.sql.exec("DELETE FROM push_open WHERE push_seq = ?", seq);
    this.setDue(seq, null);
  }

  /** Writes (inserts or replaces) an open message. */
  putOpen(o: OpenRow): void {
    this.sql.exec(
      `INSERT INTO push_open (push_seq, msg_id, lane, attempts, next_ms, last_error, dead_letter) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (push_seq, msg_id) DO UPDATE SET attempts = excluded.attempts, next_ms = excluded.next_ms,
         last_error = excluded.last_error, dead_letter = excluded.dead_letter`,
      o.pushSeq, o.msgId, o.lane, o.attempts, o.nextMs, o.lastError, o.deadLetter ? 1 : 0,
    );
  }

  /** The message is settled (or gone): it leaves the open set. */
  deleteOpen(pushSeq: number, msgId: number): void {
    this.sql.exec("DELETE FROM push_open WHERE push_seq = ? AND msg_id = ?", pushSeq, msgId);
  }

  /** Adds to / sets a subscription's counters. */
  changeStats(seq: number, c: StatsChange): void {
    this.sql.exec(
      `UPDATE pushes SET delivered = delivered + ?, failed = failed + ?, dead_lettered = dead_lettered + ?,
         last_error = COALESCE(?, last_error), last_success_ms = COALESCE(?, last_success_ms),
         last_failure_ms = COALESCE(?, last_failure_ms) WHERE seq = ?`,
      c.delivered ?? 0, c.failed ?? 0, c.deadLettered ?? 0, c.lastError ?? null, c.successMs ?? null, c.failureMs ?? null, seq,
    );
  }

  /** Sets (or, with null, removes) the subscription's schedule row. */
  setDue(seq: number, dueMs: number | null): void {
    if (dueMs === null) this.sql.exec("DELETE FROM schedule WHERE kind = ? AND ref = ?", ScheduleKind.push, seq);
    else {
      this.sql.exec(
        "INSERT INTO schedule (kind, ref, due_ms) VALUES (?, ?, ?) ON CONFLICT (kind, ref) DO UPDATE SET due_ms = excluded.due_ms",
        ScheduleKind.push, seq, dueMs,
      );
    }
  }

  /** Every subscription's schedule row: seq → due_ms. */
  dueTimes(): Map<number, number> {
    const out = new Map<number, number>();
    if (!this.has()) return out;
    for (const r of this.sql.exec("SELECT ref, due_ms FROM schedule WHERE kind = ?", ScheduleKind.push)) {
      out.set(r.ref as number, r.due_ms as number);
    }
    return out;
  }

  /**
   * Visible, unexpired messages at or above `floors` (per lane): what the
   * group has not acknowledged yet.
   */
  backlog(floors: readonly number[], nowMs: number): number {
    return new SegmentStore(this.sql).countFrom(floors, nowMs);
  }

  /** The msg_id a dead-letter copy with source `ref` was stored as, or null. */
  deadLetterRef(ref: string): number | null {
    for (const r of this.sql.exec("SELECT msg_id FROM dead_letter_refs WHERE ref = ?", ref)) return r.msg_id as number;
    return null;
  }

  /** Remembers the source of a stored copy; forgets sources older than DEAD_LETTER_REF_MS. */
  addDeadLetterRef(ref: string, msgId: number, nowMs: number): void {
    this.sql.exec("DELETE FROM dead_letter_refs WHERE at_ms < ?", nowMs - DEAD_LETTER_REF_MS);
    this.sql.exec("INSERT OR REPLACE INTO dead_letter_refs (ref, msg_id, at_ms) VALUES (?, ?, ?)", ref, msgId, nowMs);
  }
}
