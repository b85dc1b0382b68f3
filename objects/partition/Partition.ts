/**
 * Partition Durable Object: one per (tenant, topic incarnation, topic_id,
 * partition) — see partitionStub(). Holds the ordered log in SQLite, the
 * idempotent-producer state, and each consumer group's ack floor and
 * in-flight deliveries (DESIGN.md §3, §4; spec §2 PUB, §2.1; the read path
 * lives in consumers.ts).
 *
 * append(): decode the batch → plan (pure, plan.ts/dedupe.ts) → lay the
 * stored records out into segments (pure, segments.ts; dead letters too) →
 * one transactionSync (all SQL in store.ts and the stores it opens) →
 * reply. The reply leaves only after the commit (output gate; nothing but
 * storage is awaited between write and reply).
 *
 * Registration: before it first stores anything (append, dead letters,
 * assign), a Partition registers itself with its tenant's TopicRegistry
 * (one RPC per object lifetime, remembered in `partition_meta.registered`),
 * so a topic delete purges only partitions that hold data. If the registry
 * answers that the topic incarnation is no longer live, the partition marks
 * itself deleted and refuses the write (TOPIC_DELETED). The registry's
 * answer carries the topic's retention settings; later changes are pushed
 * (setRetention). Retention itself lives in retention-keeper.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { ErrorCode } from "../../wire/mortar/errors";
import { Durability } from "../../wire/mortar/constants";
import { frameSize } from "../../wire/mortar/codec";
import type { PubFrame } from "../../wire/mortar/frames";
import { readPubBatch } from "./batch";
import { ProducerCache } from "./dedupe";
import type { LogStore } from "./log-store";
import type { ProducerStore } from "./producer-store";
import { SegmentLayout } from "./segments";
import { PartitionStore } from "./store";
import { planAppend, type RejectReason } from "./plan";
import {
  AppendStatus, type AppendResult, type AssignResult, type DeliverRequest, type DeliverResult, type OwnerRef,
  type GroupStatus, type PartitionInfo, type PartitionStats, type RetentionUpdate, type SettleRequest, type SettleResult, type StoredRecord,
} from "./rpc";
import type { ResetTarget } from "../../wire/admin/groups";
import type { RegisterResult } from "../registry/rpc";
import { RETENTION_JOB, RetentionKeeper } from "./retention-keeper";
import { takeRoom } from "./retention";
import { AlarmScheduler } from "../shared/scheduler";
import { rememberedName } from "../shared/object-name";
import { parsePartitionName } from "../shared/names";
import { detectDurability } from "../shared/durability";
import { readConfig } from "../shared/read-config";
import { Consumers, type PartitionIdentity } from "./consumers";
import { registryStub } from "../registry/stub";
import { PartitionTelemetry } from "./telemetry";
import { isOutOfMemory, logFault, logOverload } from "../shared/platform-faults";
import { noteTopicHint } from "../shared/location-hint";

/** Segments deleted per purge step (one alarm run). */
const PURGE_PAGE = 256;

const REJECT_CODE: Record<RejectReason, number> = {
  "missing-producer-id": ErrorCode.INVALID_PRODUCER_FIELDS,
  "out-of-window": ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW,
  full: ErrorCode.PARTITION_FULL,
};

export class Partition extends DurableObject<Env> {
  private readonly store: PartitionStore;
  private readonly log: LogStore;
  private readonly producerStore: ProducerStore;
  private readonly schedule: AlarmScheduler;
  private readonly producers = new ProducerCache();
  private lastSeq: number;
  private readonly leaderEpoch: number;
  private deleted: boolean;
  private durability: number = Durability.LOCAL;
  private readonly consumers: Consumers;
  private registered: boolean;
  private registering: Promise<void> | null = null;
  /** Storage deleted by a tenant purge: the object refuses everything and writes nothing (purge()). */
  private purged = false;
  /** The log totals in memory may count a rolled-back commit (a reload after it failed too): reloaded before the next append. */
  private totalsStale = false;
  /** Counters for /metrics and usage metering (telemetry.ts). */
  private readonly telemetry: PartitionTelemetry;
  /** Retention settings and enforcement (retention-keeper.ts). */
  private readonly keeper: RetentionKeeper;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    this.store = new PartitionStore(ctx.storage);
    this.schedule = new AlarmScheduler(ctx.storage, { owner: "Partition", jobs: true });
    this.log = this.store.log;
    this.producerStore = this.store.producers;
    this.leaderEpoch = ctx.storage.transactionSync(() => {
      const next = this.meta("leader_epoch") + 1;
      this.setMeta("leader_epoch", next);
      return next;
    });
    this.deleted = this.meta("deleted") === 1;
    this.registered = this.meta("registered") === 1;
    this.lastSeq = Math.max(this.log.lastSequence(), this.meta("last_seq"));
    this.consumers = new Consumers({
      storage: ctx.storage, env, log: this.log, schedule: this.schedule, config: readConfig(env),
      identity: () => this.identity(),
      lastSeq: () => this.lastSeq,
      logStart: () => this.logStart(),
      deleted: () => this.deleted,
      meta: (k) => this.meta(k),
      setMeta: (k, v) => this.setMeta(k, v),
      delivered: (count, bytes) => this.telemetry.delivered(count, bytes),
      settled: () => this.telemetry.touch(),
    });
    this.telemetry = new PartitionTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), schedule: this.schedule,
      tenant: () => this.identity().tenant,
      log: this.log,
      groups: () => this.consumers.info(),
      nonIdempotent: () => this.log.nonIdempotent(),
      topic: () => this.keeper.topic,
    });
    this.keeper = new RetentionKeeper({
      storage: ctx.storage, env, log: this.log, settings: this.store.retention, schedule: this.schedule,
      lastSeq: () => this.lastSeq,
      setMeta: (k, v) => this.setMeta(k, v),
      truncated: (start) => this.consumers.truncate(start),
    });
    this.addJobs();
    void ctx.blockConcurrencyWhile(async () => {
      this.durability = await detectDurability(ctx.storage);
      await this.keeper.flushArm();
    });
  }

  /** The first retained sequence (the log start): the oldest stored record's, or the next sequence when none is stored. */
  private logStart(): number {
    return this.log.firstSequence() || this.lastSeq + 1;
  }

  /** Which partition this object is (from its name, see partitionStub). */
  private identity(): PartitionIdentity {
    return parsePartitionName(this.name);
  }

  private meta(k: string): number {
    return this.store.meta.get(k);
  }

  private setMeta(k: string, v: number): void {
    this.store.meta.set(k, v);
  }

  /**
   * Appends a batch of PUB frames (objects/partition/batch.ts format) in
   * ONE transaction and answers per record, in batch order: appended
   * (new sequence), duplicate (original sequence, nothing appended) or
   * rejected (INVALID_PRODUCER_FIELDS 0x0013 / PRODUCER_SEQ_OUT_OF_WINDOW
   * 0x0014). Whole-batch failures set `error`: TOPIC_DELETED (0x2005) after
   * the topic was deleted, MALFORMED_PAYLOAD for an undecodable batch,
   * STORAGE_FULL (0x4004) or STORAGE_UNAVAILABLE (0x600a) when the commit
   * fails — then nothing is appended and no producer state is reserved.
   * The caller validated topic, partition, key/value caps and flags.
   */
  async append(batch: Uint8Array): Promise<AppendResult> {
    await this.register();
    const r = this.appendNow(batch);
    await this.keeper.flushArm();
    return r;
  }

  /**
   * Registers this partition with the TopicRegistry once (see class
   * comment); marks it deleted when its topic incarnation is gone.
   * @throws when the registry call fails (the caller's write fails; retryable)
   */
  private register(): Promise<void> {
    if (this.registered || this.deleted) return Promise.resolve();
    this.registering ??= (async () => {
      const { tenant, incarnation, topicId, partition } = this.identity();
      const r = (await registryStub(this.env, tenant).registerPartition(incarnation, topicId, partition)) as RegisterResult;
      if (r.live) {
        noteTopicHint(tenant, { incarnation, locationHint: r.locationHint }); // its .dlq twin starts where it was hinted
        if (r.retention) await this.keeper.apply(r.retention);
        this.setMeta("registered", 1);
        this.registered = true;
      } else {
        await this.markDeleted();
      }
    })().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  private appendNow(batch: Uint8Array): AppendResult {
    const frames = this.openBatch(batch, "append batch");
    if (!Array.isArray(frames)) return frames;
    if (this.totalsStale) {
      const e = this.reloadTotals();
      if (e !== null) return this.commitFailed(frames.length, e);
    }
    const n = frames.length;
    const room = this.keeper.room(); // null unless the topic refuses records at its limits (discard = new)
    const admit = room ? (i: number) => takeRoom(room, frames[i]!.key.length + frames[i]!.value.length) : undefined;
    const plan = planAppend(frames, this.lastSeq, {
      state: (pid) => {
        let st = this.producers.get(pid);
        if (st === undefined) {
          st = this.producerStore.state(pid);
          if (st !== undefined) this.producers.set(pid, st);
        }
        return st;
      },
      stored: (pid, pseq) => this.producerStore.stored(pid, pseq),
    }, undefined, admit);
    const status = new Uint8Array(n);
    const sequences = new Float64Array(n);
    const codes = new Uint16Array(n);
    const layout = new SegmentLayout();
    let off = 0;
    let valueBytes = 0, duplicates = 0;
    for (let i = 0; i < n; i++) {
      const o = plan.outcomes[i];
      const size = frameSize(frames[i]);
      const start = off;
      off += size;
      if (o.kind === "reject") {
        status[i] = AppendStatus.REJECTED;
        codes[i] = REJECT_CODE[o.reason];
        continue;
      }
      sequences[i] = o.sequence;
      if (o.kind === "duplicate") {
        status[i] = AppendStatus.DUPLICATE;
        duplicates++;
        continue;
      }
      valueBytes += frames[i].value.length;
      layout.add(o.sequence, start, off);
    }
    if (plan.appended) {
      const ts = Date.now();
      try {
        this.ctx.storage.transactionSync(() => {
          this.log.appendSegments(batch, layout.segments, ts, plan.nonIdempotent);
          if (plan.producerAppends.length) {
            this.producerStore.commit(plan.producerAppends, plan.producers, (pid) => this.producers.get(pid)?.highest);
          }
        });
      } catch (e) {
        return this.commitFailed(n, e);
      }
      for (const [pid, st] of plan.producers) this.producers.set(pid, st);
      this.lastSeq = plan.lastSequence;
      const deleted = this.keeper.appended(ts); // a size limit crossed: the oldest segments go, in this turn
      // Same synchronous turn as the commits above: the counts are stored with them.
      this.telemetry.published(plan.appended, valueBytes, duplicates, deleted);
      this.consumers.appended();
    } else if (duplicates > 0) {
      this.telemetry.published(0, 0, duplicates); // nothing else to commit: the count waits in memory (≤ one flush interval)
    }
    return { leaderEpoch: this.leaderEpoch, commitSeq: this.lastSeq, durability: this.durability, status, sequences, codes };
  }

  /** The batch's PUB frames, or the whole-batch failure (topic deleted, undecodable batch). */
  private openBatch(batch: Uint8Array, what: string): PubFrame[] | AppendResult {
    if (this.deleted) return this.failed(0, ErrorCode.TOPIC_DELETED, "the topic was deleted");
    try {
      return readPubBatch(batch);
    } catch (e) {
      return this.failed(0, ErrorCode.MALFORMED_PAYLOAD, `${what}: ${(e as Error).message}`);
    }
  }

  /**
   * A failed commit of `n` records: STORAGE_FULL when SQLite is full,
   * BACKPRESSURE when the runtime is out of memory, else STORAGE_UNAVAILABLE
   * (logged under the reference the message names). The SQLite text stays
   * in the log (objects/shared/platform-faults.ts).
   */
  private commitFailed(n: number, e: unknown): AppendResult {
    this.reloadTotals(); // the rolled-back segments were counted in memory
    const msg = String((e as Error)?.message ?? e);
    if (/SQLITE_FULL|database or disk is full/i.test(msg)) return this.failed(n, ErrorCode.STORAGE_FULL, "append failed: storage full, nothing was appended");
    if (isOutOfMemory(e)) {
      logOverload("Partition", e);
      return this.failed(n, ErrorCode.BACKPRESSURE, "append failed: broker out of memory, nothing was appended; retry later");
    }
    return this.failed(n, ErrorCode.STORAGE_UNAVAILABLE, `append failed: storage unavailable, nothing was appended (ref ${logFault("Partition", e)})`);
  }

  /**
   * Reloads the log totals after a failed commit. When storage cannot even be
   * read (a dropped table, out of memory) the totals stay marked stale and are
   * reloaded before the next append, so the failure is answered as the
   * commit's (commitFailed) and never as an internal error.
   * @returns null when reloaded, else the storage's error
   */
  private reloadTotals(): unknown {
    try {
      this.log.reloadTotals();
      this.totalsStale = false;
      return null;
    } catch (e) {
      this.totalsStale = true;
      return e;
    }
  }

  private failed(n: number, code: number, message: string): AppendResult {
    return {
      error: { code, message },
      leaderEpoch: this.leaderEpoch, commitSeq: this.lastSeq, durability: this.durability,
      status: new Uint8Array(n).fill(AppendStatus.REJECTED),
      sequences: new Float64Array(n),
      codes: new Uint16Array(n).fill(code),
    };
  }

  /**
   * Reads stored records from `fromSeq` (≥ 1) in order: at most `maxRecords`,
   * stopping before `maxBytes` of values (the first record is always
   * returned whole). Values over 1 MiB are reassembled from their chunks.
   */
  read(fromSeq: number, maxRecords = 100, maxBytes = 1024 * 1024): StoredRecord[] {
    return this.log.read(Math.max(1, fromSeq), Math.max(1, Math.min(maxRecords, 10_000)), maxBytes);
  }

  /**
   * What `/stats` shows of this partition: first retained sequence, high
   * watermark, retained bytes (keys + values), idempotent producers with
   * dedupe state, and each group's committed floor, in-flight deliveries and
   * records lost to retention (docs/operations.md).
   */
  stats(): PartitionStats {
    if (this.purged) return { firstSequence: 1, highWatermark: 0, sizeBytes: 0, producers: 0, groups: [] };
    return {
      firstSequence: this.logStart(),
      highWatermark: this.lastSeq,
      sizeBytes: this.log.payloadBytes(),
      producers: this.producerStore.count(),
      groups: this.consumers.info().map((g) => ({
        group: g.group, committedFloor: Math.max(0, g.ackFloor - 1), inFlight: g.inFlight, retentionSkipped: g.retentionSkipped,
      })),
    };
  }

  /** Counters and positions of this partition, and of every consumer group at it. */
  info(): PartitionInfo {
    return {
      leaderEpoch: this.leaderEpoch,
      firstSequence: this.logStart(),
      lastSequence: this.lastSeq,
      records: this.log.count(),
      retainedBytes: this.log.payloadBytes(),
      retention: { ...this.keeper.settings, version: this.keeper.version, topic: this.keeper.topic },
      nonIdempotentPublishes: this.log.nonIdempotent(),
      deleted: this.deleted,
      durability: this.durability,
      groups: this.consumers.info(),
    };
  }

  /**
   * Appends dead letters from the source partition (same index of the
   * source topic) in one transaction: whole PUB frames whose value is the
   * dead-letter envelope, stored with their original producer fields but
   * WITHOUT producer dedupe (they are not new publishes). Returns the
   * AppendResult of the batch (every record APPENDED), or `error`
   * TOPIC_DELETED / MALFORMED_PAYLOAD / STORAGE_FULL / STORAGE_UNAVAILABLE.
   */
  async appendDeadLetters(batch: Uint8Array): Promise<AppendResult> {
    await this.register();
    const frames = this.openBatch(batch, "dead-letter batch");
    if (!Array.isArray(frames)) return frames;
    const n = frames.length;
    const first = this.lastSeq + 1;
    const layout = new SegmentLayout();
    const room = this.keeper.room();
    for (let i = 0, off = 0; i < n; i++) {
      const start = off;
      off += frameSize(frames[i]!);
      const bytes = frames[i]!.key.length + frames[i]!.value.length;
      if (room && !takeRoom(room, bytes)) {
        // A twin that refuses records at its limits (discard = new) takes the whole batch or none: the source retries later.
        return this.failed(n, ErrorCode.PARTITION_FULL, "the dead-letter twin is at its retention limit (discard = new)");
      }
      layout.add(first + i, start, off);
    }
    const ts = Date.now();
    try {
      this.ctx.storage.transactionSync(() => this.log.appendSegments(batch, layout.segments, ts));
      this.telemetry.stored();
    } catch (e) {
      return this.commitFailed(n, e);
    }
    this.lastSeq += n;
    if (n > 0) {
      const deleted = this.keeper.appended(ts);
      if (deleted > 0) this.telemetry.retentionDeleted(deleted);
      await this.keeper.flushArm();
      this.consumers.appended();
    }
    const sequences = Float64Array.from({ length: n }, (_, i) => first + i);
    return { leaderEpoch: this.leaderEpoch, commitSeq: this.lastSeq, durability: this.durability, status: new Uint8Array(n), sequences, codes: new Uint16Array(n) };
  }

  /**
   * Fence from the ConsumerGroup: `owner` (null = nobody) owns this
   * partition for `group` under ownership `epoch`; in-flight deliveries of
   * an older epoch go up for redelivery (to the dead-letter twin when that
   * was their last attempt). A group seen for the first time
   * starts per `startPolicy` (StartPolicy). An older epoch is refused
   * (ok = false, nothing changes).
   */
  async assign(group: string, epoch: number, owner: OwnerRef | null, startPolicy: number, reset?: number): Promise<AssignResult> {
    if (this.purged) return { ok: false, ownershipEpoch: 0 };
    await this.register();
    return this.consumers.assign(group, epoch, owner, startPolicy, reset);
  }

  /**
   * Where a group reset to `target` moves a position on this partition:
   * the next sequence to deliver (docs/groups.md). `time` finds the first
   * record appended at or after it without reading values
   * (LogStore.firstSequenceAtOrAfter); `sequence` is clamped into
   * [oldest stored, newest + 1].
   */
  resolvePosition(target: ResetTarget): number {
    const end = this.lastSeq + 1;
    const first = this.log.firstSequence() || end;
    switch (target.kind) {
      case "earliest":
        return first;
      case "latest":
        return end;
      case "sequence":
        return Math.min(end, Math.max(first, target.sequence));
      case "time":
        return Math.min(end, Math.max(first, this.log.firstSequenceAtOrAfter(target.at)));
    }
  }

  /** Pauses (until unix ms) or resumes (null) deliveries to `group` here; see Consumers.pause. */
  async pauseGroup(group: string, until: number | null): Promise<void> {
    if (!this.purged) await this.consumers.pause(group, until);
  }

  /** Deletes `group`'s position and deliveries here (group delete); true when it had some. Idempotent. */
  async dropGroup(group: string): Promise<boolean> {
    return this.purged ? false : this.consumers.dropGroup(group);
  }

  /** One group's position and counters here, with the partition's high watermark (group describe). */
  groupStatus(group: string): GroupStatus {
    if (this.purged) return { highWatermark: 0, cursor: null, pausedUntil: null };
    return { highWatermark: this.lastSeq, ...this.consumers.cursor(group) };
  }

  /**
   * Tenant purge (docs/tenants.md "Deleting a tenant"): deletes ALL of this
   * partition's storage — log, producer state, group positions and
   * deliveries, schedule, telemetry — and its alarm, once a dead-letter
   * transfer and a usage report in flight have finished (so nothing reaches
   * the twin or the tenant's aggregator afterwards). From then on it refuses
   * appends and deliveries (TOPIC_DELETED) and writes nothing. Answers the
   * names of the groups it had positions for (groups that joined before the
   * registry's group index existed are found this way). Idempotent.
   */
  async purge(): Promise<{ groups: string[] }> {
    const groups = this.purged ? [] : this.consumers.info().map((g) => g.group);
    this.purged = true;
    this.deleted = true;
    await this.consumers.idle();
    await this.telemetry.abandon();
    await this.schedule.stop();
    await this.ctx.storage.deleteAll();
    return { groups };
  }

  /**
   * Delivers records to the owner of `req.group` (see DeliverRequest):
   * redeliveries first, then new records, as encoded MSG frames. Errors in
   * `code`: STALE_OWNERSHIP_EPOCH, NOT_OWNER, TOPIC_DELETED.
   */
  deliver(req: DeliverRequest): Promise<DeliverResult> {
    return this.consumers.deliver(req);
  }

  /** Settles a batch of ACK/NACK operations (see SettleRequest); per-operation codes. */
  settle(req: SettleRequest): Promise<SettleResult> {
    return this.consumers.settle(req);
  }

  /**
   * Retention settings from the TopicRegistry after a change (see
   * RetentionUpdate): applied when at least as new as those held, then
   * enforced at once through the alarm. Idempotent.
   */
  async setRetention(u: RetentionUpdate): Promise<void> {
    if (this.deleted) return;
    await this.keeper.apply(u);
  }

  /**
   * Marks the partition's topic as deleted: appends are refused from now on
   * (TOPIC_DELETED) and the stored records are purged in pages by the alarm.
   * The deleted marker itself stays, so a late append never revives the log.
   * Idempotent.
   */
  async markDeleted(): Promise<void> {
    if (this.purged) return;
    if (!this.deleted) {
      this.deleted = true;
      this.setMeta("deleted", 1);
      this.setMeta("last_seq", this.lastSeq);
      this.producers.clear();
    }
    await this.schedule.set("purge", Date.now());
  }

  /** Runs due jobs from the schedule table (shared/scheduler.ts): "purge", "retention", "telemetry" (report counters), and the read path's "deadlines", "dlq" and "pause". */
  override async alarm(): Promise<void> {
    if (this.purged) return;
    await this.schedule.alarm();
  }

  /** The handlers of the alarm's jobs (each failure is retried by the scheduler with backoff). */
  private addJobs(): void {
    const s = this.schedule;
    for (const job of ["deadlines", "dlq", "pause"]) s.job(job, (now) => this.consumers.runJob(job, now).then(() => {}));
    s.job("purge", (now) => {
      const deleted = this.ctx.storage.transactionSync(() => this.store.purgePage(PURGE_PAGE));
      if (deleted < PURGE_PAGE) s.clear("purge");
      else s.put("purge", now);
      this.telemetry.purged();
    });
    s.job(RETENTION_JOB, (now) => {
      if (this.deleted) return s.clear(RETENTION_JOB);
      const deleted = this.keeper.runJob(now);
      if (deleted > 0) this.telemetry.retentionDeleted(deleted);
    });
    s.job("telemetry", () => this.telemetry.flush().then(() => {}));
  }
}
