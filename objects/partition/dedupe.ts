/**
 * Idempotent-producer dedupe rules (spec §2.1, DESIGN.md §4,
 * docs/protocol.md "Idempotent producers"), pure.
 *
 * Per (topic_id, partition, producer_id): `highest` = the highest
 * producer_seq appended, and the window = the producer_seq VALUES in
 * (highest − W, highest] (W = PRODUCER_DEDUPE_WINDOW = 1024). For every value
 * in the window the state records exactly whether it was appended (a ring
 * bitmap of W bits, bit `seq mod W`).
 *
 * - producer_id = 0, producer_seq = 0: non-idempotent, never deduped.
 * - producer_id = 0, producer_seq > 0: INVALID_PRODUCER_FIELDS (0x0013).
 * - first seq of a producer, or seq > highest (gaps too): append; the window
 *   slides up to the new highest.
 * - seq in the window and appended: duplicate → the ORIGINAL sequence.
 * - seq in the window and NOT appended (refused with BACKPRESSURE, a failed
 *   call, a gap left by pipelining): append ("gap fill"), `highest` unchanged.
 * - seq ≤ highest − W (older than the window): PRODUCER_SEQ_OUT_OF_WINDOW (0x0014).
 *
 * So any interleaving of retries within the window appends each seq exactly
 * once. Producer state (producer-store.ts) commits in the same transaction
 * as the append, so a failed append leaves no trace.
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";

/** How a (producer_id, producer_seq) must be treated. */
export type SeqClass =
  /** producer_id = 0 and producer_seq = 0: append, never deduped. */
  | "non-idempotent"
  /** producer_id = 0 and producer_seq > 0: reject. */
  | "missing-producer-id"
  /** Above the highest appended (or first of the producer): append, raising `highest`. */
  | "new"
  /** In the window, never appended: append ("gap fill"), `highest` unchanged. */
  | "gap"
  /** In the window and appended: a duplicate. */
  | "duplicate"
  /** At or below highest − window: refuse (PRODUCER_SEQ_OUT_OF_WINDOW). */
  | "out-of-window";

/**
 * Committed dedupe state of one producer: the highest appended seq and a
 * ring bitmap of ceil(window / 8) bytes, bit `seq mod window` set when that
 * seq (within (highest − window, highest]) was appended.
 */
export interface ProducerState {
  highest: bigint;
  seen: Uint8Array;
}

/** Bytes of the `seen` bitmap for a window. */
export function bitmapBytes(window = PRODUCER_DEDUPE_WINDOW): number {
  return Math.ceil(window / 8);
}

const DEFAULT_W = BigInt(PRODUCER_DEDUPE_WINDOW);

/** The window as a bigint (no allocation for the default window). */
function big(window: number): bigint {
  return window === PRODUCER_DEDUPE_WINDOW ? DEFAULT_W : BigInt(window);
}

function bit(seq: bigint, window: number): number {
  return Number(seq % big(window));
}

function isSet(seen: Uint8Array, i: number): boolean {
  return (seen[i >>> 3]! & (1 << (i & 7))) !== 0;
}

/**
 * Classifies `producerSeq` against the producer's committed state
 * (`undefined` when the producer never appended to this partition).
 */
export function classifyProducerSeq(
  producerId: bigint, producerSeq: bigint, state: ProducerState | undefined, window = PRODUCER_DEDUPE_WINDOW,
): SeqClass {
  if (producerId === 0n) return producerSeq === 0n ? "non-idempotent" : "missing-producer-id";
  if (state === undefined || producerSeq > state.highest) return "new";
  if (producerSeq <= state.highest - big(window)) return "out-of-window";
  return isSet(state.seen, bit(producerSeq, window)) ? "duplicate" : "gap";
}

/**
 * Records that `producerSeq` was appended (class "new" or "gap"), MUTATING
 * `state` (pass a copy of committed state: cloneState). Returns the state,
 * or a new one for a producer's first append.
 */
export function recordAppend(state: ProducerState | undefined, producerSeq: bigint, window = PRODUCER_DEDUPE_WINDOW): ProducerState {
  if (state === undefined) {
    const seen = new Uint8Array(bitmapBytes(window));
    const i = bit(producerSeq, window);
    seen[i >>> 3] |= 1 << (i & 7);
    return { highest: producerSeq, seen };
  }
  if (producerSeq > state.highest) {
    const d = producerSeq - state.highest;
    if (d >= big(window)) state.seen.fill(0);
    else {
      // The values entering the window (highest, producerSeq] were never appended.
      for (let s = state.highest + 1n; s <= producerSeq; s++) {
        const i = bit(s, window);
        state.seen[i >>> 3] &= ~(1 << (i & 7));
      }
    }
    state.highest = producerSeq;
  }
  const i = bit(producerSeq, window);
  state.seen[i >>> 3] |= 1 << (i & 7);
  return state;
}

/** A copy of `state` that recordAppend may mutate. */
export function cloneState(state: ProducerState): ProducerState {
  return { highest: state.highest, seen: state.seen.slice() };
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
