/**
 * Push attempts per second leased from the tenant (TenantDirectory,
 * PUSH_MAX_ATTEMPTS_PER_S; docs/push.md "Limits"): the driver (driver.ts)
 * takes one leased attempt per attempt it starts and asks for more when
 * they are used up.
 */

/** After the tenant's attempt budget came back empty, ask again after this long, ms. */
export const THROTTLE_MS = 100;
/** Leased attempts not used within this long are dropped (they must not pile up past the tenant's burst), ms. */
const LEASE_TTL_MS = 1_000;

/** The attempts one mailbox holds from its tenant's budget. */
export class AttemptLease {
  /** A lease request is in flight. */
  leasing = false;
  /** Until when the tenant's budget is known empty, ms. */
  throttledUntil = 0;
  private tokens = 0;
  private tokensUntil = 0;

  /**
   * `ask` leases attempts (how many may start now; Infinity = no limit);
   * `answered` runs after every lease request ended (the driver looks again).
   */
  constructor(private readonly ask: () => Promise<number>, private readonly answered: () => void) {}

  /**
   * Takes one leased attempt at `now` (ms): true when one was held. Else,
   * unless throttled or a lease is in flight, and when `mayAsk()` allows a
   * subrequest (it counts it), asks the tenant for more (answered later).
   * When the tenant's object does not answer, fails open: one attempt at a time.
   */
  take(now: number, mayAsk: () => boolean): boolean {
    if (this.tokens > 0 && now < this.tokensUntil) {
      this.tokens--;
      return true;
    }
    this.tokens = 0;
    if (now < this.throttledUntil || this.leasing || !mayAsk()) return false;
    this.leasing = true;
    this.ask().then(
      (n) => {
        this.tokens = n;
        this.tokensUntil = Date.now() + LEASE_TTL_MS;
        if (n <= 0) this.throttledUntil = Date.now() + THROTTLE_MS;
      },
      () => {
        this.tokens = 1; // the tenant's object did not answer: fail open, one attempt at a time
        this.tokensUntil = Date.now() + LEASE_TTL_MS;
      },
    ).finally(() => {
      this.leasing = false;
      this.answered();
    });
    return false;
  }
}
