/**
 * The TopicRegistry's retention tables (docs/protocol.md "Topic retention"):
 * what each topic pair set, and the pushes of settings to its partitions
 * still to be done. All SQL of the registry's retention lives here.
 *
 * Tables:
 * - `retention(pair PK, ms, bytes, messages, discard, dlq_ms, dlq_bytes,
 *   dlq_messages, dlq_discard, version)`: the settings the source topic
 *   (`ms`…) and its `.dlq` twin (`dlq_…`) set; NULL = not set (source: the
 *   deployment default; twin: as its source). `discard` 0 = old, 1 = new.
 *   `version` counts changes of the pair (pushes carry it; a partition keeps
 *   the newest). No row = nothing set, version 0. Removed with the topic.
 * - `retention_push(incarnation, topic_id, partitions, version, next)`: the
 *   partitions of `topic_id` still to be told the settings, from partition
 *   index `next` on (the alarm's "retention" job, a page at a time).
 */
import type { DiscardPolicy, RetentionOverrides } from "../shared/retention-config";

/** What one pair stores. */
export interface PairRetention {
  source: RetentionOverrides;
  twin: RetentionOverrides;
  version: number;
}

/** One queued push. */
export interface PushJob {
  incarnation: number;
  topicId: number;
  partitions: number;
  version: number;
  /** Next partition index to tell. */
  next: number;
}

interface Row extends Record<string, SqlStorageValue> {
  pair: number;
  ms: number | null; bytes: number | null; messages: number | null; discard: number | null;
  dlq_ms: number | null; dlq_bytes: number | null; dlq_messages: number | null; dlq_discard: number | null;
  version: number;
}

const EMPTY: PairRetention = {
  source: { ms: null, bytes: null, messages: null, discard: null },
  twin: { ms: null, bytes: null, messages: null, discard: null },
  version: 0,
};

const toDiscard = (v: number | null): DiscardPolicy | null => (v === null ? null : v === 1 ? "new" : "old");
const fromDiscard = (d: DiscardPolicy | null): number | null => (d === null ? null : d === "new" ? 1 : 0);

function toPair(r: Row): PairRetention {
  return {
    source: { ms: r.ms, bytes: r.bytes, messages: r.messages, discard: toDiscard(r.discard) },
    twin: { ms: r.dlq_ms, bytes: r.dlq_bytes, messages: r.dlq_messages, discard: toDiscard(r.dlq_discard) },
    version: r.version,
  };
}

export class RetentionStore {
  /** Creates the tables if missing. */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS retention(pair INTEGER PRIMARY KEY,
      ms INTEGER, bytes INTEGER, messages INTEGER, discard INTEGER,
      dlq_ms INTEGER, dlq_bytes INTEGER, dlq_messages INTEGER, dlq_discard INTEGER, version INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS retention_push(incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL,
      partitions INTEGER NOT NULL, version INTEGER NOT NULL, next INTEGER NOT NULL, PRIMARY KEY(incarnation, topic_id))`);
  }

  /** What pair `pair` set (nothing set: all null, version 0). */
  get(pair: number): PairRetention {
    for (const r of this.sql.exec<Row>("SELECT * FROM retention WHERE pair = ?", pair)) return toPair(r);
    return EMPTY;
  }

  /** Every stored pair's settings, by pair. */
  all(): Map<number, PairRetention> {
    const out = new Map<number, PairRetention>();
    for (const r of this.sql.exec<Row>("SELECT * FROM retention")) out.set(r.pair, toPair(r));
    return out;
  }

  /** Stores the settings of `pair`. Call inside transactionSync. */
  put(pair: number, p: PairRetention): void {
    const s = p.source, t = p.twin;
    this.sql.exec("INSERT OR REPLACE INTO retention VALUES (?,?,?,?,?,?,?,?,?,?)",
      pair, s.ms, s.bytes, s.messages, fromDiscard(s.discard), t.ms, t.bytes, t.messages, fromDiscard(t.discard), p.version);
  }

  /** Forgets the settings and queued pushes of a deleted topic (pair `pair`, incarnation `incarnation`). Call inside transactionSync. */
  drop(pair: number, incarnation: number): void {
    this.sql.exec("DELETE FROM retention WHERE pair = ?", pair);
    this.sql.exec("DELETE FROM retention_push WHERE incarnation = ? AND topic_id IN (?, ?)", incarnation, 2 * pair - 1, 2 * pair);
  }

  /** Queues telling every partition of `topicId` the settings of `version` (replacing an older queued push). */
  queuePush(incarnation: number, topicId: number, partitions: number, version: number): void {
    this.sql.exec("INSERT OR REPLACE INTO retention_push VALUES (?,?,?,?,0)", incarnation, topicId, partitions, version);
  }

  /** The oldest queued push, or undefined. */
  nextPush(): PushJob | undefined {
    for (const r of this.sql.exec<{ incarnation: number; topic_id: number; partitions: number; version: number; next: number }>(
      "SELECT * FROM retention_push ORDER BY incarnation, topic_id LIMIT 1")) {
      return { incarnation: r.incarnation, topicId: r.topic_id, partitions: r.partitions, version: r.version, next: r.next };
    }
    return undefined;
  }

  /**
   * Records that the job's partitions below `next` were told — or, with
   * `done`, removes the job — unless a newer change re-queued it meanwhile
   * (then it starts over from partition 0 with the new version).
   */
  advancePush(job: PushJob, next: number, done: boolean): void {
    if (done) {
      this.sql.exec("DELETE FROM retention_push WHERE incarnation = ? AND topic_id = ? AND version = ?", job.incarnation, job.topicId, job.version);
    } else {
      this.sql.exec("UPDATE retention_push SET next = ? WHERE incarnation = ? AND topic_id = ? AND version = ?",
        next, job.incarnation, job.topicId, job.version);
    }
  }
}
