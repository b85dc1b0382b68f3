/**
 * Group commit for one Durable Object (pure: no platform imports).
 *
 * Local and hosted Durable Object storage make every commit durable before
 * replies leave the object (locally: one fsync per commit, ~2 ms on a VM
 * disk, during which the object can do nothing else). While one commit is in
 * flight, new items wait in a queue; when it is durable, every queued item
 * is applied in one synchronous turn, so they share the next commit. An idle
 * object applies an item at once, so a lone request pays no extra latency.
 * The object's other operations go through {@link GroupCommit.after}, so
 * they take effect in arrival order relative to the queued items.
 */
/** A waiting entry: a submitted item (applied with its neighbours) or an operation queued with `after`. */
interface Entry<I, R> {
  item?: { value: I; resolve: (r: R) => void };
  run?: () => void;
  fail: (error: unknown) => void;
}

export class GroupCommit<I, R> {
  private inflight = false;
  /**
   * Waiting entries in arrival order: submitted items, and operations
   * queued with {@link after}. `run` executes the entry in the batch's
   * turn; `fail` answers it when the commit in flight failed.
   */
  private queue: Entry<I, R>[] = [];
  /** Applies consecutive items in one call (the constructor's `applyMany`, or `apply` on each). */
  private readonly applyAll: (items: readonly I[]) => R[];

  constructor(
    /** Applies one item synchronously (its writes join the current commit) and returns its reply. */
    private readonly apply: (item: I) => R,
    /** Resolves when every write made so far is durable (`ctx.storage.sync()`). */
    private readonly durable: () => Promise<void>,
    /** Reply for items that cannot be applied because the storage failed. */
    private readonly onFailure: (error: unknown) => R,
    /**
     * Optional: applies several items synchronously, in order, as `apply` on
     * each would (one reply per item, same order), e.g. with one statement
     * for all of them. Used for `submitAll` and for each run of consecutive
     * items of a batch turn.
     */
    applyMany?: (items: readonly I[]) => R[],
  ) {
    this.applyAll = applyMany ?? ((items) => items.map((item) => this.apply(item)));
  }

  /** Items waiting for the commit in flight (operations queued with {@link after} not counted). */
  get queued(): number {
    let n = 0;
    for (const q of this.queue) if (q.item) n++;
    return n;
  }

  /**
   * Runs `fn` now when nothing waits; otherwise queues it behind the
   * waiting items and runs it in their turn, right after the items that
   * arrived before it and before those that arrive after it. For the
   * object's other operations (reads, acknowledgements, deletes), so they
   * never overtake — nor see — items submitted around them out of order.
   * Runs also when the commit in flight failed.
   */
  after<T>(fn: () => T): T | Promise<T> {
    if (this.queue.length === 0) return fn();
    return new Promise<T>((resolve, reject) => {
      const run = () => {
        try {
          resolve(fn());
        } catch (e) {
          reject(e);
        }
      };
      this.queue.push({ run, fail: run });
    });
  }

  /** Applies `item` now when no commit is in flight, otherwise after it (in submission order). */
  submit(item: I): R | Promise<R> {
    if (!this.inflight) {
      const r = this.apply(item);
      this.watch();
      return r;
    }
    return new Promise<R>((resolve) => this.enqueue(item, resolve));
  }

  /**
   * Applies `items` together, in order: all now when no commit is in
   * flight, otherwise all after it (they share one commit either way).
   */
  submitAll(items: readonly I[]): R[] | Promise<R[]> {
    if (!this.inflight) {
      if (items.length === 0) return [];
      const rs = items.length === 1 ? [this.apply(items[0]!)] : this.applyAll(items);
      this.watch();
      return rs;
    }
    return Promise.all(items.map((item) => new Promise<R>((resolve) => this.enqueue(item, resolve))));
  }

  private enqueue(item: I, resolve: (r: R) => void): void {
    this.queue.push({ item: { value: item, resolve }, fail: (e) => resolve(this.onFailure(e)) });
  }

  /** Runs a batch turn: each run of consecutive items in one applyAll call, operations in between in their place. */
  private runBatch(batch: Entry<I, R>[]): void {
    for (let i = 0; i < batch.length; ) {
      const q = batch[i]!;
      if (!q.item) {
        q.run!();
        i++;
        continue;
      }
      let j = i;
      while (j < batch.length && batch[j]!.item) j++;
      const run = batch.slice(i, j).map((e) => e.item!);
      const rs = run.length === 1 ? [this.apply(run[0]!.value)] : this.applyAll(run.map((e) => e.value));
      run.forEach((e, k) => e.resolve(rs[k]!));
      i = j;
    }
  }

  private watch(): void {
    this.inflight = true;
    this.durable().then(
      () => {
        this.inflight = false;
        const batch = this.queue.splice(0);
        if (batch.length === 0) return;
        this.runBatch(batch);
        this.watch();
      },
      (e: unknown) => {
        this.inflight = false;
        for (const q of this.queue.splice(0)) q.fail(e);
      },
    );
  }
}
