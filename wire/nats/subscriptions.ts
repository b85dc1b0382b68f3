/**
 * One connection's subscriptions (SUB/UNSUB bookkeeping) and the routing
 * rule nats-server applies to them: a message goes to every matching plain
 * subscription and to one member of each matching queue group; a
 * subscription with an UNSUB max is removed once it has received `max`
 * messages. Changes are recorded so the caller can persist them.
 */
import { subjectMatches } from "./subject";

/** Default cap on subscriptions per connection. */
export const MAX_SUBSCRIPTIONS = 10_000;

/** One subscription as stored. `max` = auto-unsubscribe after this many messages. */
export interface Subscription {
  sid: string;
  subject: string;
  queue?: string;
  max?: number;
  delivered: number;
}

/** Subscription table of one connection. */
export class SubscriptionTable {
  private readonly subs = new Map<string, Subscription>();
  /** sid → new record, or null when removed, since the last {@link takeChanges}. */
  private changes = new Map<string, Subscription | null>();

  constructor(
    initial: Iterable<Subscription> = [],
    readonly limit: number = MAX_SUBSCRIPTIONS,
  ) {
    for (const s of initial) this.subs.set(s.sid, { ...s });
  }

  get size(): number {
    return this.subs.size;
  }

  /** All subscriptions (copies). */
  list(): Subscription[] {
    return [...this.subs.values()].map((s) => ({ ...s }));
  }

  get(sid: string): Subscription | undefined {
    const s = this.subs.get(sid);
    return s && { ...s };
  }

  /**
   * SUB. A sid that already exists is left unchanged (nats-server does the
   * same). Returns "limit" when the table is full.
   */
  add(sid: string, subject: string, queue?: string): "ok" | "exists" | "limit" {
    if (this.subs.has(sid)) return "exists";
    if (this.subs.size >= this.limit) return "limit";
    const s: Subscription = { sid, subject, delivered: 0 };
    if (queue !== undefined) s.queue = queue;
    this.subs.set(sid, s);
    this.changes.set(sid, { ...s });
    return "ok";
  }

  /**
   * UNSUB. Without `max` (or with `max` ≤ messages already received) the
   * subscription goes now; otherwise it goes after `max` messages in total.
   * Unknown sids are ignored.
   */
  unsub(sid: string, max?: number): void {
    const s = this.subs.get(sid);
    if (!s) return;
    if (max !== undefined && max > s.delivered) {
      s.max = max;
      this.changes.set(sid, { ...s });
    } else {
      this.subs.delete(sid);
      this.changes.set(sid, null);
    }
  }

  /**
   * The subscriptions that receive one message on `subject`, counting the
   * delivery (and removing those that reach their max). `pick` chooses a
   * queue group member (index into the group); default random.
   */
  route(subject: string, pick: (n: number) => number = (n) => Math.floor(Math.random() * n)): Subscription[] {
    const out: Subscription[] = [];
    let groups: Map<string, Subscription[]> | null = null; // only built when a queue subscription matches
    for (const s of this.subs.values()) {
      if (!subjectMatches(s.subject, subject)) continue;
      if (s.queue === undefined) out.push(s);
      else {
        groups ??= new Map();
        const g = groups.get(s.queue);
        if (g) g.push(s);
        else groups.set(s.queue, [s]);
      }
    }
    if (groups) for (const g of groups.values()) out.push(g[Math.min(g.length - 1, Math.max(0, pick(g.length)))]);
    if (out.length === 0) return out; // nothing matched (every PUB's echo check on a connection subscribed only to its inbox)
    for (const s of out) this.count(s);
    return out.map((s) => ({ ...s }));
  }

  /** True if any subscription matches `subject` (does not count a delivery). */
  hasMatch(subject: string): boolean {
    for (const s of this.subs.values()) if (subjectMatches(s.subject, subject)) return true;
    return false;
  }

  /** Changes since the last call: sid → record to store, or null to delete. */
  takeChanges(): Map<string, Subscription | null> {
    const c = this.changes;
    if (c.size > 0) this.changes = new Map(); // nothing changed (the usual case): hand out the empty map itself
    return c;
  }

  private count(s: Subscription): void {
    s.delivered++;
    if (s.max === undefined) return;
    if (s.delivered >= s.max) {
      this.subs.delete(s.sid);
      this.changes.set(s.sid, null);
    } else {
      this.changes.set(s.sid, { ...s });
    }
  }
}
