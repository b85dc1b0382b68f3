/**
 * Idempotent-producer dedupe rules (spec §2.1, DESIGN.md §4,
 * docs/protocol.md "Idempotent producers"), pure.
 *
 * Per (topic_id, partition, producer_id): `highest` = the highest
 * producer_seq appended; the window = the last PRODUCER_DEDUPE_WINDOW (1024)
 * producer_seq values appended. Appends only ever raise `highest`, so the
 * window is the 1024 largest appended values.
 *
 * - producer_id = 0, producer_seq = 0: non-idempotent, never deduped.
 * - producer_id = 0, producer_seq > 0: INVALID_PRODUCER_FIELDS (0x0013).
 * - first seq of a producer, or seq > highest (gaps too): append.
 * - seq ≤ highest and in the window: duplicate → the ORIGINAL sequence.
 * - seq ≤ highest and not in the window (older than the last 1024 appends,
 *   or a skipped value): PRODUCER_SEQ_OUT_OF_WINDOW (0x0014).
 *
 * Producer state (producer-store.ts) commits in the same transaction as
 * the append, so a failed append leaves no trace.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";

/** How a (producer_id, producer_seq) must be treated before looking at storage. */
export type SeqClass =
  /** producer_id = 0 and producer_seq = 0: append, never deduped. */
  | "non-idempotent"
  /** producer_id = 0 and producer_seq > 0: reject. */
  | "missing-producer-id"
  /** Above the highest appended (or first of the producer): append. */
  | "new"
  /** At or below the highest: a duplicate if appended within the window, else out of window. */
  | "seen-range";

/**
 * Classifies a producer_seq against the producer's highest appended seq
 * (`undefined` when the producer never appended to this partition).
 */
export function classifyProducerSeq(producerId: bigint, producerSeq: bigint, highest: bigint | undefined): SeqClass {
  if (producerId === 0n) return producerSeq === 0n ? "non-idempotent" : "missing-producer-id";
  if (highest === undefined || producerSeq > highest) return "new";
  return "seen-range";
}

/**
 * Committed dedupe state of one producer. `ordinal` counts the producer's
 * appends to this partition (1, 2, 3, …); the record with ordinal o is in
 * the window while o > ordinal − window.
 */
export interface ProducerState {
  highest: bigint;
  ordinal: number;
}

/** True when the append with `ordinal` is among the last `window` appends of a producer now at `latest`. */
export function inWindow(ordinal: number, latest: number, window = PRODUCER_DEDUPE_WINDOW): boolean {
  return ordinal > latest - window;
}

/**
 * Bounded in-memory LRU cache producer_id → ProducerState, so the common
 * case (a new, increasing seq) needs no storage read. A producer evicted
 * beyond `capacity` is reloaded from storage on its next append.
 */
export class ProducerCache {
  private readonly map = new Map<bigint, ProducerState>();

  constructor(readonly capacity = 4096) {}

  /** Cached state of `producerId`, or undefined. */
  get(producerId: bigint): ProducerState | undefined {
    const v = this.map.get(producerId);
    if (v !== undefined) {
      this.map.delete(producerId);
      this.map.set(producerId, v);
    }
    return v;
  }

  /** Caches committed state for `producerId`. */
  set(producerId: bigint, state: ProducerState): void {
    this.map.delete(producerId);
    this.map.set(producerId, state);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as bigint);
  }

  /** Forgets everything (e.g. after a purge). */
  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
