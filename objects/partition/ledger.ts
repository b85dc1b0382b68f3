/**
 * One consumer group's delivery ledger at one partition (docs/protocol.md
 * "Read path"), pure: no storage, no clock.
 *
 * Position: `next` = the next sequence never delivered to the group;
 * `pending` = every delivered sequence that is not settled yet (in flight,
 * waiting for redelivery, or waiting to be dead-lettered). Everything below
 * `next` and not pending is settled, so the ack floor (committed position)
 * is min(pending) or `next`, and acks above the floor are remembered simply
 * by being absent from `pending` — memory is bounded by unsettled
 * deliveries, never by the distance from the floor.
 *
 * Ownership: `ownershipEpoch` and `owner` are set by the group's fence
 * (assign). A newer epoch puts every in-flight delivery up for redelivery
 * (the old owner can no longer ack it). Deliveries and settlements must
 * carry the current epoch (older → STALE_OWNERSHIP_EPOCH) and come from the
 * owner's subscription (else NOT_OWNER).
 *
 * The ledger records which sequences changed (`dirty`, `removed`) so the
 * Partition can persist just those rows after each call.
 */
import { ErrorCode } from "../../wire/mortar/errors";
import { DeadLetterReason } from "../../wire/mortar/dead-letter";
import { SettleKind, type OwnerRef, type SubscriberRef } from "./rpc";

/** Where an unsettled delivery stands. */
export const DeliveryState = { IN_FLIGHT: 0, RETRY: 1, DEAD: 2 } as const;

export interface PendingDelivery {
  seq: number;
  /** Id of the latest delivery (0 before the first). */
  deliveryId: number;
  /** Deliveries made so far. */
  attempt: number;
  /** Work deadline of the latest delivery (IN_FLIGHT), ms. */
  deadline: number;
  state: number; // DeliveryState
  /** DeadLetterReason when DEAD, else 0. */
  reason: number;
}

export interface LedgerCounters {
  delivered: number;
  acked: number;
  redelivered: number;
  deadLettered: number;
  /** Records retention deleted before the group settled them (never delivered, or unsettled deliveries dropped). */
  retentionSkipped: number;
}

/** What `GroupLedger.truncate` did. */
export interface Truncation {
  /** Records the group lost (counted in `retentionSkipped`). */
  skipped: number;
  /** In-flight deliveries dropped (their credit is still held by the owner's session): sequences and delivery ids. */
  inFlight: { seqs: number[]; deliveryIds: number[] };
}

/** Limits the ledger applies. */
export interface LedgerLimits {
  ackWaitMs: number;
  maxAttempts: number;
}

export class GroupLedger {
  readonly pending = new Map<number, PendingDelivery>();
  /** Sequences in RETRY state, ascending (redelivered lowest first). */
  private retryQueue: number[] = [];
  counters: LedgerCounters = { delivered: 0, acked: 0, redelivered: 0, deadLettered: 0, retentionSkipped: 0 };
  /** The owner asked for records and got none: wake it when some become deliverable. */
  waiting = true;
  /** Group row (next, epoch, owner, counters) changed. */
  metaDirty = false;
  readonly dirty = new Set<number>();
  readonly removed = new Set<number>();

  constructor(
    readonly gid: number,
    readonly name: string,
    public next: number,
    public ownershipEpoch = 0,
    public owner: OwnerRef | null = null,
  ) {}

  /** Adds a stored row (on load). */
  restore(d: PendingDelivery): void {
    this.pending.set(d.seq, d);
    if (d.state === DeliveryState.RETRY) this.retryQueue.push(d.seq);
  }

  /**
   * Sorts what restore() added. With `maxAttempts`, also repairs rows an
   * earlier version could leave behind: a delivery waiting for redelivery
   * although it had used its last attempt goes to the dead-letter twin
   * instead (marked dirty: the caller flushes and schedules the transfer).
   * Returns how many were repaired.
   */
  restored(maxAttempts = Number.MAX_SAFE_INTEGER): number {
    let repaired = 0;
    for (const d of this.pending.values()) {
      if (d.state !== DeliveryState.RETRY || d.attempt < maxAttempts) continue;
      this.kill(d, DeadLetterReason.MAX_ATTEMPTS);
      repaired++;
    }
    if (repaired > 0) this.retryQueue = this.retryQueue.filter((s) => this.pending.get(s)?.state === DeliveryState.RETRY);
    this.retryQueue.sort((a, b) => a - b);
    return repaired;
  }

  /** Lowest unsettled sequence (everything below is settled). */
  ackFloor(): number {
    let f = this.next;
    for (const s of this.pending.keys()) if (s < f) f = s;
    return f;
  }

  /** Sequences waiting for redelivery, lowest first (a copy). */
  retries(): number[] {
    return this.retryQueue.slice();
  }

  count(state: number): number {
    let n = 0;
    for (const d of this.pending.values()) if (d.state === state) n++;
    return n;
  }

  /**
   * Fence: the group gives the partition to `owner` under `epoch`. An older
   * epoch changes nothing (false). A newer one ends every in-flight
   * delivery's attempt (its ACK is fenced from now on): it goes up for
   * redelivery, or — when that was its last attempt (`maxAttempts`) — to
   * the dead-letter twin, so no delivery ever carries an attempt above the
   * maximum. The same epoch only (re)sets the owner (idempotent).
   */
  assign(epoch: number, owner: OwnerRef | null, maxAttempts = Number.MAX_SAFE_INTEGER): boolean {
    if (epoch < this.ownershipEpoch) return false;
    if (epoch > this.ownershipEpoch) {
      for (const d of this.pending.values()) {
        if (d.state !== DeliveryState.IN_FLIGHT) continue;
        if (d.attempt >= maxAttempts) {
          this.kill(d, DeadLetterReason.MAX_ATTEMPTS);
          continue;
        }
        d.state = DeliveryState.RETRY;
        this.retryQueue.push(d.seq);
        this.dirty.add(d.seq);
      }
      this.retryQueue.sort((a, b) => a - b);
    }
    this.ownershipEpoch = epoch;
    this.owner = owner;
    this.waiting = true;
    this.metaDirty = true;
    return true;
  }

  /**
   * Reset (consumer-group management, docs/groups.md): the group's position
   * becomes `next` — the next sequence delivered — and every unsettled
   * delivery of the old position (in flight, waiting for redelivery or for
   * the dead-letter twin) is dropped. Called together with a fence to a
   * newer ownership epoch, so no ACK of a dropped delivery is accepted
   * afterwards. Returns how many deliveries were dropped.
   */
  reset(next: number): number {
    const dropped = this.pending.size;
    for (const seq of this.pending.keys()) {
      this.dirty.delete(seq);
      this.removed.add(seq);
    }
    this.pending.clear();
    this.retryQueue = [];
    this.next = Math.max(1, next);
    this.waiting = true;
    this.metaDirty = true;
    return dropped;
  }

  /** 0 when `caller` owns the partition under `epoch`; else STALE_OWNERSHIP_EPOCH or NOT_OWNER. */
  check(epoch: number, caller: SubscriberRef): number {
    if (epoch < this.ownershipEpoch) return ErrorCode.STALE_OWNERSHIP_EPOCH;
    const o = this.owner;
    if (epoch > this.ownershipEpoch || !o || o.sessionId !== caller.sessionId || o.subscriptionId !== caller.subscriptionId) {
      return ErrorCode.NOT_OWNER;
    }
    return 0;
  }

  /**
   * Records a delivery of `seq` (a redelivery when it is pending, else the
   * next new sequence) with a fresh delivery id; returns its attempt number.
   */
  delivered(seq: number, deliveryId: number, deadline: number): number {
    let d = this.pending.get(seq);
    if (d) {
      if (d.state === DeliveryState.RETRY) this.unqueue(seq);
      if (d.attempt > 0) this.counters.redelivered++; // attempt 0: a delivery taken back (returned) before the consumer saw it
      d.attempt++;
    } else {
      d = { seq, deliveryId, attempt: 1, deadline, state: DeliveryState.IN_FLIGHT, reason: 0 };
      this.pending.set(seq, d);
      if (seq >= this.next) this.next = seq + 1;
    }
    d.deliveryId = deliveryId;
    d.deadline = deadline;
    d.state = DeliveryState.IN_FLIGHT;
    this.counters.delivered++;
    this.dirty.add(seq);
    this.metaDirty = true;
    return d.attempt;
  }

  /**
   * Deliveries the owner's session declined (a delivery carried in a wake
   * that found no room or no subscription, Consumers.carry): each one still
   * in flight under that delivery id is taken back as if it had not been
   * made — its attempt and the counters go back down and it waits for
   * redelivery (lowest first), so its next delivery has the attempt number
   * this one had. Returns how many were taken back.
   */
  returned(seqs: readonly number[], deliveryIds: readonly number[]): number {
    let n = 0;
    for (let i = 0; i < seqs.length; i++) {
      const d = this.pending.get(seqs[i]!);
      if (!d || d.state !== DeliveryState.IN_FLIGHT || d.deliveryId !== deliveryIds[i]) continue;
      if (d.attempt > 1) this.counters.redelivered--;
      this.counters.delivered--;
      d.attempt--;
      d.state = DeliveryState.RETRY;
      insertSorted(this.retryQueue, d.seq);
      this.dirty.add(d.seq);
      n++;
    }
    if (n > 0) this.metaDirty = true;
    return n;
  }

  /**
   * Retention deleted every record below `logStart` (the first retained
   * sequence; docs/protocol.md "Topic retention"): the group's position
   * moves up to it and its unsettled deliveries below it are dropped — in
   * flight, waiting for redelivery or for the dead-letter twin — so an ACK
   * of one answers UNKNOWN_DELIVERY. Records the group had not settled are
   * counted in `retentionSkipped`. Cost: O(1) when the group is at or past
   * `logStart` with nothing pending, else O(pending).
   */
  truncate(logStart: number): Truncation {
    const out: Truncation = { skipped: 0, inFlight: { seqs: [], deliveryIds: [] } };
    if (this.next < logStart) {
      out.skipped += logStart - this.next;
      this.next = logStart;
      this.metaDirty = true;
    }
    if (this.pending.size > 0) {
      let retries = false;
      for (const d of this.pending.values()) {
        if (d.seq >= logStart) continue;
        if (d.state === DeliveryState.IN_FLIGHT) {
          out.inFlight.seqs.push(d.seq);
          out.inFlight.deliveryIds.push(d.deliveryId);
        } else if (d.state === DeliveryState.RETRY) retries = true;
        this.pending.delete(d.seq);
        this.dirty.delete(d.seq);
        this.removed.add(d.seq);
        out.skipped++;
      }
      if (retries) this.retryQueue = this.retryQueue.filter((s) => s >= logStart);
    }
    if (out.skipped > 0) {
      this.counters.retentionSkipped += out.skipped;
      this.metaDirty = true;
    }
    return out;
  }

  /** A pending sequence whose record no longer exists (purged): settle it silently. */
  forget(seq: number): void {
    if (!this.pending.has(seq)) return;
    if (this.pending.get(seq)!.state === DeliveryState.RETRY) this.unqueue(seq);
    this.pending.delete(seq);
    this.dirty.delete(seq);
    this.removed.add(seq);
  }

  /**
   * Settles one ACK / PROGRESS / NACK RETRY / NACK REJECT of `caller`.
   * Returns 0 or the error (nothing changed): STALE_OWNERSHIP_EPOCH,
   * NOT_OWNER, UNKNOWN_DELIVERY (not in flight under that delivery id).
   */
  settle(kind: number, seq: number, deliveryId: number, epoch: number, caller: SubscriberRef, now: number, limits: LedgerLimits): number {
    const bad = this.check(epoch, caller);
    if (bad) return bad;
    const d = this.pending.get(seq);
    if (!d || d.state !== DeliveryState.IN_FLIGHT || d.deliveryId !== deliveryId) return ErrorCode.UNKNOWN_DELIVERY;
    switch (kind) {
      case SettleKind.ACK:
        this.pending.delete(seq);
        this.dirty.delete(seq);
        this.removed.add(seq);
        this.counters.acked++;
        this.metaDirty = true;
        break;
      case SettleKind.PROGRESS:
        d.deadline = now + limits.ackWaitMs;
        this.dirty.add(seq);
        break;
      case SettleKind.RETRY:
        this.failed(d, limits.maxAttempts);
        break;
      default: // REJECT
        this.kill(d, DeadLetterReason.REJECTED);
    }
    return 0;
  }

  /**
   * Work deadlines: every in-flight delivery due at `now` goes up for
   * redelivery (or to the dead-letter twin after its last attempt). Returns
   * how many expired; `expired` collects their sequences and delivery ids.
   */
  expire(now: number, maxAttempts: number, expired?: { seqs: number[]; deliveryIds: number[] }): number {
    let n = 0;
    for (const d of this.pending.values()) {
      if (d.state !== DeliveryState.IN_FLIGHT || d.deadline > now) continue;
      expired?.seqs.push(d.seq);
      expired?.deliveryIds.push(d.deliveryId);
      this.failed(d, maxAttempts);
      n++;
    }
    return n;
  }

  /** Earliest work deadline of an in-flight delivery, or null. */
  nextDeadline(): number | null {
    let t: number | null = null;
    for (const d of this.pending.values()) if (d.state === DeliveryState.IN_FLIGHT && (t === null || d.deadline < t)) t = d.deadline;
    return t;
  }

  /** Up to `max` deliveries waiting to be dead-lettered, lowest first. */
  deadLetters(max: number): PendingDelivery[] {
    return [...this.pending.values()].filter((d) => d.state === DeliveryState.DEAD).sort((a, b) => a.seq - b.seq).slice(0, max);
  }

  /** The twin stored these dead letters: they are settled (the floor moves past them). */
  deadLettered(seqs: readonly number[]): void {
    for (const s of seqs) {
      const d = this.pending.get(s);
      if (!d || d.state !== DeliveryState.DEAD) continue;
      this.pending.delete(s);
      this.dirty.delete(s);
      this.removed.add(s);
      this.counters.deadLettered++;
    }
    this.metaDirty = true;
  }

  /** True when a RETRY is waiting. */
  hasRetries(): boolean {
    return this.retryQueue.length > 0;
  }

  private failed(d: PendingDelivery, maxAttempts: number): void {
    if (d.attempt >= maxAttempts) {
      this.kill(d, DeadLetterReason.MAX_ATTEMPTS);
      return;
    }
    d.state = DeliveryState.RETRY;
    insertSorted(this.retryQueue, d.seq);
    this.dirty.add(d.seq);
  }

  private kill(d: PendingDelivery, reason: number): void {
    d.state = DeliveryState.DEAD;
    d.reason = reason;
    this.dirty.add(d.seq);
  }

  private unqueue(seq: number): void {
    const i = lowerBound(this.retryQueue, seq);
    if (this.retryQueue[i] === seq) this.retryQueue.splice(i, 1);
  }
}

function lowerBound(a: number[], x: number): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertSorted(a: number[], x: number): void {
  const i = lowerBound(a, x);
  if (a[i] !== x) a.splice(i, 0, x);
}
