/**
 * The mailbox-creation side of the tenant limits (mailbox-limits.ts;
 * docs/tenants.md "Default limits"), pure apart from the injected `lease`
 * call: one CreateGate per tenant in each Worker isolate, shared by its
 * HTTP requests and sessions, so mailbox CREATEs do not each ask the
 * tenant's one TenantDirectory (issue 27 item 4).
 *
 * The gate holds creation tokens leased from the tenant's creation bucket
 * (Admission.leaseCreates). A CREATE takes one; a CREATE that finds none
 * makes its own lease call (the gate is shared by requests that must not
 * wait on each other's I/O: gate.ts `perCaller`). A lease asks for LEASE_S
 * seconds of the creation rate the gate observed since its previous lease,
 * at least one token and at most LEASE_S seconds of the limit — so a steady
 * creator makes about one call per second, and tokens held unused by a gate
 * are at most one second of the limit. A lease that came back empty makes
 * the CREATEs of the next 1/rate s (at most CHUNK_S) refused without a call.
 * The count of mailboxes is not leased: the MailboxIndex admits each
 * CREATE's address (connection-auth.ts admitMailbox).
 */
import { CHUNK_S, LEASE_S, type Refusal } from "./gate";
import type { TenantState } from "./rpc";
import { CREATE_BURST_S } from "./mailbox-limits";

/** Longest a gate uses tokens (and the state) of one lease, ms: older ones are dropped (the bucket refilled meanwhile). */
export const TOKENS_TTL_MS = 1_000;

/** `leaseCreates` answer: tokens granted, the limit they were granted under (CREATEs/s), and the tenant's state. */
export interface CreateLease {
  granted: number;
  ratePerS: number;
  state: TenantState;
}

/** Whatever the gate asks its tenant for: `want` creation tokens. */
export type CreateLeaseFn = (want: number) => Promise<CreateLease>;

/** What `admit` answers: admitted (with the tenant's state when a lease just brought it), or the rate refusal. */
export type CreateVerdict = { ok: true; state: TenantState | null } | { ok: false; refuse: Refusal };

export class CreateGate {
  private tokens = 0;
  private used = 0;
  private windowAt: number;
  /** Until when a short lease makes CREATEs refused without a call, unix ms. */
  private refuseUntil = -Infinity;
  private ratePerS = 1;
  /** When the last lease answered, unix ms. */
  private leasedAt = -Infinity;
  /** The last state a lease answered (null before the first). */
  state: TenantState | null = null;

  constructor(private readonly lease: CreateLeaseFn, now: number, private readonly clock: () => number = Date.now) {
    this.windowAt = now;
  }

  /**
   * May one mailbox be created now (the creation rate only)? Resolves at
   * once with a token in hand; else after one lease call.
   * @throws when the lease call fails (the caller decides: fail open or refuse)
   */
  async admit(): Promise<CreateVerdict> {
    const now = this.clock();
    if (now - this.leasedAt > TOKENS_TTL_MS) this.tokens = 0; // stale tokens and state: lease afresh
    if (this.tokens >= 1) {
      this.tokens--;
      this.used++;
      return { ok: true, state: null };
    }
    if (now < this.refuseUntil) return { ok: false, refuse: this.refusal(now) };
    const want = this.want(now);
    const a = await this.lease(want);
    this.ratePerS = a.ratePerS;
    this.state = a.state;
    this.tokens += a.granted;
    const after = this.clock();
    this.leasedAt = after;
    if (this.tokens < 1) {
      this.refuseUntil = after + Math.min(CHUNK_S * 1000, 1000 / Math.max(a.ratePerS, 1e-9));
      return { ok: false, refuse: this.refusal(after) };
    }
    this.tokens--;
    this.used++;
    return { ok: true, state: a.state };
  }

  /** Tokens to ask for: LEASE_S seconds of the observed rate, within [1, LEASE_S seconds of the limit]. Starts the next window. */
  private want(now: number): number {
    const observed = this.used / Math.max(CHUNK_S, (now - this.windowAt) / 1000);
    this.used = 0;
    this.windowAt = now;
    return Math.max(1, Math.min(Math.ceil(this.ratePerS * LEASE_S), Math.ceil(observed * LEASE_S)));
  }

  private refusal(now: number): Refusal {
    const rate = this.ratePerS;
    return {
      kind: "rate", retryAfterMs: Math.max(1, Math.ceil(Math.max(this.refuseUntil - now, 1000 / rate))),
      message: `mailbox creation rate exceeded: ${rate} CREATEs per second per tenant (bursts of ${Math.round(rate * CREATE_BURST_S)}); nothing was created, retry later`,
    };
  }
}
