/**
 * TopicRegistry Durable Object: one per tenant (name `registry/<tenant>`,
 * see registryStub()). Maps topic names to paired topic_ids (source odd,
 * `.dlq` twin even), partition counts and incarnations (DESIGN.md §3;
 * spec §2 DECLARE, §2.1). Rules are in topics.ts; this class persists them.
 *
 * Deleting a topic removes its row, leaves a tombstone (so a late PUB gets
 * TOPIC_DELETED instead of UNKNOWN_TOPIC) and queues a purge: the alarm tells
 * the Partitions of the old incarnation (source and twin) to refuse appends
 * and delete their records (Partition.markDeleted), then purges the topic's
 * consumer groups (group-index.ts) — partitions only those that
 * registered themselves (`written` table, registerPartition) before they
 * first stored something, so an untouched partition is never started. A
 * topic declared again under the same name gets a new incarnation, hence new
 * Partition objects.
 *
 * Topics created before partitions registered themselves (incarnation below
 * `registry_meta.written_from`) are purged the old way: every partition.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { DeclareCreated, DeclareFlags, Op } from "../../wire/mortar/constants";
import { ErrorCode } from "../../wire/mortar/errors";
import { Schedule } from "../shared/schedule";
import { rememberName, rememberedName } from "../shared/object-name";
import { partitionStub } from "../partition/stub";
import { groupStub } from "../group/stub";
import { checkClientFrame, decodeUtf8Strict, dlqSourceName } from "../../wire/mortar/validate";
import { choosePair, isTwinId, pairOf, sourceTopicId, twinTopicId } from "./topics";
import { addGroup, ensureGroupIndex, listGroups, removeGroup } from "./group-index";
import { ensureRetired, purgePage, purgeTotals, retire, type PurgePage, type PurgeTotals } from "./purge-targets";
import type { DeclareResult, LookupResult, TopicInfo } from "./rpc";
import { DEFAULT_MAX_PARTITIONS_PER_TOPIC } from "../../wire/mortar/constants";

/** Partitions told to purge per alarm run. */
const PURGE_FANOUT = 64;

interface TopicRow extends Record<string, SqlStorageValue> {
  name: string;
  pair: number;
  partitions: number;
  incarnation: number;
  created_at: number;
}

export class TopicRegistry extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;
  private schedule: Schedule;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.name = rememberedName(ctx);
    this.init();
    this.schedule = new Schedule(ctx.storage);
  }

  /** Creates the tables (also after a purge deleted them). */
  private init(): void {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS topics(
      name TEXT PRIMARY KEY, pair INTEGER NOT NULL UNIQUE, partitions INTEGER NOT NULL,
      incarnation INTEGER NOT NULL, created_at INTEGER NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS tombstones(
      pair INTEGER PRIMARY KEY, name TEXT NOT NULL, incarnation INTEGER NOT NULL, deleted_at INTEGER NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS purges(
      incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, partitions INTEGER NOT NULL,
      next INTEGER NOT NULL, PRIMARY KEY(incarnation, topic_id))`);
    this.sql.exec("CREATE TABLE IF NOT EXISTS registry_meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS written(
      incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, partition INTEGER NOT NULL,
      PRIMARY KEY(incarnation, topic_id, partition)) WITHOUT ROWID`);
    ensureGroupIndex(this.sql);
    ensureRetired(this.sql);
    // Topics created from now on have their partitions registered (older ones are purged by full fan-out).
    if (this.meta("written_from", 0) === 0) this.setMeta("written_from", this.meta("incarnation", 0) + 1);
  }

  /** Largest partition_count a new topic may have (Worker var MORTAR_MAX_PARTITIONS_PER_TOPIC, default 1024). */
  private get maxPartitions(): number {
    const v = Number(this.env.MORTAR_MAX_PARTITIONS_PER_TOPIC);
    return this.env.MORTAR_MAX_PARTITIONS_PER_TOPIC && Number.isInteger(v) && v > 0 ? Math.min(v, 0xffff) : DEFAULT_MAX_PARTITIONS_PER_TOPIC;
  }

  /** Tenant this registry serves (from the object name `registry/<tenant>`). */
  private get tenant(): string {
    const name = this.name;
    if (!name) throw new Error("TopicRegistry must be addressed by name (registryStub)");
    return decodeURIComponent(name.split("/")[1] ?? "");
  }

  private meta(k: string, dflt: number): number {
    for (const r of this.sql.exec<{ v: number }>("SELECT v FROM registry_meta WHERE k = ?", k)) return r.v;
    return dflt;
  }

  private setMeta(k: string, v: number): void {
    this.sql.exec("INSERT OR REPLACE INTO registry_meta(k, v) VALUES (?, ?)", k, v);
  }

  private row(name: string): TopicRow | undefined {
    for (const r of this.sql.exec<TopicRow>("SELECT * FROM topics WHERE name = ?", name)) return r;
    return undefined;
  }

  private info(r: TopicRow, twin: boolean): TopicInfo {
    return {
      topicId: twin ? twinTopicId(r.pair) : sourceTopicId(r.pair),
      name: twin ? `${r.name}.dlq` : r.name,
      partitionCount: r.partitions,
      incarnation: r.incarnation,
      dlq: twin,
      createdAt: r.created_at,
    };
  }

  /**
   * DECLARE (spec §2): creates `topic` (raw UTF-8 bytes or a string) with
   * `partitionCount` partitions and its `.dlq` twin, or answers
   * IDEMPOTENT_OK for the same name and count; with DeclareFlags.DELETE
   * deletes the topic and its twin instead (partitionCount is ignored; the
   * result names the deleted topic, created = 0).
   *
   * Errors (as `{ok:false, code}`): INVALID_FLAGS, INVALID_TOPIC_NAME,
   * INVALID_PARTITION_COUNT (0, or above MORTAR_MAX_PARTITIONS_PER_TOPIC
   * for a new topic), TOPIC_NAME_RESERVED (`x.dlq` without `x`,
   * or deleting a twin), PARTITION_COUNT_MISMATCH, UNKNOWN_TOPIC (delete of
   * a missing topic), MUTATION_NOT_PACKABLE (all 32767 pairs in use).
   */
  async declare(topic: Uint8Array | string, partitionCount: number, flags = 0): Promise<DeclareResult> {
    const bytes = typeof topic === "string" ? new TextEncoder().encode(topic) : topic;
    if (!Number.isInteger(partitionCount) || partitionCount < 0 || partitionCount > 0xffff) {
      return fail(ErrorCode.INVALID_PARTITION_COUNT, `partition_count ${partitionCount} must be 1..65535`);
    }
    const bad = checkClientFrame({ op: Op.DECLARE, topic: bytes, partitionCount, flags });
    if (bad) return fail(bad.code, bad.message);
    const name = decodeUtf8Strict(bytes)!;
    if (flags & DeclareFlags.DELETE) return this.remove(name);
    const source = dlqSourceName(name);
    if (source !== null) {
      const src = this.row(source);
      if (!src) return fail(ErrorCode.TOPIC_NAME_RESERVED, `"${name}" is reserved: names ending in .dlq are dead-letter twins of existing topics`);
      return this.existing(src, true, partitionCount);
    }
    const found = this.row(name);
    if (found) return this.existing(found, false, partitionCount);
    if (partitionCount > this.maxPartitions) {
      return fail(ErrorCode.INVALID_PARTITION_COUNT,
        `partition_count ${partitionCount} is above this broker's limit of ${this.maxPartitions} partitions per topic (MORTAR_MAX_PARTITIONS_PER_TOPIC)`);
    }
    const next = this.meta("next_pair", 1);
    const pair = choosePair(next, () =>
      this.sql.exec<{ pair: number }>("SELECT pair FROM topics ORDER BY pair").toArray().map((r) => r.pair));
    if (pair === 0) return fail(ErrorCode.MUTATION_NOT_PACKABLE, "topic registry is full: all 32767 topic_id pairs are in use");
    const r: TopicRow = {
      name, pair, partitions: partitionCount,
      incarnation: this.meta("incarnation", 0) + 1,
      created_at: Date.now(),
    };
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO topics(name, pair, partitions, incarnation, created_at) VALUES (?,?,?,?,?)",
        r.name, r.pair, r.partitions, r.incarnation, r.created_at);
      this.sql.exec("DELETE FROM tombstones WHERE pair = ?", pair);
      this.setMeta("incarnation", r.incarnation);
      if (pair === next) this.setMeta("next_pair", next + 1);
    });
    const info = this.info(r, false);
    return { ok: true, topicId: info.topicId, partitionCount, created: DeclareCreated.CREATED, topic: info };
  }

  private existing(r: TopicRow, twin: boolean, partitionCount: number): DeclareResult {
    const info = this.info(r, twin);
    if (partitionCount !== r.partitions) {
      return fail(ErrorCode.PARTITION_COUNT_MISMATCH,
        `topic "${info.name}" exists with ${r.partitions} partitions, not ${partitionCount}`);
    }
    return { ok: true, topicId: info.topicId, partitionCount: r.partitions, created: DeclareCreated.IDEMPOTENT_OK, topic: info };
  }

  private async remove(name: string): Promise<DeclareResult> {
    const r = this.row(name);
    if (!r) return fail(ErrorCode.UNKNOWN_TOPIC, `topic "${name}" does not exist`);
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM topics WHERE name = ?", name);
      this.sql.exec("INSERT OR REPLACE INTO tombstones(pair, name, incarnation, deleted_at) VALUES (?,?,?,?)",
        r.pair, name, r.incarnation, now);
      for (const id of [sourceTopicId(r.pair), twinTopicId(r.pair)]) {
        this.sql.exec("INSERT OR IGNORE INTO purges(incarnation, topic_id, partitions, next) VALUES (?,?,?,0)",
          r.incarnation, id, r.partitions);
      }
    });
    await this.schedule.set("purge", now);
    const info = this.info(r, false);
    return { ok: true, topicId: info.topicId, partitionCount: r.partitions, created: DeclareCreated.CREATED, topic: info };
  }

  /** Deletes topic `name` and its twin (same as DECLARE with the DELETE flag). */
  deleteTopic(name: string): Promise<DeclareResult> {
    return this.declare(name, 0, DeclareFlags.DELETE);
  }

  /**
   * Resolves a topic_id to its live topic (source or twin). Unknown ids give
   * UNKNOWN_TOPIC; ids of a deleted topic (until the pair is reused) give
   * TOPIC_DELETED.
   */
  lookup(topicId: number): LookupResult {
    const pair = pairOf(topicId);
    for (const r of this.sql.exec<TopicRow>("SELECT * FROM topics WHERE pair = ?", pair)) {
      return { ok: true, topic: this.info(r, isTwinId(topicId)) };
    }
    for (const t of this.sql.exec<{ name: string }>("SELECT name FROM tombstones WHERE pair = ?", pair)) {
      return fail(ErrorCode.TOPIC_DELETED, `topic_id ${topicId} belonged to "${t.name}", which was deleted`);
    }
    return fail(ErrorCode.UNKNOWN_TOPIC, `topic_id ${topicId} is not registered`);
  }

  /**
   * Called by a Partition before it first stores anything: records that
   * partition `partition` of `topicId` (incarnation `incarnation`) holds
   * data, so a delete purges it. Idempotent. Returns false (recording
   * nothing) when that topic incarnation is no longer live — the partition
   * must then refuse the write as TOPIC_DELETED.
   */
  registerPartition(incarnation: number, topicId: number, partition: number): boolean {
    const live = this.sql.exec("SELECT 1 FROM topics WHERE incarnation = ? AND pair = ?", incarnation, pairOf(topicId)).toArray().length > 0;
    if (live) this.sql.exec("INSERT OR IGNORE INTO written(incarnation, topic_id, partition) VALUES (?,?,?)", incarnation, topicId, partition);
    return live;
  }

  /** The live topic (or `.dlq` twin) named `name`, or null (consumer-group management routes). */
  find(name: string): TopicInfo | null {
    const source = dlqSourceName(name);
    const r = this.row(source ?? name);
    return r ? this.info(r, source !== null) : null;
  }

  /**
   * Called by a ConsumerGroup on its first join: records group `group` of
   * `topicId` (incarnation `incarnation`) so that it can be listed and
   * purged (group-index.ts). Idempotent; recorded only while that topic
   * incarnation is live (returns whether it is).
   */
  registerGroup(incarnation: number, topicId: number, group: string): boolean {
    const live = this.sql.exec("SELECT 1 FROM topics WHERE incarnation = ? AND pair = ?", incarnation, pairOf(topicId)).toArray().length > 0;
    if (live) addGroup(this.sql, incarnation, topicId, group, Date.now());
    return live;
  }

  /** A deleted group is forgotten (ConsumerGroup.deleteGroup). Idempotent. */
  unregisterGroup(incarnation: number, topicId: number, group: string): void {
    removeGroup(this.sql, incarnation, topicId, group);
  }

  /** Names of the recorded groups of `topicId` (incarnation `incarnation`), sorted. */
  groupNames(incarnation: number, topicId: number): string[] {
    return listGroups(this.sql, incarnation, topicId);
  }

  /**
   * Tenant purge: the next page of at most `limit` objects to purge after
   * `cursor` (null = the first page) — groups, then partitions, never two
   * topic ids in one page (purge-targets.ts). Read only.
   */
  purgeTargets(cursor: string | null, limit: number): PurgePage {
    return purgePage(this.sql, cursor, limit);
  }

  /** Tenant purge: how many topics, groups and partitions the pages will name (an estimate for progress). */
  purgeTotals(): PurgeTotals {
    return purgeTotals(this.sql);
  }

  /**
   * Tenant purge, last step for the registry (after its partitions and
   * groups were purged): deletes all of its storage and alarm, keeping only
   * its incarnation counter — so a tenant re-created with the same id never
   * gets a topic whose objects share a name with the purged ones (object
   * names carry the incarnation). Returns that counter. Idempotent.
   */
  async purge(): Promise<number> {
    const incarnation = this.meta("incarnation", 0);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.sql.exec("CREATE TABLE IF NOT EXISTS registry_meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    if (incarnation > 0) this.setMeta("incarnation", incarnation);
    this.init();
    rememberName(this.ctx, this.name);
    this.schedule = new Schedule(this.ctx.storage);
    return incarnation;
  }

  /** Every live topic with its twin, ordered by topic_id (for /stats). */
  list(): TopicInfo[] {
    const out: TopicInfo[] = [];
    for (const r of this.sql.exec<TopicRow>("SELECT * FROM topics ORDER BY pair")) {
      out.push(this.info(r, false), this.info(r, true));
    }
    return out;
  }

  /**
   * Runs the purge queue: marks up to PURGE_FANOUT partitions deleted per
   * run — the registered ones (`written`), or every partition for a topic
   * created before registration existed.
   */
  override async alarm(): Promise<void> {
    if (this.schedule.due(Date.now()).includes("purge")) {
      const job = this.sql.exec<{ incarnation: number; topic_id: number; partitions: number; next: number }>(
        "SELECT * FROM purges ORDER BY incarnation, topic_id LIMIT 1").toArray()[0];
      if (!job) {
        this.schedule.clear("purge");
      } else {
        const legacy = job.incarnation < this.meta("written_from", 1);
        const parts = legacy
          ? Array.from({ length: Math.max(0, Math.min(job.partitions, job.next + PURGE_FANOUT) - job.next) }, (_, i) => job.next + i)
          : this.sql.exec<{ partition: number }>(
            "SELECT partition FROM written WHERE incarnation = ? AND topic_id = ? ORDER BY partition LIMIT ?",
            job.incarnation, job.topic_id, PURGE_FANOUT).toArray().map((r) => r.partition);
        // a failure throws: the alarm is retried and markDeleted is idempotent
        await Promise.all(parts.map((p) => partitionStub(this.env, this.tenant, job.incarnation, job.topic_id, p).markDeleted()));
        let done = parts.length < PURGE_FANOUT || (legacy && job.next + parts.length >= job.partitions);
        // Then the topic's consumer groups (group-index.ts): purged, forgotten (a page at a time).
        const groups = done ? listGroups(this.sql, job.incarnation, job.topic_id).slice(0, PURGE_FANOUT) : [];
        await Promise.all(groups.map((g) => groupStub(this.env, this.tenant, job.incarnation, job.topic_id, g).purge()));
        if (groups.length === PURGE_FANOUT) done = false;
        this.ctx.storage.transactionSync(() => {
          for (const g of groups) removeGroup(this.sql, job.incarnation, job.topic_id, g);
          retire(this.sql, job.incarnation, job.topic_id, parts); // their marker rows stay: a tenant purge visits them
          if (!legacy && parts.length > 0) {
            this.sql.exec("DELETE FROM written WHERE incarnation = ? AND topic_id = ? AND partition <= ?",
              job.incarnation, job.topic_id, parts[parts.length - 1]!);
          }
          if (done) this.sql.exec("DELETE FROM purges WHERE incarnation = ? AND topic_id = ?", job.incarnation, job.topic_id);
          else if (legacy) this.sql.exec("UPDATE purges SET next = ? WHERE incarnation = ? AND topic_id = ?", job.next + parts.length, job.incarnation, job.topic_id);
        });
        this.schedule.put("purge", Date.now());
      }
    }
    await this.schedule.rearm();
  }
}

function fail(code: number, message: string): { ok: false; code: number; message: string } {
  return { ok: false, code, message };
}
