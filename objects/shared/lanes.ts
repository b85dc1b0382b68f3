/**
 * Ordered lanes (pure): per key, items are issued in the order they were
 * submitted, in batches, with a bounded number of calls in flight; each
 * item's answer goes back to its own caller. One primitive for the three
 * places a connection talks to one object in order:
 *
 * - PUB group commit (objects/session/pub-pipeline.ts): a lane per
 *   partition, ONE append in flight, the PUBs arriving meanwhile go
 *   together in the next call, and an idle lane waits for an older call of
 *   another lane (`order`, see below);
 * - ACK/NACK group commit (objects/session/settle-lanes.ts): a lane per
 *   (subscription, partition), ONE settle call in flight;
 * - mq9 requests to one mailbox (objects/mq9/sendbatch.ts): a lane per
 *   mailbox, calls issued in order but not waited for (a long-poll FETCH
 *   must not hold up a SEND; calls on one stub are delivered in order), and
 *   consecutive SENDs share one `sendMany`.
 *
 * Admission: an item may come with an admission — a promise (a quota
 * check, objects/tenants/gate.ts) that resolves to null (admitted) or to a
 * refusal. It is always awaited here, inside the lane: the item and every
 * later item of its lane wait for it, so a request that must wait for a
 * rate lease keeps its place; a refused item is answered through
 * `refused` and never issued, and does not hold up the items behind it.
 * Items admitted together (already-settled admissions resolve in one
 * microtask round) are issued together: the lanes flush once per round,
 * after the admissions, so waiting costs no batching.
 *
 * `order` (optional): a number per item, increasing with submission
 * across all lanes (a response slot). An idle lane then issues only when
 * its oldest queued item is older than every call in flight on other lanes
 * — or nothing is in flight. Its answers could not be written before that
 * older call answers anyway (strict request order), so it waits for the
 * next completion; this keeps the lanes in step (pub-pipeline.ts says why).
 */

/** What the lanes need from their owner. */
export interface LanesHost<K, I, A> {
  /**
   * Issues ONE call carrying `batch` (consecutive admitted items of lane
   * `key`, in submission order) and answers each item. The promise settles
   * when the call is over; it should not reject (answer failures to the
   * items), a rejection is ignored.
   */
  issue(key: K, batch: I[]): Promise<void>;
  /** `item`'s admission refused it (`refusal`): answer it; it is never issued. */
  refused?(item: I, refusal: A): void;
  /** A call settled and the lanes issued what could go next (the owner writes what is ready). */
  settled?(): void;
}

/** How lanes form calls. */
export interface LanesOptions<I> {
  /** Calls in flight per lane: 1 = group commit (the default); Infinity = issue in order without waiting. */
  maxInFlight?: number;
  /**
   * Items of different kinds never share a call; kind null: the item goes
   * alone. Default: every item the same kind.
   */
  kind?(item: I): unknown;
  /** Weight of an item (bytes) for `maxWeight`. Default 1. */
  weight?(item: I): number;
  /** A call takes items while its weight is below this; a heavier first item still goes (alone). Default: unbounded. */
  maxWeight?: number;
  /** Age of an item across lanes (see the module comment). Absent: lanes never wait for each other. */
  order?(item: I): number;
}

const WAITING = 0;
const READY = 1;
const DONE = 2;

interface Entry<I> {
  item: I;
  state: number;
}

interface Lane<K, I> {
  key: K;
  queue: Entry<I>[];
  head: number;
  /** Calls in flight, and the `order` of each call's oldest item. */
  inFlight: number;
  orders: number[];
}

/**
 * Ordered lanes keyed by `K` carrying items `I`; `A` is an admission's
 * refusal (e.g. objects/tenants/gate.ts Refusal). See the module comment.
 */
export class Lanes<K, I, A = unknown> {
  private readonly lanes = new Map<K, Lane<K, I>>();
  private readonly maxInFlight: number;
  private scheduled = false;

  constructor(private readonly host: LanesHost<K, I, A>, private readonly opts: LanesOptions<I> = {}) {
    this.maxInFlight = opts.maxInFlight ?? 1;
  }

  /**
   * Queues `item` on lane `key`. Without `admission` it may go at the next
   * flush(); with one, once the admission resolved to null (a refusal is
   * handed to `refused`). Nothing is issued before flush() — called by the
   * owner, or by the lanes themselves once per microtask round after an
   * admission settled.
   */
  submit(key: K, item: I, admission?: Promise<A | null>): void {
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { key, queue: [], head: 0, inFlight: 0, orders: [] }));
    const entry: Entry<I> = { item, state: admission ? WAITING : READY };
    lane.queue.push(entry);
    if (!admission) return;
    admission.then(
      (refusal) => this.admitted(entry, refusal),
      () => this.admitted(entry, null), // a failing check admits (quotas fail open; gate.ts)
    );
  }

  /** Issues the next call of every lane that may issue now. */
  flush(): void {
    let oldest = Infinity;
    if (this.opts.order) for (const lane of this.lanes.values()) for (const o of lane.orders) if (o < oldest) oldest = o;
    for (const [key, lane] of this.lanes) {
      this.skipDone(lane);
      while (lane.inFlight < this.maxInFlight && lane.head < lane.queue.length && lane.queue[lane.head]!.state === READY) {
        if (this.opts.order && lane.orders.length === 0 && this.opts.order(lane.queue[lane.head]!.item) > oldest) break;
        this.issue(lane);
        this.skipDone(lane);
      }
      if (lane.head === lane.queue.length && lane.inFlight === 0) this.lanes.delete(key);
    }
  }

  /** Lanes with a call in flight or items queued. */
  get active(): number {
    return this.lanes.size;
  }

  private admitted(entry: Entry<I>, refusal: A | null): void {
    if (refusal) {
      entry.state = DONE;
      this.host.refused?.(entry.item, refusal);
    } else {
      entry.state = READY;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /** Takes the next call's items off `lane` and issues it. */
  private issue(lane: Lane<K, I>): void {
    const { kind, weight, maxWeight = Infinity } = this.opts;
    const first = lane.queue[lane.head]!;
    const k = kind ? kind(first.item) : undefined;
    const batch: I[] = [];
    let w = 0;
    while (lane.head < lane.queue.length) {
      const e = lane.queue[lane.head]!;
      if (e.state === DONE) {
        lane.head++;
        continue;
      }
      if (e.state !== READY || (batch.length > 0 && (w >= maxWeight || k === null || (kind && kind(e.item) !== k)))) break;
      batch.push(e.item);
      w += weight ? weight(e.item) : 1;
      lane.head++;
    }
    this.compact(lane);
    const order = this.opts.order ? this.opts.order(batch[0]!) : 0;
    lane.inFlight++;
    lane.orders.push(order);
    this.host.issue(lane.key, batch).catch(() => {}).finally(() => {
      lane.inFlight--;
      lane.orders.splice(lane.orders.indexOf(order), 1);
      this.flush();
      this.host.settled?.();
    });
  }

  private skipDone(lane: Lane<K, I>): void {
    while (lane.head < lane.queue.length && lane.queue[lane.head]!.state === DONE) lane.head++;
  }

  /** Drops issued entries once they are the larger part of the queue. */
  private compact(lane: Lane<K, I>): void {
    if (lane.head === lane.queue.length) {
      lane.queue = [];
      lane.head = 0;
    } else if (lane.head > 64 && lane.head * 2 > lane.queue.length) {
      lane.queue = lane.queue.slice(lane.head);
      lane.head = 0;
    }
  }
}
