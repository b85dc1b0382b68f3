/**
 * Unsettled deliveries of one consumer group as runs (docs/protocol.md
 * "Read path" → Storage), pure: the storage encoding of a GroupLedger's
 * `pending` map (ledger.ts), so that recording and settling deliveries
 * costs one row per call, not one per message.
 *
 * A run is a range of consecutive sequences [start, end] whose deliveries
 * share attempt, work deadline, state and reason and whose delivery ids
 * are consecutive too (`id` is the delivery id of `start`; sequence s has
 * id + (s − start)). One `deliver` call hands out ids in sequence order
 * with one deadline, so a call's deliveries form one run; an ACK in the
 * middle splits a run in two, an ACK of its first or last sequence
 * shrinks it, and settled sequences below every run are simply absent:
 * the ack floor moves without a row per message.
 *
 * Encoding: an array of [start, end, id, attempt, deadline, state, reason]
 * tuples ascending by start (JSON text in the group's row while there are
 * at most INLINE_RUNS of them, else one `delivery_runs` row per run).
 */
import type { PendingDelivery } from "./ledger";

/** One run: [start, end, id of start, attempt, deadline (unix ms), state (DeliveryState), reason (DeadLetterReason or 0)]. */
export type DeliveryRun = [number, number, number, number, number, number, number];

/** Runs kept inline in the group's row (`consumer_groups.runs`); more spill to `delivery_runs`. */
export const INLINE_RUNS = 8;

/**
 * The runs covering `pending` (any order), ascending by start, each as
 * long as possible. Cost: O(n) for n pending deliveries given in ascending
 * order (a GroupLedger's `pending` map is: deliveries are added at `next`),
 * else O(n log n).
 */
export function toRuns(pending: Iterable<PendingDelivery>): DeliveryRun[] {
  const all = [...pending];
  for (let i = 1; i < all.length; i++) {
    if (all[i]!.seq < all[i - 1]!.seq) {
      all.sort((a, b) => a.seq - b.seq);
      break;
    }
  }
  const out: DeliveryRun[] = [];
  let r: DeliveryRun | null = null;
  for (const d of all) {
    if (r && d.seq === r[1] + 1 && d.deliveryId === r[2] + (d.seq - r[0]) && d.attempt === r[3] && d.deadline === r[4] && d.state === r[5] && d.reason === r[6]) {
      r[1] = d.seq;
      continue;
    }
    r = [d.seq, d.seq, d.deliveryId, d.attempt, d.deadline, d.state, d.reason];
    out.push(r);
  }
  return out;
}

/** Every delivery of `runs` (the inverse of toRuns), lowest sequence first. */
export function* fromRuns(runs: readonly DeliveryRun[]): Generator<PendingDelivery> {
  for (const [start, end, id, attempt, deadline, state, reason] of runs) {
    for (let s = start; s <= end; s++) yield { seq: s, deliveryId: id + (s - start), attempt, deadline, state, reason };
  }
}

/**
 * Parses runs stored as JSON text (`consumer_groups.runs`).
 * @throws SyntaxError when the text is not JSON; entries that are not 7-number tuples are skipped
 */
export function decodeRuns(text: string): DeliveryRun[] {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v)) return [];
  return v.filter((r): r is DeliveryRun => Array.isArray(r) && r.length === 7 && r.every((x) => typeof x === "number"));
}
