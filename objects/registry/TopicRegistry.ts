/**
 * TopicRegistry Durable Object: one per tenant (name `registry/<tenant>`,
 * see registryStub()). Maps topic names to paired topic_ids (source odd,
 * `.dlq` twin even), partition counts and incarnations (DESIGN.md §3;
 * spec §2 DECLARE, §2.1). Rules are in topics.ts (pure), all SQL in
 * store.ts; this class is the glue: check → decide → persist → reply.
 *
 * Deleting a topic removes its row, leaves a tombstone (so a late PUB gets
 * TOPIC_DELETED instead of UNKNOWN_TOPIC) and queues a purge: the alarm tells
 * the Partitions of the old incarnation (source and twin) to refuse appends
 * and delete their records (Partition.markDeleted) — only those that
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
import { DEFAULT_MAX_PARTITIONS_PER_TOPIC, DeclareCreated, DeclareFlags, Op } from "../../wire/mortar/constants";
import { ErrorCode } from "../../wire/mortar/errors";
import { Schedule } from "../shared/schedule";
import { rememberedName } from "../shared/object-name";
import { tenantOfName } from "../shared/names";
import { partitionStub } from "../partition/stub";
import { checkClientFrame, decodeUtf8Strict, dlqSourceName } from "../../wire/mortar/validate";
import { choosePair, isTwinId, pairOf, purgePage, sourceTopicId, topicInfo, twinTopicId, type StoredTopic } from "./topics";
import { RegistryStore } from "./store";
import type { DeclareResult, LookupResult, TopicInfo } from "./rpc";

/** Partitions told to purge per alarm run. */
const PURGE_FANOUT = 64;

export class TopicRegistry extends DurableObject<Env> {
  private readonly store: RegistryStore;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;
  private readonly schedule: Schedule;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    this.store = new RegistryStore(ctx.storage.sql);
    this.schedule = new Schedule(ctx.storage);
  }

  /** Largest partition_count a new topic may have (Worker var MORTAR_MAX_PARTITIONS_PER_TOPIC, default 1024). */
  private get maxPartitions(): number {
    const v = Number(this.env.MORTAR_MAX_PARTITIONS_PER_TOPIC);
    return this.env.MORTAR_MAX_PARTITIONS_PER_TOPIC && Number.isInteger(v) && v > 0 ? Math.min(v, 0xffff) : DEFAULT_MAX_PARTITIONS_PER_TOPIC;
  }

  /** Tenant this registry serves (from the object name `registry/<tenant>`). */
  private get tenant(): string {
    const tenant = tenantOfName(this.name);
    if (tenant === null) throw new Error("TopicRegistry must be addressed by name (registryStub)");
    return tenant;
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
      const src = this.store.byName(source);
      if (!src) return fail(ErrorCode.TOPIC_NAME_RESERVED, `"${name}" is reserved: names ending in .dlq are dead-letter twins of existing topics`);
      return this.existing(src, true, partitionCount);
    }
    const found = this.store.byName(name);
    if (found) return this.existing(found, false, partitionCount);
    if (partitionCount > this.maxPartitions) {
      return fail(ErrorCode.INVALID_PARTITION_COUNT,
        `partition_count ${partitionCount} is above this broker's limit of ${this.maxPartitions} partitions per topic (MORTAR_MAX_PARTITIONS_PER_TOPIC)`);
    }
    const pair = choosePair(this.store.nextFreshPair(), () => this.store.usedPairs());
    if (pair === 0) return fail(ErrorCode.MUTATION_NOT_PACKABLE, "topic registry is full: all 32767 topic_id pairs are in use");
    const r: StoredTopic = {
      name, pair, partitions: partitionCount,
      incarnation: this.store.lastIncarnation() + 1,
      createdAt: Date.now(),
    };
    this.ctx.storage.transactionSync(() => this.store.insert(r));
    const info = topicInfo(r, false);
    return { ok: true, topicId: info.topicId, partitionCount, created: DeclareCreated.CREATED, topic: info };
  }

  private existing(r: StoredTopic, twin: boolean, partitionCount: number): DeclareResult {
    const info = topicInfo(r, twin);
    if (partitionCount !== r.partitions) {
      return fail(ErrorCode.PARTITION_COUNT_MISMATCH,
        `topic "${info.name}" exists with ${r.partitions} partitions, not ${partitionCount}`);
    }
    return { ok: true, topicId: info.topicId, partitionCount: r.partitions, created: DeclareCreated.IDEMPOTENT_OK, topic: info };
  }

  private async remove(name: string): Promise<DeclareResult> {
    const r = this.store.byName(name);
    if (!r) return fail(ErrorCode.UNKNOWN_TOPIC, `topic "${name}" does not exist`);
    const now = Date.now();
    this.ctx.storage.transactionSync(() => this.store.remove(r, [sourceTopicId(r.pair), twinTopicId(r.pair)], now));
    await this.schedule.set("purge", now);
    const info = topicInfo(r, false);
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
    const r = this.store.byPair(pair);
    if (r) return { ok: true, topic: topicInfo(r, isTwinId(topicId)) };
    const deleted = this.store.tombstone(pair);
    if (deleted !== undefined) return fail(ErrorCode.TOPIC_DELETED, `topic_id ${topicId} belonged to "${deleted}", which was deleted`);
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
    const live = this.store.isLive(incarnation, pairOf(topicId));
    if (live) this.store.recordWritten(incarnation, topicId, partition);
    return live;
  }

  /** Every live topic with its twin, ordered by topic_id (for /stats). */
  list(): TopicInfo[] {
    return this.store.all().flatMap((r) => [topicInfo(r, false), topicInfo(r, true)]);
  }

  /**
   * Runs the purge queue: marks up to PURGE_FANOUT partitions deleted per
   * run — the registered ones (`written`), or every partition for a topic
   * created before registration existed.
   */
  override async alarm(): Promise<void> {
    if (this.schedule.due(Date.now()).includes("purge")) {
      const job = this.store.nextPurge();
      if (!job) {
        this.schedule.clear("purge");
      } else {
        const fullFanOut = job.incarnation < this.store.writtenFrom();
        const page = purgePage(job, fullFanOut, (limit) => this.store.writtenPartitions(job, limit), PURGE_FANOUT);
        const parts = page.partitions;
        // a failure throws: the alarm is retried and markDeleted is idempotent
        await Promise.all(parts.map((p) => partitionStub(this.env, this.tenant, job.incarnation, job.topicId, p).markDeleted()));
        this.ctx.storage.transactionSync(() => {
          if (!fullFanOut && parts.length > 0) this.store.forgetWritten(job, parts[parts.length - 1]!);
          if (page.done) this.store.finishPurge(job);
          else if (fullFanOut) this.store.advancePurge(job, job.next + parts.length);
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
