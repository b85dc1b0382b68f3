/**
 * The deadlines of one WebSocket session (pure): one scheme for every
 * protocol timer, correct under hibernation (objects/session-base/
 * SocketSession.ts executes it).
 *
 * Each deadline has a kind (`"keepalive"`, `"partial"`, …), a time (unix
 * ms) and a mode:
 * - **durable**: the connection's liveness (MortarMQ keepalive 45 s, NATS
 *   auth 5 s, the token re-check). Kept in memory and in the socket
 *   attachment; the session arms ONE storage alarm for the earliest, and
 *   only pulls the alarm in when a deadline is earlier than the armed time
 *   (a deadline moving later — every frame moves the keepalive — costs no
 *   storage write: the alarm fires, finds nothing expired, re-arms). The
 *   alarm survives hibernation and eviction.
 * - **resident**: guards state that lives only in memory (a partially
 *   received frame or operation: MortarMQ half-frame 10 s, NATS partial
 *   operation 30 s). Fired by an in-memory timer, which also keeps the
 *   object from hibernating while it is pending, so the bytes it guards are
 *   not lost to hibernation. The attachment records only that it is
 *   pending: a session rebuilt (evicted) while one was pending knows the
 *   guarded bytes are gone (`lost`).
 *
 * The attachment copy is refreshed only when something a rebuilt session
 * needs changed: a deadline set, cleared or moved earlier, or moved later
 * by at least `granularityMs` (1 s). A restored durable deadline gets that
 * much slack, so a rebuilt session never closes a connection early.
 */

/** How a deadline is kept (see the module comment). */
export type DeadlineMode = "durable" | "resident";

/** What the socket attachment keeps: durable deadlines by kind, and the kinds of pending resident ones. */
export interface DeadlinesSnapshot {
  durable: Record<string, number>;
  resident: string[];
}

/** Attachment refresh granularity for deadlines moving later, ms. */
export const ATTACH_GRANULARITY_MS = 1_000;

/** The deadlines of one session, by kind (times in unix ms; see the module comment). */
export class Deadlines {
  private readonly due = new Map<string, { at: number; mode: DeadlineMode }>();
  /** What the attachment holds (as of the last `snapshot()`). */
  private saved: DeadlinesSnapshot = { durable: {}, resident: [] };
  private changed = false;

  constructor(private readonly granularityMs = ATTACH_GRANULARITY_MS) {}

  /** Sets (or moves) deadline `kind` to `at` (unix ms). */
  set(kind: string, at: number, mode: DeadlineMode = "durable"): void {
    const old = this.due.get(kind);
    this.due.set(kind, { at, mode });
    if (!old || old.mode !== mode) this.changed = true;
    else if (mode === "durable") {
      const s = this.saved.durable[kind];
      if (s === undefined || at < s || at - s >= this.granularityMs) this.changed = true;
    }
  }

  /** Removes deadline `kind` (no-op when not set). */
  clear(kind: string): void {
    if (this.due.delete(kind)) this.changed = true;
  }

  /** Removes every deadline. */
  clearAll(): void {
    if (this.due.size > 0) this.changed = true;
    this.due.clear();
  }

  /** The time of deadline `kind`, or undefined. */
  get(kind: string): number | undefined {
    return this.due.get(kind)?.at;
  }

  /** Whether deadline `kind` is set. */
  has(kind: string): boolean {
    return this.due.has(kind);
  }

  /**
   * The latest time the storage alarm may fire and still run every durable
   * deadline within its slack (`slack(kind)`, ms: how late a deadline may
   * run), unix ms (Infinity when none). With no slack this is the earliest
   * durable deadline.
   */
  latest(slack: (kind: string) => number): number {
    let n = Infinity;
    for (const [k, d] of this.due) if (d.mode === "durable" && d.at + slack(k) < n) n = d.at + slack(k);
    return n;
  }

  /** The earliest deadline of `mode`, unix ms (Infinity when none). */
  next(mode: DeadlineMode): number {
    let n = Infinity;
    for (const d of this.due.values()) if (d.mode === mode && d.at < n) n = d.at;
    return n;
  }

  /**
   * Kinds whose deadline is at or before `now`, earliest first — or within
   * `early(kind)` ms after it (ms a deadline may run before it is due:
   * one that an alarm run anyway can take along, default none).
   */
  expired(now: number, early: (kind: string) => number = () => 0): string[] {
    return [...this.due].filter(([k, d]) => d.at - early(k) <= now).sort((a, b) => a[1].at - b[1].at).map(([k]) => k);
  }

  /** Whether the attachment copy is out of date (see the module comment). */
  get dirty(): boolean {
    return this.changed;
  }

  /** The attachment copy; marks it written. */
  snapshot(): DeadlinesSnapshot {
    const s: DeadlinesSnapshot = { durable: {}, resident: [] };
    for (const [k, d] of this.due) {
      if (d.mode === "durable") s.durable[k] = d.at;
      else s.resident.push(k);
    }
    this.saved = s;
    this.changed = false;
    return s;
  }

  /**
   * A session rebuilt from `s` (woken from hibernation, or restarted):
   * restores the durable deadlines with `granularityMs` of slack, except
   * the kinds in `exact` (ones that firing early does no harm, e.g. the
   * token re-check: with slack, the alarm armed for the stored time would
   * wake the rebuilt session, find nothing expired and fire a second time
   * a second later); returns the resident kinds that were pending — what
   * they guarded is lost.
   */
  restore(s: DeadlinesSnapshot | undefined, exact: readonly string[] = []): string[] {
    this.due.clear();
    if (!s) return [];
    for (const [k, at] of Object.entries(s.durable)) this.due.set(k, { at: exact.includes(k) ? at : at + this.granularityMs, mode: "durable" });
    this.saved = { durable: { ...s.durable }, resident: [] };
    this.changed = s.resident.length > 0; // the lost resident deadlines are gone from the copy too
    return [...s.resident];
  }
}
