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
export class GroupCommit<I, R> {
  private inflight = false;
  /**
   * Waiting entries in arrival order: submitted items, and operations
   * queued with {@link after}. `run` executes the entry in the batch's
   * turn; `fail` answers it when the commit in flight failed.
   */
  private queue: { run: () => void; fail: (error: unknown) => void; isItem: boolean }[] = [];

  constructor(
    /** Applies one item synchronously (its writes join the current commit) and returns its reply. */
    private readonly apply: (item: I) => R,
    /** Resolves when every write made so far is durable (`ctx.storage.sync()`). */
    private readonly durable: () => Promise<void>,
    /** Reply for items that cannot be applied because the storage failed. */
    private readonly onFailure: (error: unknown) => R,
  ) {}

  /** Items waiting for the commit in flight (operations queued with {@link after} not counted). */
  get queued(): number {
    let n = 0;
    for (const q of this.queue) if (q.isItem) n++;
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
      this.queue.push({ run, fail: run, isItem: false });
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
      const rs = items.map((item) => this.apply(item));
      if (items.length > 0) this.watch();
      return rs;
    }
    return Promise.all(items.map((item) => new Promise<R>((resolve) => this.enqueue(item, resolve))));
  }

  private enqueue(item: I, resolve: (r: R) => void): void {
    this.queue.push({ run: () => resolve(this.apply(item)), fail: (e) => resolve(this.onFailure(e)), isItem: true });
  }

  private watch(): void {
    this.inflight = true;
    this.durable().then(
      () => {
        this.inflight = false;
        const batch = this.queue.splice(0);
        if (batch.length === 0) return;
        for (const q of batch) q.run();
        this.watch();
      },
      (e: unknown) => {
        this.inflight = false;
        for (const q of this.queue.splice(0)) q.fail(e);
      },
    );
  }
}
