/**
 * Types of the Partition RPC surface (what a Session or a later consumer
 * object sees). Kept free of the class so callers import only types.
 */

/** Per-record status in an AppendResult. */
export const AppendStatus = { APPENDED: 0, DUPLICATE: 1, REJECTED: 2 } as const;

/**
 * Answer to `Partition.append(batch)`, one entry per record in batch order.
 * Typed arrays keep the RPC copy cheap.
 */
export interface AppendResult {
  /** Set when the whole batch failed: nothing was appended, every record gets this error. */
  error?: { code: number; message: string };
  /** Incremented every time the partition object starts (persisted). */
  leaderEpoch: number;
  /** Last committed sequence after this batch (0 = empty log). */
  commitSeq: number;
  /** Durability.LOCAL (1) under local workerd, Durability.REPLICATED (2) when deployed. */
  durability: number;
  /** AppendStatus per record. */
  status: Uint8Array;
  /** Sequence per record: the new one, the ORIGINAL one for duplicates, 0 when rejected. */
  sequences: Float64Array;
  /** Wire error code per rejected record, else 0. */
  codes: Uint16Array;
}

/** Answer to `Partition.info()`. */
export interface PartitionInfo {
  leaderEpoch: number;
  /** Lowest stored sequence (0 when empty). */
  firstSequence: number;
  /** Highest stored sequence (0 when empty). */
  lastSequence: number;
  /** Stored records. */
  records: number;
  /** Appends with producer_id = 0 and producer_seq = 0 (exported by the metrics issue). */
  nonIdempotentPublishes: number;
  /** True once the topic was deleted (appends refused, data being purged). */
  deleted: boolean;
  durability: number;
}

/** A stored record as `Partition.read` returns it. */
export interface StoredRecord {
  sequence: number;
  /** producer_id (0 for non-idempotent). */
  producerId: bigint;
  /** producer_seq (0 for non-idempotent). */
  producerSeq: bigint;
  key: Uint8Array;
  value: Uint8Array;
  /** Append time, ms since the epoch. */
  timestamp: number;
}
