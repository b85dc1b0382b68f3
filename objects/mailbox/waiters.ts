/**
 * Held long-poll FETCH requests of one Mailbox (pure, in memory). A waiter
 * is re-polled whenever messages become visible (SEND, a delayed message
 * coming due) and is answered at its deadline by the alarm.
 */

/** One held FETCH. */
export interface Waiter {
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

  /** Number of held requests. */
  get size(): number {
    return this.waiters.size;
  }

  add(w: Waiter): void {
    this.waiters.add(w);
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
        this.waiters.delete(w);
        w.fail(e);
        continue;
      }
      if (done) this.waiters.delete(w);
    }
  }

  /** Answers every waiter whose deadline is ≤ `nowMs`. */
  expireDue(nowMs: number): void {
    for (const w of [...this.waiters]) {
      if (w.deadline > nowMs) continue;
      this.waiters.delete(w);
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
    for (const w of all) w.fail(error);
  }
}
