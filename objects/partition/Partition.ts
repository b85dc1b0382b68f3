/**
 * Partition Durable Object: one per (tenant, topic incarnation, topic_id,
 * partition) — see partitionStub(). Holds the ordered log in SQLite and the
 * idempotent-producer state (DESIGN.md §3, §4; spec §2 PUB, §2.1).
 *
 * append(): decode the batch → plan (pure, dedupe) → one transactionSync →
 * reply. The reply leaves only after the commit (output gate; nothing but
 * storage is awaited between write and reply).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";
import { ErrorCode } from "../../wire/mortar/errors";
import { Durability } from "../../wire/mortar/constants";
import { readPubBatch } from "./batch";
import { HighestSeqCache } from "./dedupe";
import { LogStore, ensureLogSchema, u64Bytes, type LogRow, type StoredRecord } from "./log-store";
import { planAppend, type RejectReason } from "./plan";
import { AppendStatus, type AppendResult, type PartitionInfo } from "./rpc";
import { Schedule } from "../shared/schedule";
import { detectDurability } from "../shared/durability";

/** Records deleted per purge step (one alarm run). */
const PURGE_PAGE = 2000;

const REJECT_CODE: Record<RejectReason, number> = {
  "missing-producer-id": ErrorCode.INVALID_PRODUCER_FIELDS,
  "out-of-window": ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW,
};

export class Partition extends DurableObject<Env> {
  private readonly log: LogStore;
  private readonly schedule: Schedule;
  private readonly highest = new HighestSeqCache();
  private lastSeq: number;
  private readonly leaderEpoch: number;
  private deleted: boolean;
  private durability: number = Durability.LOCAL;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    ensureLogSchema(sql);
    sql.exec("CREATE TABLE IF NOT EXISTS partition_meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    this.schedule = new Schedule(ctx.storage);
    this.log = new LogStore(sql);
    this.leaderEpoch = ctx.storage.transactionSync(() => {
      const next = this.meta("leader_epoch") + 1;
      this.setMeta("leader_epoch", next);
      return next;
    });
    this.deleted = this.meta("deleted") === 1;
    this.lastSeq = this.log.lastSequence();
    void ctx.blockConcurrencyWhile(async () => {
      this.durability = await detectDurability(ctx.storage);
    });
  }

  private meta(k: string): number {
    for (const r of this.ctx.storage.sql.exec<{ v: number }>("SELECT v FROM partition_meta WHERE k = ?", k)) return r.v;
    return 0;
  }

  private setMeta(k: string, v: number): void {
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO partition_meta(k, v) VALUES (?, ?)", k, v);
  }

  /**
   * Appends a batch of PUB payloads (objects/partition/batch.ts format) in
   * ONE transaction and answers per record, in batch order: appended
   * (new sequence), duplicate (original sequence, nothing appended) or
   * rejected (INVALID_PRODUCER_FIELDS 0x0013 / PRODUCER_SEQ_OUT_OF_WINDOW
   * 0x0014). Whole-batch failures set `error`: TOPIC_DELETED (0x2005) after
   * the topic was deleted, MALFORMED_PAYLOAD for an undecodable batch,
   * STORAGE_FULL (0x4004) or STORAGE_UNAVAILABLE (0x600a) when the commit
   * fails — then nothing is appended and no producer state is reserved.
   * The caller validated topic, partition, key/value caps and flags.
   */
  append(batch: Uint8Array): AppendResult {
    if (this.deleted) return this.failed(0, ErrorCode.TOPIC_DELETED, "the topic was deleted");
    let frames;
    try {
      frames = readPubBatch(batch);
    } catch (e) {
      return this.failed(0, ErrorCode.MALFORMED_PAYLOAD, `append batch: ${(e as Error).message}`);
    }
    const n = frames.length;
    const plan = planAppend(frames, this.lastSeq, {
      highest: (pid) => {
        let h = this.highest.get(pid);
        if (h === undefined) {
          h = this.log.highestProducerSeq(u64Bytes(pid));
          if (h !== undefined) this.highest.set(pid, h);
        }
        return h;
      },
      stored: (pid, pseq) => this.log.sequenceOf(u64Bytes(pid), u64Bytes(pseq)),
    });
    const status = new Uint8Array(n);
    const sequences = new Float64Array(n);
    const codes = new Uint16Array(n);
    const rows: LogRow[] = [];
    const ts = Date.now();
    for (let i = 0; i < n; i++) {
      const o = plan.outcomes[i];
      if (o.kind === "reject") {
        status[i] = AppendStatus.REJECTED;
        codes[i] = REJECT_CODE[o.reason];
        continue;
      }
      sequences[i] = o.sequence;
      if (o.kind === "duplicate") {
        status[i] = AppendStatus.DUPLICATE;
        continue;
      }
      const f = frames[i];
      const idem = f.producerId !== 0n;
      rows.push({
        seq: o.sequence,
        pid: idem ? u64Bytes(f.producerId) : null,
        pseq: idem ? u64Bytes(f.producerSeq) : null,
        key: f.key,
        value: f.value,
        ts,
      });
    }
    if (rows.length) {
      try {
        this.ctx.storage.transactionSync(() => {
          this.log.append(rows);
          if (plan.nonIdempotent) this.setMeta("non_idempotent", this.meta("non_idempotent") + plan.nonIdempotent);
        });
      } catch (e) {
        const msg = String((e as Error)?.message ?? e);
        const code = /SQLITE_FULL|database or disk is full/i.test(msg) ? ErrorCode.STORAGE_FULL : ErrorCode.STORAGE_UNAVAILABLE;
        return this.failed(n, code, `append failed: ${msg}`);
      }
      for (const [pid, seq] of plan.highest) this.highest.set(pid, seq);
      this.lastSeq = plan.lastSequence;
    }
    return { leaderEpoch: this.leaderEpoch, commitSeq: this.lastSeq, durability: this.durability, status, sequences, codes };
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

  /** Counters and positions of this partition. */
  info(): PartitionInfo {
    return {
      leaderEpoch: this.leaderEpoch,
      firstSequence: this.log.firstSequence(),
      lastSequence: this.lastSeq,
      records: this.log.count(),
      nonIdempotentPublishes: this.meta("non_idempotent"),
      deleted: this.deleted,
      durability: this.durability,
    };
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
      this.highest.clear();
    }
    await this.schedule.set("purge", Date.now());
  }

  /** Runs due jobs from the schedule table (only "purge" so far). */
  override async alarm(): Promise<void> {
    const now = Date.now();
    for (const job of this.schedule.due(now)) {
      if (job === "purge") {
        const deleted = this.ctx.storage.transactionSync(() => this.log.deleteOldest(PURGE_PAGE));
        if (deleted < PURGE_PAGE) this.schedule.clear("purge");
        else this.schedule.put("purge", now);
      } else {
        this.schedule.clear(job);
      }
    }
    await this.schedule.rearm();
  }
}
