/**
 * Append planning for one batch of PUB records, pure (DESIGN.md §4).
 *
 * Given the partition's last sequence and read-only lookups into the
 * producer state, decides for every record of the batch, in order, whether
 * it is appended (and at which sequence), a duplicate (and of which stored
 * sequence) or rejected. Nothing is written here: the Partition persists
 * the plan in one transaction and only then applies `highest` to its cache,
 * so a failed append reserves nothing.
 */
import { classifyProducerSeq } from "./dedupe";

/** The fields of a record that planning needs. */
export interface PlanInput {
  producerId: bigint;
  producerSeq: bigint;
}

/** Why a record is refused (mapped to a wire error code by the caller). */
export type RejectReason = "missing-producer-id" | "out-of-window";

/** The decision for one record. `sequence` is a per-partition sequence (≥ 1). */
export type RecordOutcome =
  | { kind: "append"; sequence: number }
  | { kind: "duplicate"; sequence: number }
  | { kind: "reject"; reason: RejectReason };

/** Read-only view of committed producer state. */
export interface ProducerLookups {
  /** Highest producer_seq committed for the producer, or undefined if none. */
  highest(producerId: bigint): bigint | undefined;
  /** Sequence of the committed record with this (producer_id, producer_seq), if any. */
  stored(producerId: bigint, producerSeq: bigint): number | undefined;
}

/** Result of planning a batch. */
export interface AppendPlan {
  outcomes: RecordOutcome[];
  /** New highest producer_seq per producer touched by appends (apply after commit). */
  highest: Map<bigint, bigint>;
  /** Records to append (outcomes of kind "append"). */
  appended: number;
  /** Appended records with producer_id = 0 and producer_seq = 0. */
  nonIdempotent: number;
  /** Last sequence after the batch commits. */
  lastSequence: number;
}

/**
 * Plans `records` on top of `lastSequence` (the partition's last committed
 * sequence; 0 when empty). Duplicates inside the same batch are detected too.
 */
export function planAppend(records: readonly PlanInput[], lastSequence: number, lookups: ProducerLookups): AppendPlan {
  const outcomes: RecordOutcome[] = new Array(records.length);
  const highest = new Map<bigint, bigint>();
  // (producer_id → producer_seq → sequence) for records appended by this batch.
  let local: Map<bigint, Map<bigint, number>> | undefined;
  let seq = lastSequence;
  let appended = 0;
  let nonIdempotent = 0;
  for (let i = 0; i < records.length; i++) {
    const { producerId: pid, producerSeq: pseq } = records[i];
    const known = pid === 0n ? undefined : highest.has(pid) ? highest.get(pid) : lookups.highest(pid);
    const cls = classifyProducerSeq(pid, pseq, known);
    if (cls === "missing-producer-id" || cls === "out-of-window") {
      outcomes[i] = { kind: "reject", reason: cls };
      continue;
    }
    if (cls === "in-window") {
      const original = local?.get(pid)?.get(pseq) ?? lookups.stored(pid, pseq);
      if (original !== undefined) {
        outcomes[i] = { kind: "duplicate", sequence: original };
        continue;
      }
    }
    seq++;
    appended++;
    outcomes[i] = { kind: "append", sequence: seq };
    if (cls === "non-idempotent") {
      nonIdempotent++;
      continue;
    }
    if (known === undefined || pseq > known) highest.set(pid, pseq);
    local ??= new Map();
    let m = local.get(pid);
    if (!m) local.set(pid, (m = new Map()));
    m.set(pseq, seq);
  }
  return { outcomes, highest, appended, nonIdempotent, lastSequence: seq };
}
