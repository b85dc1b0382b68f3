/**
 * Append planning for one batch of PUB records, pure (DESIGN.md §4; rules in
 * dedupe.ts).
 *
 * Given the partition's last sequence and read-only lookups into committed
 * producer state, decides for every record of the batch, in order, whether
 * it is appended (at which sequence), a duplicate (of which stored
 * sequence) or rejected. Nothing is written here: the Partition persists
 * the plan in one transaction and only then caches the new producer states,
 * so a failed append reserves nothing. Duplicates within the batch are found too.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";
import { classifyProducerSeq, inWindow, type ProducerState } from "./dedupe";

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

/** A committed idempotent append, as found by `ProducerLookups.stored`. */
export interface StoredAppend {
  /** Partition sequence of the record. */
  sequence: number;
  /** The producer's append ordinal of the record. */
  ordinal: number;
}

/** An idempotent append planned by this batch (to be stored with it). */
export interface ProducerAppend extends StoredAppend {
  producerId: bigint;
  producerSeq: bigint;
}

/** Read-only view of committed producer state. */
export interface ProducerLookups {
  /** Committed state of the producer, or undefined if it never appended. */
  state(producerId: bigint): ProducerState | undefined;
  /** The committed append with this (producer_id, producer_seq), if any (pruned ones may be missing). */
  stored(producerId: bigint, producerSeq: bigint): StoredAppend | undefined;
}

/** Result of planning a batch. */
export interface AppendPlan {
  outcomes: RecordOutcome[];
  /** New state of every producer that appended (apply after commit). */
  producers: Map<bigint, ProducerState>;
  /** Idempotent appends, in order. */
  producerAppends: ProducerAppend[];
  /** Records to append (outcomes of kind "append"). */
  appended: number;
  /** Appended records with producer_id = 0 and producer_seq = 0. */
  nonIdempotent: number;
  /** Last sequence after the batch commits. */
  lastSequence: number;
}

/**
 * Plans `records` on top of `lastSequence` (the partition's last committed
 * sequence; 0 when empty).
 */
export function planAppend(
  records: readonly PlanInput[],
  lastSequence: number,
  lookups: ProducerLookups,
  window = PRODUCER_DEDUPE_WINDOW,
): AppendPlan {
  const outcomes: RecordOutcome[] = new Array(records.length);
  const producers = new Map<bigint, ProducerState>();
  const producerAppends: ProducerAppend[] = [];
  let local: Map<bigint, Map<bigint, StoredAppend>> | undefined;
  let seq = lastSequence;
  let nonIdempotent = 0;
  for (let i = 0; i < records.length; i++) {
    const { producerId: pid, producerSeq: pseq } = records[i];
    const known = pid === 0n ? undefined : producers.get(pid) ?? lookups.state(pid);
    const cls = classifyProducerSeq(pid, pseq, known?.highest);
    if (cls === "missing-producer-id") {
      outcomes[i] = { kind: "reject", reason: cls };
      continue;
    }
    if (cls === "seen-range") {
      const found = local?.get(pid)?.get(pseq) ?? lookups.stored(pid, pseq);
      outcomes[i] = found && inWindow(found.ordinal, known!.ordinal, window)
        ? { kind: "duplicate", sequence: found.sequence }
        : { kind: "reject", reason: "out-of-window" };
      continue;
    }
    outcomes[i] = { kind: "append", sequence: ++seq };
    if (cls === "non-idempotent") {
      nonIdempotent++;
      continue;
    }
    const ordinal = (known?.ordinal ?? 0) + 1;
    producers.set(pid, { highest: pseq, ordinal });
    producerAppends.push({ producerId: pid, producerSeq: pseq, sequence: seq, ordinal });
    local ??= new Map();
    let mine = local.get(pid);
    if (!mine) local.set(pid, (mine = new Map()));
    mine.set(pseq, { sequence: seq, ordinal });
  }
  return { outcomes, producers, producerAppends, appended: seq - lastSequence, nonIdempotent, lastSequence: seq };
}
