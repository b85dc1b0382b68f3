/**
 * The tenant's usage levels as the TenantDirectory's admission role needs
 * them — stored bytes (storage quota) and push subscriptions (push limit) —
 * read from the tenant's UsageAggregator (the counting pipeline) and kept
 * in memory for STATE_CACHE_MS.
 */
import type { Env } from "../env";
import { series } from "../usage/catalog";
import { usageStub } from "../usage/stub";

/** How long a read of the tenant's usage is reused, ms. */
export const STATE_CACHE_MS = 500;

const STORED = [series("mortarmq_stored_bytes", { system: "mortar" }), series("mortarmq_stored_bytes", { system: "mq9" })];
const PUSHES = series("mortarmq_push_subscriptions");

/** The tenant's usage levels as read from its aggregator at `at` (unix ms). */
export interface Usage {
  at: number;
  /** The push generation when the read started. */
  generation: number;
  /** Stored bytes, both systems. */
  stored: number;
  /** Push subscriptions. */
  pushes: number;
}

/** One read in flight at most; reads fail open (the last read stays, or zeros). */
export class UsageReader {
  private last: Usage | null = null;
  private reading: Promise<void> | null = null;
  /**
   * Bumped when a Mailbox reported a change of its push subscriptions to
   * the aggregator (TenantDirectory confirmPush, pushesChanged): a read
   * made before (an older generation) is not used for the push count.
   */
  private generation = 0;

  constructor(private readonly env: Env, private readonly tenant: string) {}

  /** The next read asks the aggregator again (the quotas changed). */
  forget(): void {
    this.last = null;
  }

  /** A push change was reported: reads started before it are stale for `read(now, true)`. */
  pushesChanged(): void {
    this.generation++;
  }

  /**
   * The tenant's usage, read from its aggregator at most every
   * STATE_CACHE_MS — and, with `current`, again when the read is of a push
   * generation older than the latest reported change (a read that started
   * before the change is not used: at most two reads).
   */
  async read(now: number, current = false): Promise<Usage> {
    const generation = current ? this.generation : 0;
    for (let reads = 0; ; reads++) {
      const r = this.last;
      if (r && r.generation >= generation && (reads > 0 || now - r.at < STATE_CACHE_MS)) return r;
      if (reads === 2) return r ?? { at: 0, generation: 0, stored: 0, pushes: 0 };
      this.reading ??= this.fetch();
      await this.reading;
    }
  }

  private async fetch(): Promise<void> {
    const gen = this.generation;
    try {
      const agg = usageStub(this.env, this.tenant);
      const [a, b, p] = await Promise.all([agg.seriesValue(STORED[0]!), agg.seriesValue(STORED[1]!), agg.seriesValue(PUSHES)]);
      this.last = { at: Date.now(), generation: gen, stored: Math.max(0, a + b), pushes: Math.max(0, p) };
    } catch (e) {
      // Aggregator unreachable: keep the last read (quotas fail open until it answers again).
      console.warn(`TenantDirectory ${this.tenant}: usage read failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.reading = null;
    }
  }
}
