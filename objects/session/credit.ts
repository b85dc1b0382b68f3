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
  private readonly deliveries = new Map<string, { deliveryId: number; bytes: number }>();

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

  /** A delivery was sent to the client. */
  delivered(partition: number, seq: number, deliveryId: number, bytes: number): void {
    const key = `${partition}:${seq}`;
    const old = this.deliveries.get(key);
    if (old) this.take(old.bytes);
    this.deliveries.set(key, { deliveryId, bytes });
    this.outstanding.count++;
    this.outstanding.bytes += bytes;
  }

  /** ACK (not PROGRESS) or NACK of a delivery: returns its credit when it is the outstanding one. */
  settled(partition: number, seq: number, deliveryId: number): boolean {
    const key = `${partition}:${seq}`;
    const d = this.deliveries.get(key);
    if (!d || d.deliveryId !== deliveryId) return false;
    this.deliveries.delete(key);
    this.take(d.bytes);
    return true;
  }

  /** The subscription gave up a partition: its outstanding deliveries no longer count. */
  dropPartition(partition: number): void {
    const prefix = `${partition}:`;
    for (const [k, d] of this.deliveries) {
      if (!k.startsWith(prefix)) continue;
      this.deliveries.delete(k);
      this.take(d.bytes);
    }
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
