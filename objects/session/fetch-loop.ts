/**
 * The session's fetch loop (docs/protocol.md "Read path" → Delivery): asks
 * the Partitions a subscription owns for records, within the credit window
 * (push mode) or the budget of the PULL at the head of the queue (pull
 * mode). Pure apart from the injected I/O.
 *
 * Per owned partition at most one Partition.deliver call is in flight. The
 * available budget is split evenly across the partitions that may have
 * data, except that a partition whose next record is larger than its share
 * but fits what is free gets that record's size (planFetches). Push mode
 * waits up to LOW_WATER_WAIT_MS for a quarter of the window to be free
 * while deliveries are outstanding, then asks with what is free. A
 * partition whose last call found nothing, or said it handed out all there
 * was (`drained`), is "parked" until the Partition wakes the session
 * (MortarSession.wake) — nothing polls. A push-mode fetch leaves the rest
 * of its budget standing at the Partition (DeliverRequest.carry): the
 * Partition then carries the next records in its wake (carried), one call
 * instead of a wake and a deliver. A partition
 * whose next record fits nothing free is skipped until credit returns, or
 * until nothing is outstanding: then it alone may take one record larger
 * than the window (so a big message cannot wedge a
 * consumer). Failed calls back off (50 ms doubling, ≤ 5 s).
 */
import { ErrorCode } from "../../wire/mortar/errors";
import type { DeliverRequest, DeliverResult } from "../partition/rpc";
import { planFetches } from "./credit";
import type { OwnedPartition, PendingPull, Subscription } from "./subscription";

/** What the loop needs from the connection. */
export interface FetchIO {
  /** Partition.deliver for `partition` of the subscription's topic (group, caller and epoch filled in). */
  deliver(sub: Subscription, partition: number, req: Pick<DeliverRequest, "ownershipEpoch" | "maxMsgs" | "maxBytes" | "allowOversize" | "holdMs" | "carry">): Promise<DeliverResult>;
  /** Writes MSG frames of a push subscription (held until the SUB's OK went out). */
  push(sub: Subscription, frames: Uint8Array): void;
  /** Answers a PULL: its MSG frames, then OK. */
  answerPull(sub: Subscription, pull: PendingPull): void;
  /** The subscription is still open on a live connection. */
  open(sub: Subscription): boolean;
  /** A deliver call completed (credit, parked and fenced state may have changed). */
  settled?(sub: Subscription): void;
}

/** How long push mode waits for a quarter of the credit window to be free before it asks with less, ms. */
export const LOW_WATER_WAIT_MS = 10;

export class FetchLoop {
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(private readonly io: FetchIO) {}

  /** Runs the loop for `sub` soon (once per microtask, however often it is asked). */
  schedule(sub: Subscription): void {
    if (sub.pumpScheduled) return;
    sub.pumpScheduled = true;
    queueMicrotask(() => {
      sub.pumpScheduled = false;
      this.pump(sub);
    });
  }

  /** The Partition has new deliverable records for `partition`. */
  wake(sub: Subscription, partition: number): void {
    const o = sub.owned.get(partition);
    if (!o) return;
    if (o.fetching) o.woken = true;
    else o.parked = false;
    this.schedule(sub);
  }

  /**
   * Deliveries of `partition` the Partition made within the budget a
   * drained push-mode fetch left standing, carried in its wake. Taken whole
   * when the partition is still owned under `epoch`, no fetch of it is out
   * and the window has room for them (then pushed like a fetch's answer);
   * else none is taken (the Partition takes them back) and the partition is
   * asked again as after a wake. Returns whether they were taken.
   */
  carried(sub: Subscription, partition: number, epoch: number, r: DeliverResult): boolean {
    const o = sub.owned.get(partition);
    if (!o) return false;
    const n = r.sequences.length;
    let bytes = 0;
    for (let i = 0; i < n; i++) bytes += r.sizes[i]!;
    const avail = sub.credit.available();
    if (sub.pullMode || sub.removed || !this.io.open(sub) || !o.active || o.fetching || o.ownershipEpoch !== epoch || n > avail.count || bytes > avail.bytes) {
      this.wake(sub, partition);
      return false;
    }
    for (let i = 0; i < n; i++) sub.credit.delivered(partition, r.sequences[i]!, r.deliveryIds[i]!, r.sizes[i]!, epoch);
    this.io.push(sub, r.frames);
    o.blockedBytes = 0;
    o.parked = r.drained === true;
    this.schedule(sub);
    return true;
  }

  /** Queues a PULL; it is answered when satisfied, or at its deadline (wait_ms) with what it has. */
  startPull(sub: Subscription, pull: PendingPull, waitMs: number): void {
    sub.pulls.push(pull);
    if (waitMs === 0) pull.expired = true;
    else {
      pull.timer = this.later(waitMs, () => {
        pull.timer = null;
        pull.expired = true;
        this.pump(sub);
      });
    }
    this.pump(sub);
  }

  /** Stops everything of `sub`: pending PULLs are answered with what they collected. */
  cancel(sub: Subscription): void {
    for (const pull of sub.pulls.splice(0)) {
      if (pull.timer) this.clear(pull.timer);
      this.io.answerPull(sub, pull);
    }
  }

  /** Clears every timer (the connection closed). */
  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private pump(sub: Subscription): void {
    if (!this.io.open(sub) || sub.removed) return;
    if (sub.pullMode) this.servePull(sub);
    else this.servePush(sub);
  }

  private servePush(sub: Subscription): void {
    const avail = sub.credit.available();
    const idle = sub.credit.idle();
    if (avail.count <= 0) return;
    // Low-water mark: while deliveries are outstanding, wait until a quarter of the window is free, so
    // credit returned one ACK at a time becomes one bigger deliver call instead of many tiny ones — but
    // only for LOW_WATER_WAIT_MS: a client that settles only after more records arrive (or that granted
    // one more with CREDIT ADD) must still get them.
    if (!idle && avail.count < Math.max(1, sub.credit.count >> 2) && !sub.lowWaterWaived) {
      if (!sub.lowWaterTimer) {
        sub.lowWaterTimer = true;
        this.later(LOW_WATER_WAIT_MS, () => {
          sub.lowWaterTimer = false;
          sub.lowWaterWaived = true;
          this.pump(sub);
        });
      }
      return;
    }
    sub.lowWaterWaived = false;
    const cands = this.candidates(sub);
    if (idle) cands.sort((a, b) => b[1].blockedBytes - a[1].blockedBytes);
    for (const f of planFetches(cands.map(([, o]) => o.blockedBytes), avail.count, avail.bytes, idle)) {
      const [p, o] = cands[f.index]!;
      sub.credit.reserve(f.count, f.bytes);
      this.fetch(sub, p, o, f.count, f.bytes, f.oversize, 0, null);
    }
  }

  /**
   * Serves the PULL at the head of the queue: keeps asking partitions that
   * may have records while budget is left; once none may (all answered
   * "nothing" and wait for a wake), answers when min_bytes are collected
   * or the wait is over.
   */
  private servePull(sub: Subscription): void {
    const pull = sub.pulls[0];
    if (!pull) return;
    const full = pull.count >= pull.maxMsgs || pull.bytes >= pull.maxBytes;
    let issued = 0;
    if (!full) {
      const cands = this.candidates(sub);
      const leftCount = pull.maxMsgs - pull.count - pull.reserved.count;
      const leftBytes = pull.maxBytes - pull.bytes - pull.reserved.bytes;
      // The first record of the answer may be larger than max_bytes: one fetch carries that allowance.
      const over = pull.count === 0 && !pull.oversizeUsed && pull.reserved.count === 0;
      for (const f of planFetches(cands.map(([, o]) => o.blockedBytes), leftCount, leftBytes, over)) {
        const [p, o] = cands[f.index]!;
        if (f.oversize) pull.oversizeUsed = true;
        pull.fetches++;
        pull.reserved.count += f.count;
        pull.reserved.bytes += f.bytes;
        issued++;
        this.fetch(sub, p, o, f.count, f.bytes, f.oversize, Math.max(0, pull.deadline - Date.now()), pull);
      }
    }
    const enough = pull.count > 0 && pull.bytes >= pull.minBytes;
    if (pull.fetches === 0 && (full || (issued === 0 && (enough || pull.expired)))) {
      if (pull.timer) this.clear(pull.timer);
      sub.pulls.shift();
      this.io.answerPull(sub, pull);
      this.schedule(sub);
    }
  }

  /** Owned partitions worth asking now, in round-robin order. */
  private candidates(sub: Subscription): [number, OwnedPartition][] {
    const all = [...sub.owned].filter(([, o]) => o.active && !o.fetching && !o.parked && !o.backoff);
    if (all.length < 2) return all;
    const r = sub.rr++ % all.length;
    return all.slice(r).concat(all.slice(0, r));
  }

  private fetch(sub: Subscription, p: number, o: OwnedPartition, maxMsgs: number, maxBytes: number, allowOversize: boolean, holdMs: number, pull: PendingPull | null): void {
    o.fetching = true;
    o.woken = false;
    const epoch = o.ownershipEpoch;
    this.io.deliver(sub, p, { ownershipEpoch: epoch, maxMsgs, maxBytes, allowOversize, holdMs, carry: pull === null }).then((r) => {
      if (r.code !== 0) {
        if (r.code === ErrorCode.STALE_OWNERSHIP_EPOCH || r.code === ErrorCode.NOT_OWNER || r.code === ErrorCode.TOPIC_DELETED) {
          if (o.ownershipEpoch === epoch) o.active = false; // fenced: wait for the group's NOTICEs
        } else {
          this.backoff(sub, o);
        }
        return;
      }
      o.failures = 0;
      // Released (CONTROL_ACK of a REVOKE) or assigned again under a newer epoch while this call was out: these
      // deliveries were fenced or will expire at the Partition. Pushed, they would count against the window
      // for good (nothing drops a released partition's credit again) and the client could not settle them.
      if (sub.owned.get(p) !== o || o.ownershipEpoch !== epoch) return;
      const n = r.sequences.length;
      if (n > 0) {
        let bytes = 0;
        for (let i = 0; i < n; i++) bytes += r.sizes[i]!;
        if (pull) {
          pull.frames.push(r.frames);
          pull.count += n;
          pull.bytes += bytes;
        } else if (this.io.open(sub)) {
          for (let i = 0; i < n; i++) sub.credit.delivered(p, r.sequences[i]!, r.deliveryIds[i]!, r.sizes[i]!, epoch);
          this.io.push(sub, r.frames);
        }
      } else if (pull && allowOversize) {
        pull.oversizeUsed = false;
      }
      o.blockedBytes = r.blockedBytes;
      o.parked = (n === 0 || r.drained === true) && r.blockedBytes === 0 && !o.woken;
    }, () => this.backoff(sub, o)).finally(() => {
      o.fetching = false;
      if (pull) {
        pull.fetches--;
        pull.reserved.count -= maxMsgs;
        pull.reserved.bytes -= maxBytes;
      } else {
        sub.credit.unreserve(maxMsgs, maxBytes);
      }
      this.schedule(sub);
      this.io.settled?.(sub);
    });
  }

  private backoff(sub: Subscription, o: OwnedPartition): void {
    o.failures++;
    o.backoff = true;
    this.later(Math.min(5_000, 50 * 2 ** o.failures), () => {
      o.backoff = false;
      this.schedule(sub);
    });
  }

  private later(ms: number, fn: () => void): ReturnType<typeof setTimeout> {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private clear(t: ReturnType<typeof setTimeout>): void {
    clearTimeout(t);
    this.timers.delete(t);
  }
}
