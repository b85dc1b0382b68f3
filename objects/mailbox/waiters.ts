/**
 * Held long-poll FETCH requests of one Mailbox (pure, in memory). A waiter
 * is re-polled whenever messages become visible (SEND, a delayed message
 * coming due) and is answered at its deadline by the alarm, or released
 * early by {@link WaiterSet.cancel} when its client went away.
 */

/** One held FETCH. */
export interface Waiter {
  /** Caller-chosen id for {@link WaiterSet.cancel}; absent/null when the caller cannot cancel. */
  id?: string | null;
  /** When the wait ends, ms since epoch. */
  deadline: number;
  /** Tries to answer now; returns true when it did (messages were available). */
  poll(): boolean;
  /** Answers at the deadline (with whatever is visible, usually nothing). */
  expire(): void;
  /** Answers with an error (e.g. the mailbox expired meanwhile). */
  fail(error: unknown): void;
}

/** The set of held FETCHes. */
export class WaiterSet {
  private readonly waiters = new Set<Waiter>();
  private readonly byId = new Map<string, Waiter>();

  /**
   * @param onWake called on every {@link wake} and {@link failAll}, after
   * the waiters: the long-polls parked outside memory (wait-sockets.ts).
   */
  constructor(private readonly onWake: () => void = () => {}) {}

  /** Number of held requests. */
  get size(): number {
    return this.waiters.size;
  }

  add(w: Waiter): void {
    this.waiters.add(w);
    if (w.id != null) this.byId.set(w.id, w);
  }

  /**
   * Releases the waiter with `id` (its client disconnected): it leaves the
   * set and is answered at once with whatever `expire` gives (nobody reads
   * it). Returns false when no such waiter is held (already answered).
   */
  cancel(id: string): boolean {
    const w = this.byId.get(id);
    if (!w) return false;
    this.remove(w);
    try {
      w.expire();
    } catch (e) {
      w.fail(e);
    }
    return true;
  }

  private remove(w: Waiter): void {
    this.waiters.delete(w);
    if (w.id != null) this.byId.delete(w.id);
  }

  /** Earliest deadline, or null when nothing is held. */
  earliestDeadline(): number | null {
    let out: number | null = null;
    for (const w of this.waiters) if (out === null || w.deadline < out) out = w.deadline;
    return out;
  }

  /** Re-polls every waiter (oldest first); answered ones leave the set. */
  wake(): void {
    for (const w of [...this.waiters]) {
      if (!this.waiters.has(w)) continue;
      let done: boolean;
      try {
        done = w.poll();
      } catch (e) {
        this.remove(w);
        w.fail(e);
        continue;
      }
      if (done) this.remove(w);
    }
    this.onWake();
  }

  /** Answers every waiter whose deadline is ≤ `nowMs`. */
  expireDue(nowMs: number): void {
    for (const w of [...this.waiters]) {
      if (w.deadline > nowMs) continue;
      this.remove(w);
      try {
        w.expire();
      } catch (e) {
        w.fail(e);
      }
    }
  }

  /** Fails every waiter with `error` and empties the set. */
  failAll(error: unknown): void {
    const all = [...this.waiters];
    this.waiters.clear();
    this.byId.clear();
    for (const w of all) w.fail(error);
    this.onWake();
  }
}
