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
import { classifyProducerSeq, cloneState, recordAppend, type ProducerState } from "./dedupe";

/** The fields of a record that planning needs. */
export interface PlanInput {
  producerId: bigint;
  producerSeq: bigint;
}

/**
 * Why a record is refused (mapped to a wire error code by the caller).
 * "full": the partition is at its retention limit and refuses new records
 * (discard = new); nothing is recorded for it, so a later retry of the same
 * producer_seq is appended once there is room.
 */
export type RejectReason = "missing-producer-id" | "out-of-window" | "full";

/** The decision for one record. `sequence` is a per-partition sequence (≥ 1). */
export type RecordOutcome =
  | { kind: "append"; sequence: number }
  | { kind: "duplicate"; sequence: number }
  | { kind: "reject"; reason: RejectReason };

/** An idempotent append planned by this batch (to be stored with it). */
export interface ProducerAppend {
  producerId: bigint;
  producerSeq: bigint;
  /** Partition sequence of the record. */
  sequence: number;
}

/** Read-only view of committed producer state. */
export interface ProducerLookups {
  /** Committed state of the producer, or undefined if it never appended. */
  state(producerId: bigint): ProducerState | undefined;
  /** Partition sequence of the committed append (producer_id, producer_seq), if stored. */
  stored(producerId: bigint, producerSeq: bigint): number | undefined;
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
 * sequence; 0 when empty). Committed states from `lookups` are never
 * mutated (the plan works on copies). `admit(i)`, when given, is asked for
 * every record that would be appended (not for duplicates or rejects), in
 * order; false refuses it as "full" (retention discard = new).
 */
export function planAppend(
  records: readonly PlanInput[],
  lastSequence: number,
  lookups: ProducerLookups,
  window = PRODUCER_DEDUPE_WINDOW,
  admit?: (index: number) => boolean,
): AppendPlan {
  const outcomes: RecordOutcome[] = new Array(records.length);
  const producers = new Map<bigint, ProducerState>();
  const producerAppends: ProducerAppend[] = [];
  let local: Map<bigint, Map<bigint, number>> | undefined;
  let seq = lastSequence;
  let nonIdempotent = 0;
  for (let i = 0; i < records.length; i++) {
    const { producerId: pid, producerSeq: pseq } = records[i];
    const known = pid === 0n ? undefined : producers.get(pid) ?? lookups.state(pid);
    const cls = classifyProducerSeq(pid, pseq, known, window);
    if (cls === "missing-producer-id" || cls === "out-of-window") {
      outcomes[i] = { kind: "reject", reason: cls };
      continue;
    }
    if (cls === "duplicate") {
      const original = local?.get(pid)?.get(pseq) ?? lookups.stored(pid, pseq);
      // The bitmap says appended; its stored entry is kept while in the window. Never append twice.
      outcomes[i] = original !== undefined ? { kind: "duplicate", sequence: original } : { kind: "reject", reason: "out-of-window" };
      continue;
    }
    if (admit && !admit(i)) {
      outcomes[i] = { kind: "reject", reason: "full" };
      continue;
    }
    outcomes[i] = { kind: "append", sequence: ++seq };
    if (cls === "non-idempotent") {
      nonIdempotent++;
      continue;
    }
    const working = producers.get(pid) ?? (known === undefined ? undefined : cloneState(known));
    producers.set(pid, recordAppend(working, pseq, window));
    producerAppends.push({ producerId: pid, producerSeq: pseq, sequence: seq });
    local ??= new Map();
    let mine = local.get(pid);
    if (!mine) local.set(pid, (mine = new Map()));
    mine.set(pseq, seq);
  }
  return { outcomes, producers, producerAppends, appended: seq - lastSequence, nonIdempotent, lastSequence: seq };
}
