/**
 * Which requests of a mailbox an agent has fully answered, for
 * `serveA2aOverMq9` (server.ts), pure: an mq9 ACK is cumulative (it
 * acknowledges every earlier message of its priority lane), so a request
 * may be acknowledged only once it and every request fetched before it
 * are done — else a restart would lose one still in progress.
 */

/**
 * Which fetched requests are done, and the highest msg_id all of whose
 * predecessors are: what may be acknowledged (cumulative ACK).
 */
export class AckTracker {
  private readonly pending = new Map<number, boolean>(); // msg_id → done
  /** The highest msg_id started (-1: none): later requests are those after it. */
  highestSeen = -1;

  /** True while `id` is started and not yet acknowledged. */
  has(id: number): boolean {
    return this.pending.has(id);
  }
  /** Request `id` was fetched and is being handled. */
  start(id: number): void {
    this.pending.set(id, false);
    this.highestSeen = Math.max(this.highestSeen, id);
  }
  /** Requests started and not yet acknowledged. */
  get size(): number {
    return this.pending.size;
  }
  /** Marks `id` done; returns the msg_id to acknowledge now (the end of the done prefix), or null. */
  done(id: number): number | null {
    this.pending.set(id, true);
    let ackable: number | null = null;
    for (const k of [...this.pending.keys()].sort((a, b) => a - b)) {
      if (!this.pending.get(k)) break;
      ackable = k;
    }
    return ackable;
  }
  /** Forgets the ids up to `id` (acknowledged). */
  acked(id: number): void {
    for (const k of [...this.pending.keys()]) if (k <= id) this.pending.delete(k);
  }
}
