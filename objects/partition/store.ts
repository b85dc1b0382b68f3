/**
 * The SQLite storage of one Partition, opened in one place. The SQL lives
 * with the tables it serves:
 * - log-store.ts: `log`, `log_chunk` (the records, in segments);
 * - producer-store.ts: `producer_window`, `producer_appends` (dedupe);
 * - ledger-store.ts: `consumer_groups`, `deliveries` (the read path; opened
 *   by consumers.ts);
 * - retention-store.ts: `retention_settings` (what the registry told it);
 * - here: `partition_meta(k, v)` — `leader_epoch` (starts of the object),
 *   `last_seq` (kept once records may be deleted: purge, retention), `deleted`,
 *   `registered` (with the TopicRegistry), `delivery_epoch` (consumers.ts),
 *   `log_count` / `log_bytes` / `log_through` / `non_idempotent` (the log
 *   totals and the PUB counter, checkpointed by log-store.ts).
 */
import { MetaTable } from "../shared/meta-table";
import { LogStore, ensureLogSchema } from "./log-store";
import { ProducerStore, ensureProducerSchema } from "./producer-store";
import { RetentionSettingsStore } from "./retention-store";

export class PartitionStore {
  readonly log: LogStore;
  readonly producers: ProducerStore;
  readonly retention: RetentionSettingsStore;
  /** `partition_meta`: numeric values, 0 when unset. */
  readonly meta: MetaTable;

  /** Creates the tables if missing (migrating older producer tables, producer-store.ts; summing the log totals once, log-store.ts). */
  constructor(storage: DurableObjectStorage) {
    const sql = storage.sql;
    ensureLogSchema(sql);
    ensureProducerSchema(storage);
    this.meta = new MetaTable(sql, "partition_meta");
    this.log = new LogStore(sql, this.meta);
    this.producers = new ProducerStore(sql);
    this.retention = new RetentionSettingsStore(sql);
  }

  /**
   * One page of the purge of a deleted topic: deletes up to `limit` of the
   * oldest segments and, once the log is empty, every producer's dedupe
   * state. Returns the segments deleted (fewer than `limit` = done). Call
   * inside `transactionSync`.
   */
  purgePage(limit: number): number {
    const deleted = this.log.deleteOldest(limit);
    if (deleted < limit) this.producers.clear();
    return deleted;
  }
}
