/**
 * The push subscriptions of one mailbox in memory (bookkeeping for
 * driver.ts): each subscription's config, counters, group cursor, open
 * messages and schedule row mirror, looked up by seq, group and push_id;
 * the PUSH.LIST view of them.
 */
import type { PushInfo } from "../../../wire/mq9";
import type { GroupCursor } from "../cursor";
import type { OpenRow, PushConfig, PushStats, PushStore, StatsChange } from "./store";

/** An open message in memory. */
export interface Open {
  row: OpenRow;
  /** Set while an attempt is in flight. */
  cancel: AbortController | null;
  /** When the attempt in flight times out (ms); Infinity once it was aborted for it. */
  deadline: number;
  /** A dead-letter copy is being stored. */
  copying: boolean;
  /** Failed tries to store the dead-letter copy (its own backoff). */
  copyFailures: number;
}

/** A subscription in memory. */
export interface Run {
  cfg: PushConfig;
  stats: PushStats;
  /** Mirror of its group's row in `groups`. */
  cursor: GroupCursor;
  open: Map<number, Open>;
  /** Mirror of its `schedule` row. */
  due: number | null;
  /** There may be messages it has not taken (false once a read came back short; a SEND sets it). */
  more: boolean;
  key: Promise<CryptoKey> | null;
  /** Counter changes of the answers being recorded, written once at the end of their batch. */
  pending: StatsChange | null;
}

/** A new open message in memory for `row` (no attempt in flight). */
export function openOf(row: OpenRow): Open {
  return { row, cancel: null, deadline: Infinity, copying: false, copyFailures: 0 };
}

/** The subscriptions of one mailbox, by seq (creation order) and by group. */
export class PushRuns {
  private readonly bySeq = new Map<number, Run>();
  private readonly byGroup = new Map<string, Run>();

  /** Number of subscriptions. */
  get size(): number {
    return this.bySeq.size;
  }

  values(): IterableIterator<Run> {
    return this.bySeq.values();
  }

  /** Whether `run` is still a subscription (not deleted, not cleared since). */
  has(run: Run): boolean {
    return this.bySeq.get(run.cfg.seq) === run;
  }

  get(seq: number): Run | undefined {
    return this.bySeq.get(seq);
  }

  /** The subscription delivering `group`, if any. */
  ofGroup(group: string): Run | undefined {
    return this.byGroup.get(group);
  }

  /** The subscription `pushId`, if any. */
  ofPushId(pushId: string): Run | undefined {
    return [...this.bySeq.values()].find((r) => r.cfg.pushId === pushId);
  }

  add(run: Run): void {
    this.bySeq.set(run.cfg.seq, run);
    this.byGroup.set(run.cfg.group, run);
  }

  delete(run: Run): void {
    this.bySeq.delete(run.cfg.seq);
    this.byGroup.delete(run.cfg.group);
  }

  clear(): void {
    this.bySeq.clear();
    this.byGroup.clear();
  }

  /** PUSH.LIST: every subscription (never the secret), in creation order; `backlog` from the store at `now` (ms). */
  list(pushes: PushStore, now: number): PushInfo[] {
    return [...this.bySeq.values()].map((run) => ({
      push_id: run.cfg.pushId,
      group_name: run.cfg.group,
      url: run.cfg.url,
      max_attempts: run.cfg.maxAttempts,
      concurrency: run.cfg.concurrency,
      timeout_ms: run.cfg.timeoutMs,
      state: [...run.open.values()].some((o) => o.row.lastError !== null) ? "retrying" : "active",
      delivered: run.stats.delivered,
      failed: run.stats.failed,
      dead_lettered: run.stats.deadLettered,
      last_error: run.stats.lastError ?? "",
      last_success_time: run.stats.lastSuccessMs === null ? null : Math.floor(run.stats.lastSuccessMs / 1000),
      last_failure_time: run.stats.lastFailureMs === null ? null : Math.floor(run.stats.lastFailureMs / 1000),
      created_time: Math.floor(run.cfg.createdMs / 1000),
      in_flight: run.open.size,
      backlog: pushes.backlog(run.cursor.floors, now),
    }));
  }
}

/** Adds `c` to the counter changes `run` writes at the end of the current batch of answers. */
export function addStats(run: Run, c: StatsChange): void {
  const p = (run.pending ??= {});
  if (c.delivered) p.delivered = (p.delivered ?? 0) + c.delivered;
  if (c.failed) p.failed = (p.failed ?? 0) + c.failed;
  if (c.deadLettered) p.deadLettered = (p.deadLettered ?? 0) + c.deadLettered;
  if (c.lastError !== undefined) p.lastError = c.lastError;
  if (c.successMs !== undefined) p.successMs = c.successMs;
  if (c.failureMs !== undefined) p.failureMs = c.failureMs;
}
