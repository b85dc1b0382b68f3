/**
 * The TenantDirectory's admission role (docs/tenants.md): what a tenant may
 * do right now, under its quotas and the broker's per-tenant limits —
 * connection slots (leases, stored while a connection quota is set),
 * publish budget (rate bucket, memory), mailbox CREATEs (rate bucket here,
 * count asked of the tenant's MailboxIndex), push subscriptions (counted
 * from the pipeline's gauge) and push attempts (rate bucket), and the
 * tenant's storage state (usage-read.ts).
 *
 * Token checks come first, from the directory role (the glue calls them);
 * this module never refuses a token.
 */
import type { Env } from "../env";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { telemetryFlushMs } from "../usage/config";
import { pushAttemptsPerS, pushMaxSubscriptions } from "../shared/push-config";
import { RateBucket } from "./bucket";
import { leaseTtlMs } from "./config";
import { CREATE_BURST_S, mailboxLimits } from "./mailbox-limits";
import type { TenantStore } from "./store";
import type { CreateLease } from "./create-gate";
import { STATE_CACHE_MS, UsageReader } from "./usage-read";
import type { AdmitAnswer, ConnectAnswer, ConnectRequest, LeaseAnswer, PushAdmitAnswer, TenantState } from "./rpc";

/** Retry-After of a CREATE over the tenant's mailbox count, ms (slots free as mailboxes expire or are deleted). */
export const MAILBOX_QUOTA_RETRY_MS = 10_000;

/** Quotas, leases and rate buckets of one tenant. The buckets live in memory (a restart refills them). */
export class Admission {
  private readonly usage: UsageReader;
  /** The publish bucket (publish_msgs_per_s, publish_bytes_per_s). */
  private bucket: RateBucket | null = null;
  /** The mailbox-creation bucket (mailbox-limits.ts). */
  private createBucket: RateBucket | null = null;
  /** The push attempt bucket (PUSH_MAX_ATTEMPTS_PER_S). */
  private pushBucket: RateBucket | null = null;
  /** Times of PUSH.CREATEs admitted recently and not known to be in the pipeline's gauge (confirmPush removes them). */
  private readonly recentPushes: number[] = [];

  constructor(private readonly env: Env, private readonly store: TenantStore, private readonly tenant: string) {
    this.usage = new UsageReader(env, tenant);
  }

  /** The quotas changed (created, replaced): the next state is read afresh. */
  quotasChanged(): void {
    this.usage.forget();
  }

  /** The tenant's quotas and storage state (stored bytes read only while a storage quota is set). */
  async state(now: number): Promise<TenantState> {
    const quotas = this.store.quotas();
    const jurisdiction = this.store.record()?.jurisdiction ?? null;
    if (quotas.storage_bytes === null) return { quotas, storageFull: false, storedBytes: 0, jurisdiction };
    const { stored } = await this.usage.read(now);
    return { quotas, storageFull: stored >= quotas.storage_bytes, storedBytes: stored, jurisdiction };
  }

  /** Takes a connection slot while a connection quota is set (refused `connections` when all are taken). */
  async openConnection(req: ConnectRequest, now: number): Promise<ConnectAnswer> {
    const max = this.store.quotas().connections;
    if (max !== null && !this.store.hasLease(req.leaseId)) {
      const live = this.store.liveLeases(now);
      if (live >= max) {
        return { ok: false, reason: "connections", message: `connection quota exceeded: the tenant has ${live} open connections, quota ${max}` };
      }
      this.store.putLease(req.leaseId, req.protocol, now + leaseTtlMs(this.env));
    }
    return { ok: true, state: await this.state(now) };
  }

  /** Renews the connection's lease (while a connection quota is set); answers the current state. */
  async renew(req: ConnectRequest, now: number): Promise<ConnectAnswer> {
    if (this.store.quotas().connections !== null) this.store.putLease(req.leaseId, req.protocol, now + leaseTtlMs(this.env));
    return { ok: true, state: await this.state(now) };
  }

  /** The connection closed: its slot is free. */
  release(leaseId: string): void {
    this.store.dropLease(leaseId);
  }

  /** Publish budget from the tenant's bucket (bucket.ts), and the current state. */
  async lease(wantMsgs: number, wantBytes: number, now: number): Promise<LeaseAnswer> {
    const q = this.store.quotas();
    if (!this.bucket || !this.bucket.sameRates(q.publish_msgs_per_s, q.publish_bytes_per_s)) {
      this.bucket = new RateBucket(q.publish_msgs_per_s, q.publish_bytes_per_s, now);
    }
    const g = wantMsgs > 0 || wantBytes > 0 ? this.bucket.grant(wantMsgs, wantBytes, now) : { msgs: 0, bytes: 0 };
    return { msgs: g.msgs, bytes: g.bytes, state: await this.state(now) };
  }

  /**
   * A mailbox CREATE of `address` under the tenant's mailbox limits
   * (mailbox-limits.ts): one token of the creation bucket (`createsPerS`,
   * holding CREATE_BURST_S seconds of it; none left → `rate`), then a slot
   * of the count, asked of the MailboxIndex (`mailboxes`).
   * @throws when the index cannot be reached
   */
  async admitMailbox(address: string, now: number): Promise<AdmitAnswer> {
    const limits = mailboxLimits(this.env, this.store.quotas());
    const rate = limits.createsPerS;
    if (!this.createBucket || !this.createBucket.sameRates(rate, null)) this.createBucket = new RateBucket(rate, null, now, CREATE_BURST_S);
    if (this.createBucket.grant(1, 0, now).msgs < 1) {
      return {
        ok: false, kind: "rate", retryAfterMs: Math.ceil(1000 / rate),
        message: `mailbox creation rate exceeded: ${rate} CREATEs per second per tenant (bursts of ${Math.round(rate * CREATE_BURST_S)}); nothing was created, retry later`,
      };
    }
    return this.admitCount(address, limits.maxMailboxes, now, "nothing was created");
  }

  /**
   * Up to `want` mailbox-creation tokens from the creation bucket (a Worker
   * isolate's CreateGate, create-gate.ts), the limit they come under and
   * the tenant's state; the isolate then asks the MailboxIndex for the
   * count itself.
   */
  async leaseCreates(want: number, now: number): Promise<CreateLease> {
    const rate = mailboxLimits(this.env, this.store.quotas()).createsPerS;
    if (!this.createBucket || !this.createBucket.sameRates(rate, null)) this.createBucket = new RateBucket(rate, null, now, CREATE_BURST_S);
    const granted = want > 0 ? this.createBucket.grant(Math.min(want, Math.ceil(rate)), 0, now).msgs : 0;
    return { granted, ratePerS: rate, state: await this.state(now) };
  }

  /**
   * The dead-letter mailbox `address` of a PUSH.CREATE, under the mailbox
   * count only (not the creation rate). docs/push.md "Dead letters".
   * @throws when the index cannot be reached
   */
  async admitDeadLetterMailbox(address: string, now: number): Promise<AdmitAnswer> {
    const max = mailboxLimits(this.env, this.store.quotas()).maxMailboxes;
    return this.admitCount(address, max, now, `the push subscription's dead-letter mailbox ${address} needs one more: nothing was created`);
  }

  /** Asks the MailboxIndex for a slot for `address` under `max`; the refusal's message ends with `outcome`. */
  private async admitCount(address: string, max: number, now: number, outcome: string): Promise<AdmitAnswer> {
    const a = await mailboxIndexStub(this.env, this.tenant).admit(address, max, now);
    if (!a.ok) {
      return { ok: false, kind: "mailboxes", message: `mailbox quota exceeded: the tenant has ${a.count} mailboxes, quota ${max}; ${outcome}`, retryAfterMs: MAILBOX_QUOTA_RETRY_MS };
    }
    return a.at === undefined ? { ok: true } : { ok: true, at: a.at };
  }

  /** An admitted CREATE of `address` created nothing: its count slot is free again (its rate token is not). */
  async unadmitMailbox(address: string, at: number): Promise<void> {
    await mailboxIndexStub(this.env, this.tenant).release(address, at);
  }

  /**
   * A PUSH.CREATE under PUSH_MAX_SUBSCRIPTIONS, counted from the pipeline's
   * `mortarmq_push_subscriptions` gauge — read after the last change a
   * Mailbox reported (confirmPush, pushesChanged) — plus the CREATEs
   * admitted and not yet confirmed.
   */
  async admitPush(now: number): Promise<PushAdmitAnswer> {
    const max = pushMaxSubscriptions(this.env);
    const usage = await this.usage.read(now, true);
    return this.admitCounted(this.recentPushes, usage.pushes, usage.at, max, now,
      (n) => `push subscription limit reached: the tenant has ${n} push subscriptions, limit ${max}; nothing was created`);
  }

  /** An admitted PUSH.CREATE (`admitPush` answered `at`) created nothing: its slot is free again. */
  unadmitPush(at: number): void {
    unadmit(this.recentPushes, at);
  }

  /** The PUSH.CREATE admitted at `at` is in the gauge now (the Mailbox reported it). */
  confirmPush(at: number): void {
    unadmit(this.recentPushes, at);
    this.usage.pushesChanged();
  }

  /** A Mailbox reported fewer push subscriptions: the next admitPush reads the gauge again. */
  pushesChanged(): void {
    this.usage.pushesChanged();
  }

  /** Push attempts from the tenant's bucket (PUSH_MAX_ATTEMPTS_PER_S, bursts of one second): how many of `want` may start now. */
  leasePushAttempts(want: number, now: number): number {
    const rate = pushAttemptsPerS(this.env);
    if (!this.pushBucket || !this.pushBucket.sameRates(rate, null)) this.pushBucket = new RateBucket(rate, null, now);
    return this.pushBucket.grant(want, 0, now).msgs;
  }

  /**
   * Admits one more of something counted by a pipeline gauge (push
   * subscriptions): admitted while `existing` (the gauge as read at
   * `readAt`) plus the admissions in `recent` since `readAt` − 2 flush
   * intervals (possibly not in that gauge yet) is below `max`, so a burst
   * cannot overshoot; something removed frees its slot once the pipeline
   * reported it.
   */
  private admitCounted(recent: number[], existing: number, readAt: number, max: number, now: number, refusal: (n: number) => string): PushAdmitAnswer {
    const lag = 2 * telemetryFlushMs(this.env);
    let kept = 0; // filtered in place (no spread: a burst can leave more entries than a call takes arguments)
    for (const t of recent) if (t > now - lag - STATE_CACHE_MS - 1_000) recent[kept++] = t;
    recent.length = kept;
    const n = existing + recent.filter((t) => t > readAt - lag).length;
    if (n >= max) return { ok: false, message: refusal(n), retryAfterMs: lag };
    recent.push(now);
    return { ok: true, at: now };
  }
}

/** Gives back the admission made at `at` (the last one with that time). */
function unadmit(recent: number[], at: number): void {
  const i = recent.lastIndexOf(at);
  if (i >= 0) recent.splice(i, 1);
}
