/**
 * Idempotent-producer dedupe rules (spec §2.1, DESIGN.md §4), pure.
 *
 * Per (topic_id, partition, producer_id) the broker remembers the producer_seq
 * values of the last PRODUCER_DEDUPE_WINDOW (1024) sequence numbers below and
 * including the highest seen, i.e. the window is `(highest − 1024, highest]`.
 *
 * - producer_id = 0, producer_seq = 0: non-idempotent publish (never deduped).
 * - producer_id = 0, producer_seq > 0: rejected (PRODUCER_ID_REQUIRED, 0x0013).
 * - seq > highest (or first seq of the producer): new — gaps are accepted.
 * - seq inside the window: a duplicate if that seq was stored (answer with
 *   the ORIGINAL sequence), otherwise new (it fills an earlier gap).
 * - seq ≤ highest − 1024: outside the window → PRODUCER_SEQ_OUT_OF_WINDOW.
 *
 * The window itself is not a separate structure: every idempotent record
 * keeps (producer_id, producer_seq) in its log row (indexed), so the
 * producer state commits in the same transaction as the append, and a
 * failed append leaves no trace.
 */

/** Number of producer_seq values per producer that are remembered for dedupe. */
export const DEDUPE_WINDOW = 1024n;

/** How a (producer_id, producer_seq) must be treated before looking at storage. */
export type SeqClass =
  /** producer_id = 0 and producer_seq = 0: append, never deduped. */
  | "non-idempotent"
  /** producer_id = 0 and producer_seq > 0: reject. */
  | "missing-producer-id"
  /** Above the highest seen (or first): append. */
  | "new"
  /** Inside the window: a duplicate if stored, otherwise append. */
  | "in-window"
  /** At or below highest − window: reject. */
  | "out-of-window";

/**
 * Classifies a producer_seq against the producer's highest seen seq
 * (`undefined` when the producer has never appended to this partition).
 */
export function classifyProducerSeq(
  producerId: bigint,
  producerSeq: bigint,
  highest: bigint | undefined,
  window: bigint = DEDUPE_WINDOW,
): SeqClass {
  if (producerId === 0n) return producerSeq === 0n ? "non-idempotent" : "missing-producer-id";
  if (highest === undefined || producerSeq > highest) return "new";
  return highest - producerSeq < window ? "in-window" : "out-of-window";
}

/**
 * Bounded in-memory cache producer_id → highest producer_seq seen, so the
 * common case (a new, increasing seq) needs no storage read. Evicts the
 * least recently used producer beyond `capacity`; an evicted producer is
 * reloaded from storage on its next append.
 */
export class HighestSeqCache {
  private readonly map = new Map<bigint, bigint>();

  constructor(readonly capacity = 4096) {}

  /** Highest seq cached for `producerId`, or undefined if not cached. */
  get(producerId: bigint): bigint | undefined {
    const v = this.map.get(producerId);
    if (v !== undefined) {
      this.map.delete(producerId);
      this.map.set(producerId, v);
    }
    return v;
  }

  /** Records `seq` as the highest for `producerId` (callers only raise it). */
  set(producerId: bigint, seq: bigint): void {
    this.map.delete(producerId);
    this.map.set(producerId, seq);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as bigint;
      this.map.delete(oldest);
    }
  }

  /** Forgets everything (e.g. after a purge). */
  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
