/**
 * Types of the Partition RPC surface (what a Session or a later consumer
 * object sees). Kept free of the class so callers import only types.
 */
import type { Retention, RetentionOverrides } from "../shared/retention-config";

/**
 * Retention settings the TopicRegistry tells a partition (at registration
 * and after each change; docs/protocol.md "Topic retention"). `overrides`
 * are what its topic set — for a `.dlq` twin already layered over its
 * source's — and the partition resolves the fields still null with the
 * deployment defaults (Worker vars). A partition keeps the highest
 * `version` it was told.
 */
export interface RetentionUpdate {
  version: number;
  /** The topic's name (labels of the per-group metrics). */
  topic: string;
  overrides: RetentionOverrides;
}

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
  /** The first retained sequence (log start): the oldest stored record's, or lastSequence + 1 when none is stored. */
  firstSequence: number;
  /** Highest appended sequence (0 = nothing appended yet). */
  lastSequence: number;
  /** Stored records. */
  records: number;
  /** Keys + values of the stored records, bytes. */
  retainedBytes: number;
  /** Retention settings in force (limits per partition, 0 = unlimited), the version the registry told (−1: none yet) and the topic's name it gave. */
  retention: Retention & { version: number; topic: string };
  /** Appends with producer_id = 0 and producer_seq = 0 (exported by the metrics issue). */
  nonIdempotentPublishes: number;
  /** True once the topic was deleted (appends refused, data being purged). */
  deleted: boolean;
  durability: number;
  /** Every consumer group that ever owned this partition: ack floor, in-flight, counters. */
  groups: GroupCursorInfo[];
}

/** Answer to `Partition.stats()` (what `/stats` shows; docs/operations.md). */
export interface PartitionStats {
  /** The first retained sequence (log start; highWatermark + 1 when nothing is retained). */
  firstSequence: number;
  /** Sequence of the newest appended record (0 = nothing appended). */
  highWatermark: number;
  /** Keys + values of the retained records, bytes. */
  sizeBytes: number;
  /** Idempotent producers with dedupe state. */
  producers: number;
  /**
   * Every group with a position here: `committedFloor` = every sequence ≤ it
   * is settled (0 = none); `retentionSkipped` = records retention deleted
   * before the group settled them.
   */
  groups: { group: string; committedFloor: number; inFlight: number; retentionSkipped: number }[];
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

// ---------------------------------------------------------------- read path

/** A subscription on a session: who a delivery is for (spec §2 MSG subscription_id). */
export interface SubscriberRef {
  /** MortarSession Durable Object id (hex). */
  sessionId: string;
  subscriptionId: number;
}

/** The owner a ConsumerGroup fences a partition to. */
export interface OwnerRef extends SubscriberRef {
  memberId: number;
}

/** Answer to `Partition.assign`. */
export interface AssignResult {
  /** False when `epoch` is older than the one the partition already holds for the group (nothing changed). */
  ok: boolean;
  /** The group's ownership epoch at the partition after the call. */
  ownershipEpoch: number;
}

/** `Partition.deliver` request: take up to maxMsgs / maxBytes of deliverable records for the caller. */
export interface DeliverRequest {
  group: string;
  ownershipEpoch: number;
  caller: SubscriberRef;
  /** ≥ 1. */
  maxMsgs: number;
  /** Value bytes. */
  maxBytes: number;
  /** The first record may exceed maxBytes (nothing else is outstanding for the caller). */
  allowOversize: boolean;
  /** Extra ms added to the work deadline (a PULL that holds the records before answering). */
  holdMs: number;
  /**
   * When the answer is `drained`, what is left of this budget stands: the
   * next records are delivered at once and carried in the wake
   * (MortarSession.carry) instead of waking the caller to ask. Push mode
   * only (a PULL's budget ends with it).
   */
  carry?: boolean;
}

/**
 * Answer to `Partition.deliver`. `code` 0 = ok (possibly no records),
 * else STALE_OWNERSHIP_EPOCH / NOT_OWNER / TOPIC_DELETED and nothing was
 * delivered. Records are returned as encoded MSG frames (spec §2) back to
 * back, plus per-record arrays for the caller's credit accounting.
 */
export interface DeliverResult {
  code: number;
  message?: string;
  /** MSG frames, in delivery order. */
  frames: Uint8Array;
  sequences: Float64Array;
  deliveryIds: Float64Array;
  /** Value bytes per record. */
  sizes: Uint32Array;
  /** When nothing was delivered because the next record's value is larger than maxBytes: its size; else 0. */
  blockedBytes: number;
  /**
   * True when these records were all there was to deliver (no redelivery
   * waiting, nothing newer stored): the Partition wakes the caller when
   * more become deliverable, so asking again before that finds nothing.
   * Absent (older Partitions) = unknown: ask again.
   */
  drained?: boolean;
}

/** Kinds of settle operations (ACK, ACK+PROGRESS, NACK RETRY, NACK REJECT). */
export const SettleKind = { ACK: 0, PROGRESS: 1, RETRY: 2, REJECT: 3 } as const;

/** `Partition.settle` request: a batch of ACK/NACK operations of one subscriber. */
export interface SettleRequest {
  group: string;
  caller: SubscriberRef;
  kinds: Uint8Array;
  sequences: Float64Array;
  deliveryIds: Float64Array;
  ownershipEpochs: Float64Array;
}

/** Per-operation wire error code (0 = OK), in request order. */
export interface SettleResult {
  codes: Uint16Array;
}

/** One consumer group's position and counters at a partition (`Partition.info().groups`). */
export interface GroupCursorInfo {
  group: string;
  ownershipEpoch: number;
  /** Owner member id, 0 when none. */
  ownerMemberId: number;
  /** Lowest unsettled sequence: everything below it is settled (the committed position). */
  ackFloor: number;
  /** Next sequence never delivered to the group. */
  nextSequence: number;
  /** Deliveries awaiting ACK/NACK. */
  inFlight: number;
  /** Awaiting redelivery (NACK RETRY or expired). */
  pendingRedelivery: number;
  /** Awaiting the append to the `.dlq` twin. */
  pendingDeadLetter: number;
  delivered: number;
  acked: number;
  redelivered: number;
  deadLettered: number;
  /** Records retention deleted before the group settled them (docs/protocol.md "Topic retention"). */
  retentionSkipped: number;
}

/** Answer to `Partition.groupStatus(group)` (group describe, docs/groups.md). */
export interface GroupStatus {
  /** Sequence of the newest record (0 = none). */
  highWatermark: number;
  /** The group's position and counters here; null when it never owned the partition. */
  cursor: GroupCursorInfo | null;
  /** The group is paused here until then (unix ms); null = not paused. */
  pausedUntil: number | null;
}
