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
 * and delete their records (Partition.markDeleted), then purges the topic's
 * consumer groups (group-store.ts) — partitions only those that
 * registered themselves (`written` table, registerPartition) before they
 * first stored something, so an untouched partition is never started. A
 * topic declared again under the same name gets a new incarnation, hence new
 * Partition objects.
 *
 * Topics created before partitions registered themselves (incarnation below
 * `registry_meta.written_from`) are purged the old way: every partition.
 *
 * Retention (docs/protocol.md "Topic retention"): the registry stores what
 * each topic (and its twin) set (retention-store.ts) and PUSHES the
 * settings to the partitions: a partition gets them with its registration
 * answer, and after a change the alarm's "retention" job tells every
 * registered partition of the topic (a page of PUSH_FANOUT per run, retried
 * until each answered; the settings carry a version, so a late push never
 * undoes a newer one). Partitions that never stored anything are not
 * started: they learn the settings when they register.
 *
 * For consumer-group management and the tenant purge (docs/groups.md,
 * docs/tenants.md) the registry also records each topic's consumer groups
 * (group-store.ts), remembers the partitions a topic delete left marked
 * (`retired`), and pages through everything a tenant purge must visit
 * (purge-store.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { DeclareCreated, DeclareFlags, Op } from "../../wire/mortar/constants";
import type { DeclareRetention } from "../../wire/mortar/frames";
import { ErrorCode } from "../../wire/mortar/errors";
import { AlarmScheduler } from "../shared/scheduler";
import { rememberName, rememberedName } from "../shared/object-name";
import { tenantOfName } from "../shared/names";
import { MetaTable } from "../shared/meta-table";
import { partitionStub } from "../partition/stub";
import { groupStub } from "../group/stub";
import { checkClientFrame, decodeUtf8Strict, dlqSourceName } from "../../wire/mortar/validate";
import { choosePair, isTwinId, pairOf, purgePage, sourceTopicId, topicInfo, twinTopicId, type StoredTopic } from "./topics";
import { RegistryStore } from "./store";
import { GROUP_STORAGE_BYTES, maxGroupsPerTopic, maxPartitionsPerTopic, partitionsPerTenant } from "./config";
import { RegistryTelemetry } from "./telemetry";
import { tenantStub } from "../tenants/stub";
import { RetentionStore, type PairRetention } from "./retention-store";
import {
  NO_OVERRIDES, applyPatch, patchFromWire, resolveRetention, retentionDefaults, sameOverrides,
  type Retention, type RetentionOverrides,
} from "../shared/retention-config";
import type { RetentionUpdate } from "../partition/rpc";
import { isLocationHint, locationHintRefusal, type LocationHint } from "../../wire/admin/location-hint";
import { GroupIndexStore } from "./group-store";
import { PurgeTargetStore } from "./purge-store";
import type { DeclareResult, LookupResult, PurgeTargetPage, PurgeTotals, RegisterGroupResult, RegisterResult, TopicInfo, TopicInfoPage, WrittenPartition, WrittenQuery } from "./rpc";

/** Partitions told to purge per alarm run. */
const PURGE_FANOUT = 64;
/** Partitions told new retention settings per alarm run. */
const PUSH_FANOUT = 64;
/**
 * How long a read of the tenant's `partitions` quota that admits a new topic
 * is reused, ms (a run of DECLAREs asks the tenant's object about once a
 * second); also how long "no storage quota" is believed for new groups.
 */
const PARTITION_QUOTA_CACHE_MS = 1_000;

export class TopicRegistry extends DurableObject<Env> {
  private store: RegistryStore;
  private retention: RetentionStore;
  /** Each topic's consumer groups (group-store.ts). */
  private groups: GroupIndexStore;
  /** What a tenant purge visits (purge-store.ts). */
  private targets: PurgeTargetStore;
  private readonly sql: SqlStorage;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;
  private readonly schedule: AlarmScheduler;
  /** Reports the groups' storage (telemetry.ts). */
  private readonly telemetry: RegistryTelemetry;
  /** Partitions of the live topics together (store.partitionTotal, for the `partitions` quota): counted once, then kept by create/remove; null = not counted. */
  private partitionTotal: number | null = null;
  /** The tenant's `partitions` quota as last read from its TenantDirectory, and when (ms); null = never read. */
  private quotaRead: { partitions: number | null; at: number } | null = null;
  /** When the tenant was last found without a `storage_bytes` quota (ms; registerGroup then asks again only after QUOTA_CACHE_MS); null = not known. */
  private noStorageQuotaAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    this.sql = ctx.storage.sql;
    this.store = new RegistryStore(ctx.storage.sql);
    this.retention = new RetentionStore(ctx.storage.sql);
    this.groups = new GroupIndexStore(this.sql);
    this.targets = new PurgeTargetStore(this.sql);
    this.schedule = new AlarmScheduler(ctx.storage, { owner: "TopicRegistry", jobs: true })
      .job("purge", () => this.purgeStep())
      .job("retention", () => this.pushStep())
      .job("telemetry", () => this.telemetry.flush());
    this.telemetry = new RegistryTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), schedule: this.schedule,
      tenant: () => this.tenant, groups: () => this.groups.total(),
    });
    if (this.store.meta.get("retention_pushed") === 0) {
      // First start of a registry with retention: partitions that registered before it hold no
      // settings (they apply the defaults) and no topic name; tell them once.
      ctx.storage.transactionSync(() => {
        for (const t of this.store.all()) {
          this.retention.queuePush(t.incarnation, sourceTopicId(t.pair), t.partitions, 0);
          this.retention.queuePush(t.incarnation, twinTopicId(t.pair), t.partitions, 0);
        }
        this.store.meta.set("retention_pushed", 1);
        if (this.retention.nextPush()) this.schedule.put("retention", Date.now());
      });
      void ctx.blockConcurrencyWhile(() => this.schedule.rearm());
    }
  }

  /** Largest partition_count a new topic may have (config.ts). */
  private get maxPartitions(): number {
    return maxPartitionsPerTopic(this.env);
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
   * a missing topic, or partition_count 0 with RETENTION for a missing
   * one), MUTATION_NOT_PACKABLE (all 32767 pairs in use), INVALID_FLAGS (a
   * bad retention tail), QUOTA_EXCEEDED (a new topic would take the tenant's
   * topics past its `partitions` quota: partitionLimit).
   *
   * Retention (DeclareFlags.RETENTION with `retention`, the wire tail):
   * creating a topic stores the fields it sets; for an existing topic (or
   * `<name>.dlq`, its twin) the fields replace the stored ones — an alter,
   * answered `created` = ALTERED when that changed them — and
   * partition_count may be 0 (= whatever the topic has). `topic.retention`
   * always holds the settings in force.
   *
   * `mayCreate` false (a caller whose token scopes lack `mortar.admin` on
   * the name, docs/tenants.md "Permissions"): a topic that does not exist
   * is not created — answered PERMISSION_DENIED — while declaring an
   * existing one (or its twin) works as ever.
   *
   * `locationHint` (not on the wire: the HTTP/console/CLI create,
   * docs/deploy.md "Placement"): stored with a topic this call creates,
   * and its objects start there (shared/location-hint.ts); for an existing
   * topic it is ignored — the answer's `topic.locationHint` is the stored
   * one, for the caller to compare. Not a hint: INVALID_FLAGS naming the
   * allowed values.
   */
  async declare(
    topic: Uint8Array | string, partitionCount: number, flags = 0, retention?: DeclareRetention, mayCreate = true, locationHint: LocationHint | null = null,
  ): Promise<DeclareResult> {
    const bytes = typeof topic === "string" ? new TextEncoder().encode(topic) : topic;
    if (!Number.isInteger(partitionCount) || partitionCount < 0 || partitionCount > 0xffff) {
      return fail(ErrorCode.INVALID_PARTITION_COUNT, `partition_count ${partitionCount} must be 1..65535`);
    }
    if (!!(flags & DeclareFlags.RETENTION) !== !!retention) {
      return fail(ErrorCode.INVALID_FLAGS, "the RETENTION flag and the retention settings go together");
    }
    if (locationHint !== null && !isLocationHint(locationHint)) return fail(ErrorCode.INVALID_FLAGS, locationHintRefusal(locationHint));
    const bad = checkClientFrame({ op: Op.DECLARE, topic: bytes, partitionCount, flags, ...(retention ? { retention } : {}) });
    if (bad) return fail(bad.code, bad.message);
    const name = decodeUtf8Strict(bytes)!;
    if (flags & DeclareFlags.DELETE) return this.remove(name);
    const patch = retention ? patchFromWire(retention) : null;
    const source = dlqSourceName(name);
    if (source !== null) {
      const src = this.store.byName(source);
      if (!src) return fail(ErrorCode.TOPIC_NAME_RESERVED, `"${name}" is reserved: names ending in .dlq are dead-letter twins of existing topics`);
      return this.existing(src, true, partitionCount, patch);
    }
    const found = this.store.byName(name);
    if (found) return this.existing(found, false, partitionCount, patch);
    if (!mayCreate) return fail(ErrorCode.PERMISSION_DENIED, `permission denied: mortar.admin on ${name} (creating a topic needs mortar.admin; topic "${name}" does not exist)`);
    if (partitionCount === 0) return fail(ErrorCode.UNKNOWN_TOPIC, `topic "${name}" does not exist (partition_count 0 alters an existing topic)`);
    if (partitionCount > this.maxPartitions) {
      return fail(ErrorCode.INVALID_PARTITION_COUNT,
        `partition_count ${partitionCount} is above this broker's limit of ${this.maxPartitions} partitions per topic (MORTAR_MAX_PARTITIONS_PER_TOPIC)`);
    }
    const maxTotal = await this.partitionLimit(partitionCount);
    // from here on synchronous: another DECLARE may have run during the await, so look again
    const raced = this.store.byName(name);
    if (raced) return this.existing(raced, false, partitionCount, patch);
    const total = (this.partitionTotal ??= this.store.partitionTotal());
    if (total + partitionCount > maxTotal) {
      return fail(ErrorCode.QUOTA_EXCEEDED,
        `partition quota exceeded: the tenant's topics have ${total} partitions, quota ${maxTotal}; topic "${name}" with ${partitionCount} partition${partitionCount === 1 ? "" : "s"} was not created (delete topics or raise the partitions quota)`);
    }
    const pair = choosePair(this.store.nextFreshPair(), () => this.store.usedPairs());
    if (pair === 0) return fail(ErrorCode.MUTATION_NOT_PACKABLE, "topic registry is full: all 32767 topic_id pairs are in use");
    const r: StoredTopic = {
      name, pair, partitions: partitionCount,
      incarnation: this.store.lastIncarnation() + 1,
      createdAt: Date.now(),
      locationHint,
    };
    const settings: PairRetention = { source: applyPatch(NO_OVERRIDES, patch ?? {}), twin: NO_OVERRIDES, version: 0 };
    this.ctx.storage.transactionSync(() => {
      this.store.insert(r);
      this.retention.drop(pair, r.incarnation); // nothing of an earlier topic of this pair survives
      if (patch) this.retention.put(pair, settings);
    });
    this.partitionTotal = total + partitionCount;
    const info = this.view(r, false, settings);
    return { ok: true, topicId: info.topicId, partitionCount, created: DeclareCreated.CREATED, topic: info };
  }

  /**
   * The tenant's partition limit (config.ts partitionsPerTenant) for a new
   * topic of `n` partitions: a quota read within PARTITION_QUOTA_CACHE_MS
   * that admits it is used as it is; otherwise (none, or one that would
   * refuse) the quota is read again from the tenant's object — so a raised
   * quota applies at once and a lowered one within the cache time. The
   * tenant's object unreachable: the quota counts as unset (the broker
   * default), not as no limit.
   */
  private async partitionLimit(n: number): Promise<number> {
    const now = Date.now();
    const read = this.quotaRead;
    if (read !== null && now - read.at < PARTITION_QUOTA_CACHE_MS) {
      const limit = partitionsPerTenant(this.env, read.partitions);
      if ((this.partitionTotal ??= this.store.partitionTotal()) + n <= limit) return limit;
    }
    const partitions = await tenantStub(this.env, this.tenant).quotas().then((q) => q.partitions, () => undefined);
    if (partitions === undefined) return partitionsPerTenant(this.env, null);
    this.quotaRead = { partitions, at: now };
    return partitionsPerTenant(this.env, partitions);
  }

  /** DECLARE of an existing topic (or its twin): the same count (or 0 with a retention patch), and an alter when `patch` changes what it set. */
  private async existing(r: StoredTopic, twin: boolean, partitionCount: number, patch: Partial<RetentionOverrides> | null): Promise<DeclareResult> {
    const name = twin ? `${r.name}.dlq` : r.name;
    if (partitionCount !== r.partitions && !(patch && partitionCount === 0)) {
      return fail(ErrorCode.PARTITION_COUNT_MISMATCH, `topic "${name}" exists with ${r.partitions} partitions, not ${partitionCount}`);
    }
    let settings = this.retention.get(r.pair);
    let created: number = DeclareCreated.IDEMPOTENT_OK;
    if (patch) {
      const own = twin ? settings.twin : settings.source;
      const next = applyPatch(own, patch);
      if (!sameOverrides(own, next)) {
        settings = { ...settings, [twin ? "twin" : "source"]: next, version: settings.version + 1 };
        created = DeclareCreated.ALTERED;
        const pushed = settings;
        this.ctx.storage.transactionSync(() => {
          this.retention.put(r.pair, pushed);
          // An alter of the source reaches its twin too (fields the twin did not set follow the source).
          if (!twin) this.retention.queuePush(r.incarnation, sourceTopicId(r.pair), r.partitions, pushed.version);
          this.retention.queuePush(r.incarnation, twinTopicId(r.pair), r.partitions, pushed.version);
        });
        await this.schedule.set("retention", Date.now());
      }
    }
    const info = this.view(r, twin, settings);
    return { ok: true, topicId: info.topicId, partitionCount: r.partitions, created, topic: info };
  }

  /** The RPC view of topic `r` (source or twin) with its retention settings in force. */
  private view(r: StoredTopic, twin: boolean, settings: PairRetention = this.retention.get(r.pair)): TopicInfo {
    return { ...topicInfo(r, twin), retention: resolveRetention(overridesOf(settings, twin), retentionDefaults(this.env)) };
  }

  /** What a partition of topic `r` (source or twin) is told (RetentionUpdate). */
  private update(r: StoredTopic, twin: boolean, settings: PairRetention = this.retention.get(r.pair)): RetentionUpdate {
    return { version: settings.version, topic: twin ? `${r.name}.dlq` : r.name, overrides: overridesOf(settings, twin) };
  }

  private async remove(name: string): Promise<DeclareResult> {
    const r = this.store.byName(name);
    if (!r) return fail(ErrorCode.UNKNOWN_TOPIC, `topic "${name}" does not exist`);
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      this.store.remove(r, [sourceTopicId(r.pair), twinTopicId(r.pair)], now);
      this.retention.drop(r.pair, r.incarnation);
    });
    if (this.partitionTotal !== null) this.partitionTotal -= r.partitions;
    await this.schedule.set("purge", now);
    const info = this.view(r, false, { source: NO_OVERRIDES, twin: NO_OVERRIDES, version: 0 });
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
    if (r) return { ok: true, topic: this.view(r, isTwinId(topicId)) };
    const deleted = this.store.tombstone(pair);
    if (deleted !== undefined) return fail(ErrorCode.TOPIC_DELETED, `topic_id ${topicId} belonged to "${deleted}", which was deleted`);
    return fail(ErrorCode.UNKNOWN_TOPIC, `topic_id ${topicId} is not registered`);
  }

  /**
   * Called by a Partition before it first stores anything: records that
   * partition `partition` of `topicId` (incarnation `incarnation`) holds
   * data, so a delete purges it, and answers the retention settings it
   * applies (registered partitions are told later changes by the alarm).
   * Idempotent. Answers `live` false (recording nothing) when that topic
   * incarnation is no longer live — the partition must then refuse the
   * write as TOPIC_DELETED.
   */
  registerPartition(incarnation: number, topicId: number, partition: number): RegisterResult {
    const r = this.store.byPair(pairOf(topicId));
    if (!r || r.incarnation !== incarnation) return { live: false, retention: null };
    this.store.recordWritten(incarnation, topicId, partition);
    return { live: true, retention: this.update(r, isTwinId(topicId)), ...(r.locationHint !== null ? { locationHint: r.locationHint } : {}) };
  }

  /**
   * The partitions of `topics` (in the order given, each from its `from`
   * index on) that may hold data, at most `limit` in all: those that
   * registered (`written`), and every partition of a topic from before
   * registration (`written_from`). Read only; the Worker's read paths call
   * only these (objects/shared/written-stats.ts), so reading never starts
   * an empty Partition.
   */
  writtenOf(topics: readonly WrittenQuery[], limit: number): WrittenPartition[] {
    const out: WrittenPartition[] = [];
    const legacyBelow = this.store.writtenFrom();
    for (const t of topics) {
      const left = limit - out.length;
      if (left <= 0) break;
      const parts = t.incarnation < legacyBelow
        ? Array.from({ length: Math.max(0, Math.min(left, t.partitionCount - t.from)) }, (_, i) => t.from + i)
        : this.store.writtenPartitionsFrom(t.incarnation, t.topicId, t.from, left);
      for (const p of parts) out.push({ topicId: t.topicId, partition: p });
    }
    return out;
  }

  /** The live topic (or `.dlq` twin) named `name`, or null (consumer-group management routes). */
  find(name: string): TopicInfo | null {
    const source = dlqSourceName(name);
    const r = this.store.byName(source ?? name);
    return r ? this.view(r, source !== null) : null;
  }

  /**
   * Called by a ConsumerGroup on its first join: records group `group` of
   * `topicId` (incarnation `incarnation`) so that it can be listed and
   * purged (group-store.ts). Idempotent; recorded only while that topic
   * incarnation is live (returns whether it is). A new group of a topic that
   * already has MORTAR_MAX_GROUPS_PER_TOPIC (config.ts) is not recorded:
   * `{refused}` with the SUB's error message; nor is one that would take the
   * tenant past its `storage_bytes` quota, a group counting
   * GROUP_STORAGE_BYTES (the tenant's stored bytes as its TenantDirectory
   * last read them; unknown when that call fails, then admitted). A recorded
   * group's storage is reported (telemetry.ts).
   */
  async registerGroup(incarnation: number, topicId: number, group: string): Promise<RegisterGroupResult> {
    if (!this.store.isLive(incarnation, pairOf(topicId))) return false;
    if (this.groups.has(incarnation, topicId, group)) return true;
    const full = this.groupsFull(incarnation, topicId);
    if (full) return full;
    const now = Date.now();
    if (this.noStorageQuotaAt === null || now - this.noStorageQuotaAt >= PARTITION_QUOTA_CACHE_MS) {
      const state = await tenantStub(this.env, this.tenant).state().catch(() => null);
      const quota = state?.quotas.storage_bytes ?? null;
      this.noStorageQuotaAt = state && quota === null ? now : null;
      if (state && quota !== null && state.storedBytes + GROUP_STORAGE_BYTES > quota) {
        return { refused: `storage quota exceeded: the tenant stores ${state.storedBytes} bytes, quota ${quota}, and a consumer group counts ${GROUP_STORAGE_BYTES}: use an existing group or delete one` };
      }
    }
    // again after the wait: the topic may be gone, the group recorded, the topic full
    if (!this.store.isLive(incarnation, pairOf(topicId))) return false;
    if (this.groups.has(incarnation, topicId, group)) return true;
    const fullNow = this.groupsFull(incarnation, topicId);
    if (fullNow) return fullNow;
    this.groups.add(incarnation, topicId, group, Date.now());
    this.telemetry.groupsChanged();
    return true;
  }

  /** `{refused}` when topic `topicId` (incarnation) has MORTAR_MAX_GROUPS_PER_TOPIC groups, else null. */
  private groupsFull(incarnation: number, topicId: number): { refused: string } | null {
    const max = maxGroupsPerTopic(this.env);
    const n = this.groups.count(incarnation, topicId);
    if (n < max) return null;
    const t = this.store.byPair(pairOf(topicId));
    const name = t ? (isTwinId(topicId) ? `${t.name}.dlq` : t.name) : `topic_id ${topicId}`;
    return { refused: `topic "${name}" already has ${n} consumer groups, the limit (MORTAR_MAX_GROUPS_PER_TOPIC ${max}): use an existing group or delete one` };
  }

  /** A deleted group is forgotten (ConsumerGroup.deleteGroup). Idempotent. */
  unregisterGroup(incarnation: number, topicId: number, group: string): void {
    if (!this.groups.has(incarnation, topicId, group)) return;
    this.groups.remove(incarnation, topicId, group);
    this.telemetry.groupsChanged();
  }

  /** True when group `group` of `topicId` (incarnation `incarnation`) is recorded (joined since group registration, not deleted). */
  hasGroup(incarnation: number, topicId: number, group: string): boolean {
    return this.groups.has(incarnation, topicId, group);
  }

  /** Names of the recorded groups of `topicId` (incarnation `incarnation`), sorted. */
  groupNames(incarnation: number, topicId: number): string[] {
    return this.groups.list(incarnation, topicId);
  }

  /**
   * Tenant purge: the next page of at most `limit` objects to purge after
   * `cursor` (null = the first page) — groups, then partitions, never two
   * topic ids in one page (purge-store.ts). Read only.
   */
  purgeTargets(cursor: string | null, limit: number): PurgeTargetPage {
    return this.targets.page(cursor, limit);
  }

  /** Tenant purge: how many topics, groups and partitions the pages will name (an estimate for progress). */
  purgeTotals(): PurgeTotals {
    return this.targets.totals();
  }

  /**
   * Tenant purge, last step for the registry (after its partitions and
   * groups were purged): deletes all of its storage and alarm, keeping only
   * its incarnation counter — so a tenant re-created with the same id never
   * gets a topic whose objects share a name with the purged ones (object
   * names carry the incarnation). Returns that counter. Idempotent.
   */
  async purge(): Promise<number> {
    const incarnation = this.store.lastIncarnation();
    await this.schedule.stop();
    await this.telemetry.abandon();
    await this.ctx.storage.deleteAll();
    this.partitionTotal = null;
    if (incarnation > 0) new MetaTable(this.sql, "registry_meta").set("incarnation", incarnation);
    this.store = new RegistryStore(this.sql); // written_from: the next incarnation
    this.store.meta.set("retention_pushed", 1); // nothing is left to tell
    this.retention = new RetentionStore(this.sql);
    this.groups = new GroupIndexStore(this.sql);
    this.targets = new PurgeTargetStore(this.sql);
    rememberName(this.ctx, this.name);
    this.schedule.reopen();
    return incarnation;
  }

  /** Every live topic with its twin, ordered by topic_id, with their retention settings in force (for /stats). */
  list(): TopicInfo[] {
    const all = this.retention.all();
    return this.store.all().flatMap((r) => {
      const s = all.get(r.pair);
      return [this.view(r, false, s ?? EMPTY_PAIR), this.view(r, true, s ?? EMPTY_PAIR)];
    });
  }

  /** Live source topics (twins not counted). */
  topicCount(): number {
    return this.store.count();
  }

  /**
   * One page of live topics by name for listings (`GET /v0/topics`,
   * docs/console.md): after source name `after` (null = the first page),
   * names starting with `prefix`; at most `limit` (1..1000) source topics,
   * and no more once the page holds `maxPartitions` partitions (at least
   * one topic per page) — each source followed by its twin.
   */
  page(after: string | null, prefix: string, limit: number, maxPartitions = Infinity): TopicInfoPage {
    const n = Math.max(1, Math.min(1000, Math.floor(limit)));
    const rows = this.store.pageByName(after, prefix, n + 1);
    const out: TopicInfo[] = [];
    let partitions = 0;
    let taken = 0;
    for (const r of rows.slice(0, n)) {
      if (taken > 0 && partitions + 2 * r.partitions > maxPartitions) break;
      const settings = this.retention.get(r.pair);
      out.push(this.view(r, false, settings), this.view(r, true, settings));
      partitions += 2 * r.partitions;
      taken++;
    }
    const more = rows.length > taken;
    return { topics: out, next: more ? rows[taken - 1]!.name : null, total: this.store.count() };
  }

  /**
   * Runs the due jobs: "purge" marks up to PURGE_FANOUT partitions deleted
   * per run — the registered ones (`written`), or every partition for a
   * topic created before registration existed; "retention" pushes settings
   * (pushStep).
   */
  override async alarm(): Promise<void> {
    await this.schedule.alarm();
  }

  /**
   * One page of the oldest queued retention push: tells up to PUSH_FANOUT
   * partitions of its topic the current settings (the registered ones, or
   * every partition for a topic created before registration). A failed call
   * throws: the scheduler retries the job with backoff, and setRetention is idempotent.
   */
  private async pushStep(): Promise<void> {
    const job = this.retention.nextPush();
    if (!job) {
      this.schedule.clear("retention");
      return;
    }
    const r = this.store.byPair(pairOf(job.topicId));
    if (!r || r.incarnation !== job.incarnation) {
      this.retention.advancePush(job, 0, true); // the topic is gone (its partitions are being purged)
    } else {
      const fullFanOut = job.incarnation < this.store.writtenFrom();
      const page = purgePage(job, fullFanOut, (limit) => this.store.writtenPartitionsFrom(job.incarnation, job.topicId, job.next, limit), PUSH_FANOUT);
      const update = this.update(r, isTwinId(job.topicId));
      await Promise.all(page.partitions.map((p) => partitionStub(this.env, this.tenant, job.incarnation, job.topicId, p).setRetention(update)));
      const last = page.partitions[page.partitions.length - 1];
      this.ctx.storage.transactionSync(() => this.retention.advancePush(job, last === undefined ? job.next : last + 1, page.done));
    }
    if (this.retention.nextPush()) this.schedule.put("retention", Date.now());
    else this.schedule.clear("retention");
  }

  /** One run of the purge queue (see alarm()): a page of partitions, then the topic's consumer groups. */
  private async purgeStep(): Promise<void> {
    const job = this.store.nextPurge();
    if (!job) {
      this.schedule.clear("purge");
      return;
    }
    const fullFanOut = job.incarnation < this.store.writtenFrom();
    const page = purgePage(job, fullFanOut, (limit) => this.store.writtenPartitions(job, limit), PURGE_FANOUT);
    const parts = page.partitions;
    // a failure throws: the scheduler retries the job with backoff, and markDeleted is idempotent
    await Promise.all(parts.map((p) => partitionStub(this.env, this.tenant, job.incarnation, job.topicId, p).markDeleted()));
    // Then the topic's consumer groups (group-store.ts): purged and forgotten, a page at a time.
    const groups = page.done ? this.groups.list(job.incarnation, job.topicId).slice(0, PURGE_FANOUT) : [];
    await Promise.all(groups.map((g) => groupStub(this.env, this.tenant, job.incarnation, job.topicId, g).purge()));
    const done = page.done && groups.length < PURGE_FANOUT;
    this.ctx.storage.transactionSync(() => {
      for (const g of groups) this.groups.remove(job.incarnation, job.topicId, g);
      this.targets.retire(job.incarnation, job.topicId, parts); // their marker rows stay: a tenant purge visits them
      if (!fullFanOut && parts.length > 0) this.store.forgetWritten(job, parts[parts.length - 1]!);
      if (done) this.store.finishPurge(job);
      else if (fullFanOut) this.store.advancePurge(job, job.next + parts.length);
    });
    if (groups.length > 0) this.telemetry.groupsChanged();
    this.schedule.put("purge", Date.now());
  }
}

const EMPTY_PAIR: PairRetention = { source: NO_OVERRIDES, twin: NO_OVERRIDES, version: 0 };

/** What topic (source) or its twin set; a twin's unset fields are its source's. */
function overridesOf(s: PairRetention, twin: boolean): RetentionOverrides {
  return twin ? resolveRetention(s.twin, s.source) : s.source;
}

function fail(code: number, message: string): { ok: false; code: number; message: string } {
  return { ok: false, code, message };
}
