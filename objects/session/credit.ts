/**
 * A push subscription's credit window (spec §2 SUB credit_count /
 * credit_bytes, CREDIT; docs/protocol.md "Credit"), pure.
 *
 * The window bounds what is outstanding: delivered to the client and not
 * yet ACKed or NACKed. Bytes are value bytes. `reserved` is what deliver
 * calls in flight may still bring. A delivery of (partition, seq) replaces
 * an older outstanding delivery of the same record (a redelivery to the
 * same subscription is counted once); an ACK/NACK returns credit only when
 * it names the outstanding delivery id. ACK with PROGRESS returns nothing.
 *
 * Never exceeded, with one exception: when nothing is outstanding or
 * reserved, one record larger than the byte window may be delivered
 * (`idle()`), so a big message cannot wedge a consumer.
 */
import { DEFAULT_CREDIT_BYTES, DEFAULT_CREDIT_COUNT, MAX_CREDIT_BYTES, MAX_CREDIT_COUNT } from "../../wire/mortar/constants";
import { ErrorCode } from "../../wire/mortar/errors";

/** Outstanding-or-reserved amounts. */
export interface Amount {
  count: number;
  bytes: number;
}

export class CreditWindow {
  count: number;
  bytes: number;
  /** Bumped by every accepted CREDIT. */
  epoch = 0;
  readonly outstanding: Amount = { count: 0, bytes: 0 };
  readonly reserved: Amount = { count: 0, bytes: 0 };
  /** partition → sequence → the outstanding delivery of that record. */
  private readonly deliveries = new Map<number, Map<number, { deliveryId: number; bytes: number; ownershipEpoch: number }>>();

  /** Initial window from SUB (0 = the default 256 messages / 2 MiB); values above the maximum are clamped. */
  constructor(count: number, bytes: number) {
    this.count = Math.min(count || DEFAULT_CREDIT_COUNT, MAX_CREDIT_COUNT);
    this.bytes = Math.min(bytes || DEFAULT_CREDIT_BYTES, MAX_CREDIT_BYTES);
  }

  /** CREDIT SET: replaces the window (0 = default). Returns 0 or CREDIT_LIMIT_EXCEEDED (nothing changed). */
  set(count: number, bytes: number): number {
    return this.apply(count || DEFAULT_CREDIT_COUNT, bytes || DEFAULT_CREDIT_BYTES);
  }

  /** CREDIT ADD: grows the window. Returns 0 or CREDIT_LIMIT_EXCEEDED (nothing changed). */
  add(count: number, bytes: number): number {
    return this.apply(this.count + count, this.bytes + bytes);
  }

  /** Room left: window − outstanding − reserved (may be ≤ 0 after the window shrank). */
  available(): Amount {
    return {
      count: this.count - this.outstanding.count - this.reserved.count,
      bytes: this.bytes - this.outstanding.bytes - this.reserved.bytes,
    };
  }

  /** Nothing outstanding or reserved: one oversized record may go. */
  idle(): boolean {
    return this.outstanding.count === 0 && this.reserved.count === 0;
  }

  reserve(count: number, bytes: number): void {
    this.reserved.count += count;
    this.reserved.bytes += bytes;
  }

  unreserve(count: number, bytes: number): void {
    this.reserved.count -= count;
    this.reserved.bytes -= bytes;
  }

  /** A delivery (made under `ownershipEpoch`) was sent to the client. */
  delivered(partition: number, seq: number, deliveryId: number, bytes: number, ownershipEpoch = 0): void {
    let byP = this.deliveries.get(partition);
    if (!byP) this.deliveries.set(partition, (byP = new Map()));
    const old = byP.get(seq);
    if (old) this.take(old.bytes);
    byP.set(seq, { deliveryId, bytes, ownershipEpoch });
    this.outstanding.count++;
    this.outstanding.bytes += bytes;
  }

  /**
   * ACK (not PROGRESS) or NACK of a delivery: returns its credit when it is
   * the outstanding one. With `ownershipEpoch` (a client's ACK/NACK) the
   * request must also carry the epoch the delivery was made under: one
   * with a stale or never-issued epoch is fenced by the Partition, and a
   * fenced request changes nothing — its credit stays taken
   * (docs/protocol.md). Without it (the Partition reports an expiry) the
   * delivery id alone decides.
   */
  settled(partition: number, seq: number, deliveryId: number, ownershipEpoch?: number): boolean {
    const byP = this.deliveries.get(partition);
    const d = byP?.get(seq);
    if (!d || d.deliveryId !== deliveryId) return false;
    if (ownershipEpoch !== undefined && d.ownershipEpoch !== ownershipEpoch) return false;
    byP!.delete(seq);
    this.take(d.bytes);
    return true;
  }

  /** The subscription gave up a partition: its outstanding deliveries no longer count. */
  dropPartition(partition: number): void {
    for (const d of this.deliveries.get(partition)?.values() ?? []) this.take(d.bytes);
    this.deliveries.delete(partition);
  }

  private take(bytes: number): void {
    this.outstanding.count--;
    this.outstanding.bytes -= bytes;
  }

  private apply(count: number, bytes: number): number {
    if (count > MAX_CREDIT_COUNT || bytes > MAX_CREDIT_BYTES) return ErrorCode.CREDIT_LIMIT_EXCEEDED;
    this.count = count;
    this.bytes = bytes;
    this.epoch++;
    return 0;
  }
}

/**
 * Splits `total` into `k` shares that add up to at most `total` (the first
 * `total % k` get one more). k ≥ 1.
 */
export function splitShares(total: number, k: number): number[] {
  const base = Math.floor(Math.max(0, total) / k);
  const extra = Math.max(0, total) % k;
  return Array.from({ length: k }, (_, i) => base + (i < extra ? 1 : 0));
}

/** One deliver call the fetch loop should make: candidate `index`, its message and value-byte budget. */
export interface FetchBudget {
  index: number;
  count: number;
  bytes: number;
  /** This call may return one record larger than `bytes` (the big-message allowance). */
  oversize: boolean;
}

/**
 * Shares `count` messages and `bytes` value bytes among candidate
 * partitions whose next record is known not to fit below `blocked[i]`
 * bytes (0 = unknown). Counts split evenly (splitShares); bytes are handed
 * out in order, each candidate an even share of what is left — or, when
 * its blocked record is larger than that share but fits what is left,
 * exactly that record's size, so free credit is never withheld just
 * because no even share fits a record. A blocked candidate that fits
 * nothing left is skipped (no budget used), except the first candidate
 * with a count when `oversize` is set: it carries the big-message
 * allowance. Budgets never add up to more than `bytes` (≥ 0).
 */
export function planFetches(blocked: readonly number[], count: number, bytes: number, oversize: boolean): FetchBudget[] {
  const k = blocked.length;
  if (k === 0) return [];
  const counts = splitShares(count, k);
  let rest = counts.filter((c) => c > 0).length;
  let left = Math.max(0, bytes);
  const out: FetchBudget[] = [];
  for (let i = 0; i < k; i++) {
    const c = counts[i]!;
    if (c === 0) continue;
    const share = Math.floor(left / rest--);
    const need = blocked[i]!;
    let b = share;
    if (need > share && !oversize) {
      if (need > left) continue;
      b = need;
    }
    out.push({ index: i, count: c, bytes: b, oversize });
    oversize = false;
    left -= b;
  }
  return out;
}
