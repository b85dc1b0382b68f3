/**
 * The publishing side of the tenant quotas (docs/tenants.md "Quotas"),
 * pure apart from the injected `lease` call: one PublishGate per MortarMQ
 * session, NATS session, and per tenant in each Worker isolate (mq9 over
 * HTTP).
 *
 * - No publish quota (the default): `admit` is one branch; no call is made.
 * - Publish rate: the gate holds budget leased from the tenant's bucket
 *   (bucket.ts) and asks for the next lease in the background when half of
 *   the last one is left, so a publisher under its rate never waits for a
 *   call. A lease adapts to the rate the gate observed since its previous
 *   lease: LEASE_S seconds of it, at least 1/10 s of the quota (CHUNK_S) and
 *   at most LEASE_S of the quota — so a steady publisher makes about one
 *   lease call per second whatever its message rate (issue 27 item 4: ≤ 1
 *   request/s to the TenantDirectory), and a starting or bursting one ten.
 *   Budget held unused by gates is bounded by LEASE_S of the quota each, so
 *   what a tenant publishes over T seconds stays within its rate × (T +
 *   BURST_S + LEASE_S) plus one lease per other gate. A publish that
 *   finds no budget waits for the lease in flight (or starts one) and tries
 *   again; once a lease came back short (the tenant's bucket is empty) it
 *   is refused (`rate`) for the next 1/10 s without further calls, with the
 *   time after which the rate allows it. A message larger than one second
 *   of the byte rate needs a full second of budget and is charged in full.
 * - Storage quota: `storageFull` comes with every state answer; while a
 *   storage quota is set the gate refreshes the state at most every
 *   REFRESH_MS while publishing (in the background), so a publisher sees
 *   the quota reached or freed within REFRESH_MS + the pipeline's staleness.
 * - A failing lease call (tenant object unreachable) grants one chunk:
 *   quotas fail open rather than stop publishing.
 */
import { BURST_S } from "./bucket";
import type { LeaseAnswer, TenantState } from "./rpc";
import { hasRateQuota } from "../../wire/admin/tenants";

/** Smallest lease, seconds of the quota (also how long a short lease's refusal holds). */
export const CHUNK_S = 0.1;
/** Largest lease, seconds of the quota; and how many seconds of the observed rate a lease covers. */
export const LEASE_S = 1;
/** Longest a publishing gate uses a state (storage) without refreshing it, ms. */
export const REFRESH_MS = 1_000;

/** Why a publish (or a mailbox CREATE) is refused. */
export interface Refusal {
  /**
   * Which limit: a rate (publish rate, mailbox-creation rate), storage
   * bytes, mailbox count — or `overloaded`: the check itself could not run
   * because the broker is overloaded (out of memory).
   */
  kind: "rate" | "storage" | "mailboxes" | "overloaded";
  message: string;
  /** When it may succeed, ms from now (≥ 1). */
  retryAfterMs: number;
}

/** Outcome of `admit`. */
export type Verdict =
  | { ok: true }
  | { ok: false; wait: Promise<void> }
  | { ok: false; refuse: Refusal };

const OK: Verdict = Object.freeze({ ok: true });
/**
 * The answer of every admission known at once (admitAsync returns this very
 * promise, so a caller may recognise "admitted now" without waiting).
 */
export const ADMITTED: Promise<null> = Promise.resolve(null);

/** Whatever the gate asks its tenant: budget (0, 0 = only the current state). */
export type LeaseFn = (wantMsgs: number, wantBytes: number) => Promise<LeaseAnswer>;

export class PublishGate {
  private state: TenantState;
  private msgs = 0;
  private bytes = 0;
  private inflight: Promise<void> | null = null;
  /** When a lease last granted less than it asked for (the bucket is empty), unix ms. */
  private shortAt = -Infinity;
  private refreshedAt: number;
  /** Admitted since the last lease call (messages, bytes) and when that call was made, unix ms. */
  private usedMsgs = 0;
  private usedBytes = 0;
  private windowAt: number;
  /** Size of the last lease asked for (messages, bytes): the background refill starts below half of it. */
  private lastMsgs = 0;
  private lastBytes = 0;

  /**
   * `clock`: unix ms now (injectable for tests). `perCaller`: the gate is
   * shared by independent requests (a Worker isolate's HTTP requests) that
   * must not wait on each other's I/O — workerd cancels the continuations
   * of a promise whose creating request already ended, so a request
   * awaiting another's lease could hang for good. Then nothing is leased
   * in the background and each request short of budget makes its own
   * lease call (sessions, one connection each, share one call instead).
   */
  constructor(
    private readonly lease: LeaseFn,
    state: TenantState,
    now: number,
    private readonly clock: () => number = Date.now,
    private readonly perCaller = false,
  ) {
    this.state = state;
    this.refreshedAt = now;
    this.windowAt = now;
  }

  /** Replaces the tenant state (connect / renew / any answer that carries it). */
  setState(state: TenantState, now: number): void {
    this.state = state;
    this.refreshedAt = now;
  }

  /** The current quotas. */
  get quotas() {
    return this.state.quotas;
  }

  /**
   * May one message of `bytes` be published now? `wait`: a lease is under
   * way — wait for it and ask again. Refused for the rate only when the
   * last lease came back short less than one chunk (1/10 s) ago, so
   * concurrent publishers waiting on one lease each get another try.
   */
  admit(bytes: number, at?: number): Verdict {
    const q = this.state.quotas;
    if (q.storage_bytes === null && !hasRateQuota(q)) return OK; // the default: no clock read, no call
    const now = at ?? this.clock();
    if (q.storage_bytes !== null) {
      if (!this.perCaller && now - this.refreshedAt >= REFRESH_MS && this.inflight === null) this.fetch(0, 0);
      if (this.state.storageFull) {
        return { ok: false, refuse: {
          kind: "storage",
          message: `storage quota exceeded: the tenant stores ${this.state.storedBytes} bytes, quota ${q.storage_bytes}; nothing was stored`,
          retryAfterMs: REFRESH_MS,
        } };
      }
    }
    if (!hasRateQuota(q)) return OK;
    const needMsgs = q.publish_msgs_per_s === null ? 0 : 1;
    const needBytes = q.publish_bytes_per_s === null ? 0 : Math.min(bytes, q.publish_bytes_per_s * BURST_S);
    if (this.msgs >= needMsgs && this.bytes >= needBytes) {
      this.msgs -= needMsgs;
      this.bytes -= q.publish_bytes_per_s === null ? 0 : bytes;
      this.usedMsgs += needMsgs;
      this.usedBytes += q.publish_bytes_per_s === null ? 0 : bytes;
      if (!this.perCaller && this.inflight === null && this.low()) this.fetch(...this.want(0, 0));
      return OK;
    }
    if (!this.perCaller && this.inflight !== null) return { ok: false, wait: this.inflight };
    if (now - this.shortAt < CHUNK_S * 1000) return { ok: false, refuse: this.rateRefusal(needMsgs, needBytes) };
    if (this.perCaller) return { ok: false, wait: this.leaseCall(...this.want(needMsgs, needBytes)) };
    this.fetch(...this.want(needMsgs, needBytes));
    return { ok: false, wait: this.inflight! };
  }

  /**
   * `admit`, waiting for leases as needed: resolves null = admitted, else
   * the refusal. Always a promise (callers await it inside their ordered
   * lane, objects/shared/lanes.ts); when the answer is known at once (no
   * quota, budget in hand) it is an already-settled one, so an admitted
   * message loses no batching. Ends: each wait is one lease, which either
   * grants budget or comes back short (then the next `admit` refuses).
   */
  admitAsync(bytes: number): Promise<Refusal | null> {
    const v = this.admit(bytes, this.clock());
    if (v.ok) return ADMITTED;
    if ("refuse" in v) return Promise.resolve(v.refuse);
    return this.waitAndAdmit(v.wait, bytes);
  }

  private async waitAndAdmit(wait: Promise<void>, bytes: number): Promise<Refusal | null> {
    for (;;) {
      await wait;
      const v = this.admit(bytes, this.clock());
      if (v.ok) return null;
      if ("refuse" in v) return v.refuse;
      wait = v.wait;
    }
  }

  /** Budget below half the last lease, or half a chunk (in a limited dimension). */
  private low(): boolean {
    const q = this.state.quotas;
    return (q.publish_msgs_per_s !== null && this.msgs < Math.max(chunk(q.publish_msgs_per_s), this.lastMsgs) / 2)
      || (q.publish_bytes_per_s !== null && this.bytes < Math.max(chunk(q.publish_bytes_per_s), this.lastBytes) / 2);
  }

  /**
   * How much to ask for: the adaptive lease (leaseSize), or what the
   * waiting message lacks if that is more. Starts the next observation window.
   */
  private want(needMsgs: number, needBytes: number): [number, number] {
    const q = this.state.quotas;
    const now = this.clock();
    const elapsedS = Math.max(CHUNK_S, (now - this.windowAt) / 1000);
    const m = q.publish_msgs_per_s === null ? 0 : Math.max(leaseSize(q.publish_msgs_per_s, this.usedMsgs / elapsedS), needMsgs - this.msgs);
    const b = q.publish_bytes_per_s === null ? 0 : Math.max(leaseSize(q.publish_bytes_per_s, this.usedBytes / elapsedS), needBytes - this.bytes);
    this.usedMsgs = 0;
    this.usedBytes = 0;
    this.windowAt = now;
    this.lastMsgs = m;
    this.lastBytes = b;
    return [m, b];
  }

  private fetch(wantMsgs: number, wantBytes: number): void {
    this.inflight = this.leaseCall(wantMsgs, wantBytes).finally(() => {
      this.inflight = null;
    });
  }

  /** One lease call; its answer is added to the budget (a failed call grants what was asked: fail open). */
  private leaseCall(wantMsgs: number, wantBytes: number): Promise<void> {
    return this.lease(wantMsgs, wantBytes).then(
      (a) => {
        if (Number.isFinite(a.msgs)) this.msgs += a.msgs;
        if (Number.isFinite(a.bytes)) this.bytes += a.bytes;
        if (a.msgs < wantMsgs || a.bytes < wantBytes) this.shortAt = this.clock();
        this.setState(a.state, this.clock());
      },
      () => {
        // Tenant object unreachable: fail open by one chunk (quotas must not stop publishing).
        this.msgs += wantMsgs;
        this.bytes += wantBytes;
        this.refreshedAt = this.clock();
      },
    );
  }

  private rateRefusal(needMsgs: number, needBytes: number): Refusal {
    const q = this.state.quotas;
    let ms = 1;
    if (q.publish_msgs_per_s !== null) ms = Math.max(ms, ((needMsgs - this.msgs) / q.publish_msgs_per_s) * 1000);
    if (q.publish_bytes_per_s !== null) ms = Math.max(ms, ((needBytes - this.bytes) / q.publish_bytes_per_s) * 1000);
    const limits = [
      q.publish_msgs_per_s !== null ? `${q.publish_msgs_per_s} msg/s` : "",
      q.publish_bytes_per_s !== null ? `${q.publish_bytes_per_s} bytes/s` : "",
    ].filter(Boolean).join(", ");
    return { kind: "rate", message: `publish rate limit exceeded (${limits}); nothing was stored, retry later`, retryAfterMs: Math.ceil(ms) };
  }
}

/** Size of the smallest lease for a rate, units. */
function chunk(ratePerS: number): number {
  return Math.max(1, Math.ceil(ratePerS * CHUNK_S));
}

/**
 * Size of a lease under quota `ratePerS` for a gate that used `observedPerS`
 * since its last lease: LEASE_S seconds of the observed rate, within
 * [one chunk, LEASE_S seconds of the quota]. Units as the rate.
 */
export function leaseSize(ratePerS: number, observedPerS: number): number {
  return Math.min(Math.max(1, Math.ceil(ratePerS * LEASE_S)), Math.max(chunk(ratePerS), Math.ceil(observedPerS * LEASE_S)));
}
