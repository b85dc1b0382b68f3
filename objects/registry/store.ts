/**
 * SQLite storage of one TopicRegistry (all of its SQL; rules in topics.ts).
 * Synchronous calls on `ctx.storage.sql`; the object wraps multi-row
 * changes in `transactionSync`.
 *
 * Tables:
 * - `topics(name PK, pair UNIQUE, partitions, incarnation, created_at,
 *   location_hint)`: live topics; pair p holds topic_ids 2p−1 (source) and
 *   2p (`.dlq` twin); `location_hint` NULL = none (added to tables written
 *   before it when the object starts).
 * - `tombstones(pair PK, name, incarnation, deleted_at)`: deleted topics
 *   whose pair was not reused yet (a late PUB gets TOPIC_DELETED).
 * - `purges(incarnation, topic_id, partitions, next)`: Partitions of deleted
 *   topics still to be told to purge; `next` = the next partition index for
 *   topics purged by full fan-out (see `written_from`).
 * - `written(incarnation, topic_id, partition)`: partitions that registered
 *   before first storing something (the ones a delete must purge).
 * - `registry_meta(k, v)`: `next_pair` (lowest never-used pair),
 *   `incarnation` (last handed out), `written_from` (first incarnation whose
 *   partitions register themselves; topics below it were created by a
 *   release before registration existed and are purged by full fan-out),
 *   `retention_pushed` (1 once the partitions registered before retention
 *   existed were queued to be told their settings).
 *
 * More tables of the registry have their own stores: `topic_groups`
 * (group-store.ts: each topic's consumer groups), `retired` (purge-store.ts:
 * partitions a topic delete left marked, and the pages of a tenant purge),
 * and `retention` / `retention_push` (retention-store.ts:
 * topics' retention settings and their pushes to partitions).
 */
import { MetaTable } from "../shared/meta-table";
import type { StoredTopic } from "./topics";
import { isLocationHint } from "../../wire/admin/location-hint";

/** One queued purge: the partitions of `topicId` (incarnation `incarnation`) still to be told. */
export interface PurgeJob {
  incarnation: number;
  topicId: number;
  partitions: number;
  /** Next partition index (full fan-out only). */
  next: number;
}

interface Row extends Record<string, SqlStorageValue> {
  name: string;
  pair: number;
  partitions: number;
  incarnation: number;
  created_at: number;
  location_hint: string | null;
}

function toTopic(r: Row): StoredTopic {
  return {
    name: r.name, pair: r.pair, partitions: r.partitions, incarnation: r.incarnation, createdAt: r.created_at,
    locationHint: isLocationHint(r.location_hint) ? r.location_hint : null,
  };
}

/** Storage access for one tenant's topic registry. */
export class RegistryStore {
  /** `registry_meta` (see the module comment; also `retention_pushed`, retention-store.ts). */
  readonly meta: MetaTable;

  /** Creates the tables if missing; fixes `written_from` the first time a registry with registration runs. */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS topics(
      name TEXT PRIMARY KEY, pair INTEGER NOT NULL UNIQUE, partitions INTEGER NOT NULL,
      incarnation INTEGER NOT NULL, created_at INTEGER NOT NULL, location_hint TEXT)`);
    if (sql.exec("SELECT 1 FROM pragma_table_info('topics') WHERE name = 'location_hint'").toArray().length === 0) {
      sql.exec("ALTER TABLE topics ADD COLUMN location_hint TEXT");
    }
    sql.exec(`CREATE TABLE IF NOT EXISTS tombstones(
      pair INTEGER PRIMARY KEY, name TEXT NOT NULL, incarnation INTEGER NOT NULL, deleted_at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS purges(
      incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, partitions INTEGER NOT NULL,
      next INTEGER NOT NULL, PRIMARY KEY(incarnation, topic_id))`);
    this.meta = new MetaTable(sql, "registry_meta");
    sql.exec(`CREATE TABLE IF NOT EXISTS written(
      incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, partition INTEGER NOT NULL,
      PRIMARY KEY(incarnation, topic_id, partition)) WITHOUT ROWID`);
    // Topics created from now on have their partitions registered (older ones are purged by full fan-out).
    if (this.meta.get("written_from") === 0) this.meta.set("written_from", this.lastIncarnation() + 1);
  }

  /** Lowest pair never handed out (1 for a new registry). */
  nextFreshPair(): number {
    return this.meta.get("next_pair", 1);
  }

  /** Last incarnation handed out (0 for a new registry). */
  lastIncarnation(): number {
    return this.meta.get("incarnation");
  }

  /** First incarnation whose partitions register themselves (older topics: full fan-out purge). */
  writtenFrom(): number {
    return this.meta.get("written_from", 1);
  }

  /** The live topic named `name`. */
  byName(name: string): StoredTopic | undefined {
    for (const r of this.sql.exec<Row>("SELECT * FROM topics WHERE name = ?", name)) return toTopic(r);
    return undefined;
  }

  /** The live topic of pair `pair`. */
  byPair(pair: number): StoredTopic | undefined {
    for (const r of this.sql.exec<Row>("SELECT * FROM topics WHERE pair = ?", pair)) return toTopic(r);
    return undefined;
  }

  /** Name of the deleted topic that last held `pair` (until the pair is reused). */
  tombstone(pair: number): string | undefined {
    for (const t of this.sql.exec<{ name: string }>("SELECT name FROM tombstones WHERE pair = ?", pair)) return t.name;
    return undefined;
  }

  /** Pairs in use, ascending. */
  usedPairs(): number[] {
    return this.sql.exec<{ pair: number }>("SELECT pair FROM topics ORDER BY pair").toArray().map((r) => r.pair);
  }

  /** Every live topic, by pair. */
  all(): StoredTopic[] {
    return this.sql.exec<Row>("SELECT * FROM topics ORDER BY pair").toArray().map(toTopic);
  }

  /**
   * Up to `limit` live topics by name (binary UTF-8 order), after `after`
   * (exclusive; null = from the start), whose names start with `prefix`
   * ("" = all): a keyset range on the primary key, never an OFFSET scan.
   */
  pageByName(after: string | null, prefix: string, limit: number): StoredTopic[] {
    const from = after !== null && after >= prefix ? after : null;
    const where = [from !== null ? "name > ?" : "name >= ?"];
    const args: SqlStorageValue[] = [from ?? prefix];
    if (prefix !== "") {
      where.push("name < ?");
      args.push(prefix + "\u{10FFFF}");
    }
    return this.sql.exec<Row>(`SELECT * FROM topics WHERE ${where.join(" AND ")} ORDER BY name LIMIT ?`, ...args, limit).toArray().map(toTopic);
  }

  /** Live topics (twins not counted). */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM topics").one().n;
  }

  /** Partitions of the live topics together (a twin's not counted: the same number as its topic's). */
  partitionTotal(): number {
    return this.sql.exec<{ n: number }>("SELECT coalesce(sum(partitions), 0) AS n FROM topics").one().n;
  }

  /** Stores a new topic (clearing its pair's tombstone) and advances the counters. Call inside transactionSync. */
  insert(t: StoredTopic): void {
    this.sql.exec("INSERT INTO topics(name, pair, partitions, incarnation, created_at, location_hint) VALUES (?,?,?,?,?,?)",
      t.name, t.pair, t.partitions, t.incarnation, t.createdAt, t.locationHint);
    this.sql.exec("DELETE FROM tombstones WHERE pair = ?", t.pair);
    this.meta.set("incarnation", t.incarnation);
    if (t.pair === this.nextFreshPair()) this.meta.set("next_pair", t.pair + 1);
  }

  /**
   * Removes a topic: leaves its tombstone and queues the purge of
   * `topicIds` (source and twin). Call inside transactionSync.
   */
  remove(t: StoredTopic, topicIds: readonly number[], nowMs: number): void {
    this.sql.exec("DELETE FROM topics WHERE name = ?", t.name);
    this.sql.exec("INSERT OR REPLACE INTO tombstones(pair, name, incarnation, deleted_at) VALUES (?,?,?,?)",
      t.pair, t.name, t.incarnation, nowMs);
    for (const id of topicIds) {
      this.sql.exec("INSERT OR IGNORE INTO purges(incarnation, topic_id, partitions, next) VALUES (?,?,?,0)",
        t.incarnation, id, t.partitions);
    }
  }

  /** True when incarnation `incarnation` of pair `pair` is a live topic. */
  isLive(incarnation: number, pair: number): boolean {
    return this.sql.exec("SELECT 1 FROM topics WHERE incarnation = ? AND pair = ?", incarnation, pair).toArray().length > 0;
  }

  /** Records that a partition holds data (idempotent). */
  recordWritten(incarnation: number, topicId: number, partition: number): void {
    this.sql.exec("INSERT OR IGNORE INTO written(incarnation, topic_id, partition) VALUES (?,?,?)", incarnation, topicId, partition);
  }

  /** The oldest queued purge, or undefined. */
  nextPurge(): PurgeJob | undefined {
    for (const r of this.sql.exec<{ incarnation: number; topic_id: number; partitions: number; next: number }>(
      "SELECT * FROM purges ORDER BY incarnation, topic_id LIMIT 1")) {
      return { incarnation: r.incarnation, topicId: r.topic_id, partitions: r.partitions, next: r.next };
    }
    return undefined;
  }

  /** Up to `limit` registered partitions of the job, ascending. */
  writtenPartitions(job: PurgeJob, limit: number): number[] {
    return this.sql.exec<{ partition: number }>(
      "SELECT partition FROM written WHERE incarnation = ? AND topic_id = ? ORDER BY partition LIMIT ?",
      job.incarnation, job.topicId, limit).toArray().map((r) => r.partition);
  }

  /** Up to `limit` registered partitions of `topicId` (incarnation `incarnation`) with index ≥ `from`, ascending. */
  writtenPartitionsFrom(incarnation: number, topicId: number, from: number, limit: number): number[] {
    return this.sql.exec<{ partition: number }>(
      "SELECT partition FROM written WHERE incarnation = ? AND topic_id = ? AND partition >= ? ORDER BY partition LIMIT ?",
      incarnation, topicId, from, limit).toArray().map((r) => r.partition);
  }

  /** Forgets the job's registered partitions up to `lastPartition` (they were purged). */
  forgetWritten(job: PurgeJob, lastPartition: number): void {
    this.sql.exec("DELETE FROM written WHERE incarnation = ? AND topic_id = ? AND partition <= ?",
      job.incarnation, job.topicId, lastPartition);
  }

  /** Moves a full fan-out job on to partition `next`. */
  advancePurge(job: PurgeJob, next: number): void {
    this.sql.exec("UPDATE purges SET next = ? WHERE incarnation = ? AND topic_id = ?", next, job.incarnation, job.topicId);
  }

  /** Removes a finished job. */
  finishPurge(job: PurgeJob): void {
    this.sql.exec("DELETE FROM purges WHERE incarnation = ? AND topic_id = ?", job.incarnation, job.topicId);
  }
}
