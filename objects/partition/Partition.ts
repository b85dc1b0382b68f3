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
 * itself deleted and refuses the write (TOPIC_DELETED).
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
  type PartitionInfo, type PartitionStats, type SettleRequest, type SettleResult, type StoredRecord,
} from "./rpc";
import { Schedule } from "../shared/schedule";
import { rememberedName } from "../shared/object-name";
import { parsePartitionName } from "../shared/names";
import { detectDurability } from "../shared/durability";
import { readConfig } from "../shared/read-config";
import { Consumers, type PartitionIdentity } from "./consumers";
import { registryStub } from "../registry/stub";
import { PartitionTelemetry } from "./telemetry";
import { isOutOfMemory, logFault, logOverload } from "../shared/platform-faults";

/** Segments deleted per purge step (one alarm run). */
const PURGE_PAGE = 256;

const REJECT_CODE: Record<RejectReason, number> = {
  "missing-producer-id": ErrorCode.INVALID_PRODUCER_FIELDS,
  "out-of-window": ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW,
};

export class Partition extends DurableObject<Env> {
  private readonly store: PartitionStore;
  private readonly log: LogStore;
  private readonly producerStore: ProducerStore;
  private readonly schedule: Schedule;
  private readonly producers = new ProducerCache();
  private lastSeq: number;
  private readonly leaderEpoch: number;
  private deleted: boolean;
  private durability: number = Durability.LOCAL;
  private readonly consumers: Consumers;
  private registered: boolean;
  private registering: Promise<void> | null = null;
  /** Counters for /metrics and usage metering (telemetry.ts). */
  private readonly telemetry: PartitionTelemetry;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    this.store = new PartitionStore(ctx.storage);
    this.schedule = new Schedule(ctx.storage);
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
      firstSeq: () => this.log.firstSequence(),
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
      nonIdempotent: () => this.meta("non_idempotent"),
    });
    void ctx.blockConcurrencyWhile(async () => {
      this.durability = await detectDurability(ctx.storage);
    });
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
    return this.appendNow(batch);
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
      const live = await registryStub(this.env, tenant).registerPartition(incarnation, topicId, partition);
      if (live) {
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
    const n = frames.length;
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
    });
    const status = new Uint8Array(n);
    const sequences = new Float64Array(n);
    const codes = new Uint16Array(n);
    const layout = new SegmentLayout();
    let off = 0;
    let valueBytes = 0, storedBytes = 0, duplicates = 0;
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
      storedBytes += frames[i].key.length + frames[i].value.length;
      layout.add(o.sequence, start, off);
    }
    if (plan.appended) {
      try {
        const ts = Date.now();
        this.ctx.storage.transactionSync(() => {
          this.log.appendSegments(batch, layout.segments, ts);
          if (plan.producerAppends.length) {
            this.producerStore.commit(plan.producerAppends, plan.producers, (pid) => this.producers.get(pid)?.highest);
          }
          if (plan.nonIdempotent) this.setMeta("non_idempotent", this.meta("non_idempotent") + plan.nonIdempotent);
        });
      } catch (e) {
        return this.commitFailed(n, e);
      }
      // Same synchronous turn as the commit above: the counts are stored with it.
      this.telemetry.published(plan.appended, valueBytes, storedBytes, duplicates);
      for (const [pid, st] of plan.producers) this.producers.set(pid, st);
      this.lastSeq = plan.lastSequence;
      this.consumers.appended();
    } else if (duplicates > 0) {
      this.telemetry.published(0, 0, 0, duplicates); // nothing else to commit: the count waits in memory (≤ one flush interval)
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
    const msg = String((e as Error)?.message ?? e);
    if (/SQLITE_FULL|database or disk is full/i.test(msg)) return this.failed(n, ErrorCode.STORAGE_FULL, "append failed: storage full, nothing was appended");
    if (isOutOfMemory(e)) {
      logOverload("Partition", e);
      return this.failed(n, ErrorCode.BACKPRESSURE, "append failed: broker out of memory, nothing was appended; retry later");
    }
    return this.failed(n, ErrorCode.STORAGE_UNAVAILABLE, `append failed: storage unavailable, nothing was appended (ref ${logFault("Partition", e)})`);
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
   * What `/stats` shows of this partition: high watermark, retained bytes
   * (keys + values), idempotent producers with dedupe state, and each
   * group's committed floor and in-flight deliveries (docs/operations.md).
   */
  stats(): PartitionStats {
    return {
      highWatermark: this.lastSeq,
      sizeBytes: this.telemetry.storedBytes(),
      producers: this.producerStore.count(),
      groups: this.consumers.info().map((g) => ({ group: g.group, committedFloor: Math.max(0, g.ackFloor - 1), inFlight: g.inFlight })),
    };
  }

  /** Counters and positions of this partition, and of every consumer group at it. */
  info(): PartitionInfo {
    return {
      leaderEpoch: this.leaderEpoch,
      firstSequence: this.log.firstSequence(),
      lastSequence: this.lastSeq,
      records: this.log.count(),
      nonIdempotentPublishes: this.meta("non_idempotent"),
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
    let stored = 0;
    for (let i = 0, off = 0; i < n; i++) {
      const start = off;
      off += frameSize(frames[i]!);
      stored += frames[i]!.key.length + frames[i]!.value.length;
      layout.add(first + i, start, off);
    }
    try {
      const ts = Date.now();
      this.ctx.storage.transactionSync(() => this.log.appendSegments(batch, layout.segments, ts));
      this.telemetry.stored(stored);
    } catch (e) {
      return this.commitFailed(n, e);
    }
    this.lastSeq += n;
    if (n > 0) this.consumers.appended();
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
  async assign(group: string, epoch: number, owner: OwnerRef | null, startPolicy: number): Promise<AssignResult> {
    await this.register();
    return this.consumers.assign(group, epoch, owner, startPolicy);
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
   * Marks the partition's topic as deleted: appends are refused from now on
   * (TOPIC_DELETED) and the stored records are purged in pages by the alarm.
   * The deleted marker itself stays, so a late append never revives the log.
   * Idempotent.
   */
  async markDeleted(): Promise<void> {
    if (!this.deleted) {
      this.deleted = true;
      this.setMeta("deleted", 1);
      this.setMeta("last_seq", this.lastSeq);
      this.producers.clear();
    }
    await this.schedule.set("purge", Date.now());
  }

  /** Runs due jobs from the schedule table: "purge", "telemetry" (report counters), and the read path's "deadlines" and "dlq". */
  override async alarm(): Promise<void> {
    const now = Date.now();
    for (const job of this.schedule.due(now)) {
      if (await this.consumers.runJob(job, now)) continue;
      if (job === "purge") {
        const deleted = this.ctx.storage.transactionSync(() => this.store.purgePage(PURGE_PAGE));
        if (deleted < PURGE_PAGE) this.schedule.clear("purge");
        else this.schedule.put("purge", now);
        this.telemetry.purged();
      } else if (job === "telemetry") {
        await this.telemetry.flush();
      } else {
        this.schedule.clear(job);
      }
    }
    await this.schedule.rearm();
  }
}
