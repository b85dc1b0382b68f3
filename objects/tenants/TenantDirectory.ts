/**
 * TenantDirectory Durable Object (docs/tenants.md), in two roles:
 *
 * - **Tenant** (`tenants/<id>`, tenantStub): the tenant's record, its
 *   issued tokens (SHA-256 only), its quotas, its publish-rate bucket
 *   (memory) and its connection leases. Every transport that meets an
 *   issued token asks this object — the token names its tenant and token
 *   id (wire/admin/tenants.ts), so there is no global lookup. Sessions also
 *   register here (`openConnection`), re-check their token and renew their lease
 *   (`renew`, every TENANT_REVALIDATE_MS) and lease publish budget in
 *   chunks (`lease`). Tenants configured statically (AUTH_TOKENS) and the
 *   open broker's `default` use the same object for quotas, without a record.
 * - **Index** (`tenants-index/all`, tenantIndexStub): the list of directory
 *   tenants (a Worker cannot enumerate objects), for `GET /admin/tenants`.
 *
 * Reads of the tenant's stored bytes come from its UsageAggregator
 * (counting pipeline), cached here for STATE_CACHE_MS; its mailbox count
 * from its MailboxIndex (exact, asked per CREATE).
 *
 * A deleted tenant's data is purged from this object's alarm, one bounded
 * step per run (purge.ts, purger.ts); the record stays, with the purge's
 * progress, until the id is taken again.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { UNLIMITED, timingSafeEqualStr, tokenExpiryError, type Quotas, type TenantDoc, type IssuedToken, type TokenInfo } from "../../wire/admin/tenants";
import { series } from "../usage/catalog";
import { telemetryFlushMs, tenantOfName, usageStub } from "../usage/stub";
import { RateBucket } from "./bucket";
import { CREATE_BURST_S, mailboxLimits } from "./mailbox-limits";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { newIssuedToken } from "./crypto";
import { TenantStore, type DirectoryRow, type TenantRecord, type TokenRow } from "./store";
import { leaseTtlMs, purgeDelayMs } from "./stub";
import { newPurge, nextStepAt, purgeDoc, type PurgeState } from "./purge";
import { purgeStep } from "./purger";
import { pushAttemptsPerS, pushMaxSubscriptions } from "../shared/push-config";
import type { AdminResult, AdmitAnswer, PushAdmitAnswer, ConnectAnswer, ConnectRequest, LeaseAnswer, TenantState } from "./rpc";

/** How long a read of the tenant's stored bytes is reused, ms. */
export const STATE_CACHE_MS = 500;
/** Retry-After of a CREATE over the tenant's mailbox count, ms (slots free as mailboxes expire or are deleted). */
export const MAILBOX_QUOTA_RETRY_MS = 10_000;

const STORED = [series("mortarmq_stored_bytes", { system: "mortar" }), series("mortarmq_stored_bytes", { system: "mq9" })];
const PUSHES = series("mortarmq_push_subscriptions");

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

export class TenantDirectory extends DurableObject<Env> {
  private readonly store: TenantStore;
  private readonly tenant: string;
  private bucket: RateBucket | null = null;
  private usageRead: Usage | null = null;
  private usageReading: Promise<void> | null = null;
  /** The tenant's mailbox-creation bucket (memory; mailbox-limits.ts). */
  private createBucket: RateBucket | null = null;
  /** Times of PUSH.CREATEs admitted recently and not known to be in the pipeline's gauge (confirmPush removes them). */
  private recentPushes: number[] = [];
  /**
   * Bumped when a Mailbox reported a change of its push subscriptions to
   * the aggregator (confirmPush, pushesChanged): a usage read made before
   * (an older generation) is not used for the push count.
   */
  private pushGeneration = 0;
  /** The tenant's push attempt bucket (PUSH_MAX_ATTEMPTS_PER_S), memory. */
  private pushBucket: RateBucket | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new TenantStore(ctx.storage);
    // Started for its alarm (a purge) the object has no name (objects/shared/object-name.ts), and the
    // named calls that follow reach this same instance: its record knows the id. (Not stored as a
    // name: a lookup of a tenant that does not exist must leave no storage behind, store.ts.)
    this.tenant = tenantOfName(ctx.id.name) ?? this.store.record()?.id ?? "";
  }

  // ---------------------------------------------------------------- admin (tenant role)

  /**
   * Creates the directory tenant. 409 when it exists, or when the id belonged
   * to a deleted tenant whose data is still being purged; once that purge is
   * done the id may be taken again and the new tenant starts empty (no
   * topics, groups, mailboxes, agents, usage or tokens: docs/tenants.md).
   */
  create(name: string, quotas: Quotas | null, now = Date.now()): AdminResult<TenantDoc> {
    const existing = this.store.record();
    if (existing) {
      if (existing.deleted_at === null) return { ok: false, status: 409, error: `tenant ${this.tenant} already exists` };
      const p = this.store.purge();
      if (p && p.phase !== "done") {
        return { ok: false, status: 409, error: `tenant id ${this.tenant} belonged to a deleted tenant whose data is still being purged (${p.phase}); it can be reused once \`mortarmq admin tenants describe ${this.tenant}\` shows the purge done` };
      }
    }
    this.store.tx(() => {
      this.store.dropTokens();
      this.store.dropLeases();
      this.store.setPurge(null);
      this.store.setRecord({ id: this.tenant, name, created_at: now, deleted_at: null });
      this.store.setQuotas(quotas ?? { ...UNLIMITED });
    });
    this.usageRead = null;
    return { ok: true, value: this.doc(this.store.record()!) };
  }

  /** The tenant document. `implicit`: the tenant is configured outside the directory (AUTH_TOKENS / open broker). */
  describe(implicit: boolean): AdminResult<TenantDoc> {
    const rec = this.store.record();
    if (rec) return { ok: true, value: this.doc(rec) };
    if (!implicit) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    return { ok: true, value: this.doc(null) };
  }

  /**
   * Deletes the tenant: every token is revoked and every lease dropped at
   * once, and the purge of all its data is scheduled (purge.ts; it starts
   * TENANT_PURGE_DELAY_MS later and runs from this object's alarm, one
   * bounded step per run). Deleting a deleted tenant again answers its
   * document and makes sure an unfinished purge is still scheduled
   * (idempotent). 404 for a tenant that never existed.
   */
  async remove(now = Date.now()): Promise<AdminResult<TenantDoc>> {
    const rec = this.store.record();
    if (!rec) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    let next = rec;
    if (rec.deleted_at === null) {
      next = { ...rec, deleted_at: now };
      this.store.tx(() => {
        this.store.setRecord(next);
        this.store.revokeAll(now);
        this.store.dropLeases();
        this.store.setPurge(newPurge(now, purgeDelayMs(this.env)));
      });
    } else if (!this.store.purge()) {
      this.store.setPurge(newPurge(now, purgeDelayMs(this.env))); // deleted before purging existed
    }
    await this.armPurge(now);
    return { ok: true, value: this.doc(next) };
  }

  /** The purge's alarm: one step (purger.ts), stored, then the next step armed. A failed step is retried with backoff. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const s = this.store.purge();
    if (!s || s.phase === "done" || this.tenant === "") return;
    // Armed first: a crash during the step leaves the alarm set, and the step runs again.
    await this.ctx.storage.setAlarm(now + 1_000);
    let next: PurgeState;
    try {
      next = await purgeStep(this.env, this.tenant, s, now);
    } catch (e) {
      next = { ...s, failures: s.failures + 1, lastError: e instanceof Error ? e.message : String(e) };
      console.warn(`TenantDirectory ${this.tenant}: purge step ${s.phase} failed (attempt ${next.failures}): ${next.lastError}`);
    }
    this.store.tx(() => {
      this.store.setPurge(next);
      if (next.phase === "done") {
        this.store.dropTokens();
        this.store.dropLeases();
      }
    });
    await this.armPurge(Date.now());
  }

  /** Arms the alarm for the purge's next step (or deletes it when there is none). */
  private async armPurge(now: number): Promise<void> {
    const s = this.store.purge();
    const at = s ? nextStepAt(s, now) : null;
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(at);
  }

  /**
   * Issues a token: the answer is the only place the token ever appears.
   * `expiresAt` (unix ms, null = never): from then on the token is refused
   * like a revoked one (400 when it is not in the future or more than 10
   * years ahead: tokenExpiryError).
   */
  async issueToken(label: string, expiresAt: number | null = null, now = Date.now()): Promise<AdminResult<IssuedToken>> {
    const rec = this.store.record();
    if (!rec || rec.deleted_at !== null) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    const bad = expiresAt === null ? null : tokenExpiryError(expiresAt, now);
    if (bad !== null) return { ok: false, status: 400, error: bad };
    const t = await newIssuedToken(this.tenant);
    if (this.store.token(t.tokenId)) return { ok: false, status: 409, error: "token id collision; issue again" };
    this.store.addToken({ token_id: t.tokenId, hash: t.hash, label, created_at: now, revoked_at: null, expires_at: expiresAt, last_used_at: null });
    return { ok: true, value: { tenant: this.tenant, token_id: t.tokenId, token: t.token, label, created_at: iso(now)!, expires_at: iso(expiresAt) } };
  }

  /** The tenant's issued tokens (never their secrets), with expiry and last use. */
  listTokens(): AdminResult<TokenInfo[]> {
    if (!this.store.record()) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    return { ok: true, value: this.store.tokens().map(tokenInfo) };
  }

  /** Revokes a token (idempotent). New connections and requests are refused at once. */
  revokeToken(tokenId: string, now = Date.now()): AdminResult<TokenInfo> {
    const rec = this.store.record();
    if (!rec) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    if (!this.store.token(tokenId)) return { ok: false, status: 404, error: `token ${tokenId} does not exist in tenant ${this.tenant}` };
    this.store.revokeToken(tokenId, now);
    return { ok: true, value: tokenInfo(this.store.token(tokenId)!) };
  }

  /** Replaces the quotas. `implicit` as in describe. */
  putQuotas(q: Quotas, implicit: boolean): AdminResult<Quotas> {
    const rec = this.store.record();
    if (rec?.deleted_at != null || (!rec && !implicit)) return { ok: false, status: 404, error: `tenant ${this.tenant} does not exist` };
    this.store.setQuotas(q);
    this.usageRead = null;
    return { ok: true, value: q };
  }

  /**
   * The tenant's row for the directory index (null: never created), so the
   * admin API can repair the index when an earlier index write failed.
   */
  directoryRow(): DirectoryRow | null {
    const rec = this.store.record();
    return rec ? { id: rec.id, name: rec.name, created_at: rec.created_at, deleted_at: rec.deleted_at } : null;
  }

  // ---------------------------------------------------------------- index role

  /** Index: records or updates a directory tenant. */
  indexUpsert(row: DirectoryRow): void {
    this.store.upsertDirectory(row);
  }

  /** Index: every directory tenant (deleted ones included), by id. */
  indexList(): DirectoryRow[] {
    return this.store.directory();
  }

  // ---------------------------------------------------------------- connections and requests

  /**
   * Checks an issued token (by id, then its hash in constant time) without
   * registering a connection: mq9 over HTTP, one call per request.
   */
  async authenticate(tokenId: string, tokenHash: string): Promise<ConnectAnswer> {
    const refused = this.checkToken(tokenId, tokenHash);
    if (refused) return refused;
    return { ok: true, state: await this.state() };
  }

  /**
   * A connection authenticated (or is about to): checks its issued token if
   * it has one, and takes a connection slot while a connection quota is set.
   */
  async openConnection(req: ConnectRequest, now = Date.now()): Promise<ConnectAnswer> {
    const refused = this.checkToken(req.tokenId, req.tokenHash, now);
    if (refused) return refused;
    const max = this.store.quotas().connections;
    if (max !== null && !this.store.hasLease(req.leaseId)) {
      const live = this.store.liveLeases(now);
      if (live >= max) {
        return { ok: false, reason: "connections", message: `connection quota exceeded: the tenant has ${live} open connections, quota ${max}` };
      }
      this.store.putLease(req.leaseId, req.protocol, now + leaseTtlMs(this.env));
    }
    return { ok: true, state: await this.state() };
  }

  /**
   * An open connection re-checks its token (revoked → refused) and renews
   * its lease; answers the current state (quotas may have changed).
   */
  async renew(req: ConnectRequest, now = Date.now()): Promise<ConnectAnswer> {
    const refused = this.checkToken(req.tokenId, undefined, now);
    if (refused) return refused;
    if (this.store.quotas().connections !== null) this.store.putLease(req.leaseId, req.protocol, now + leaseTtlMs(this.env));
    return { ok: true, state: await this.state() };
  }

  /** The connection closed: its slot is free. */
  release(leaseId: string): void {
    this.store.dropLease(leaseId);
  }

  /** Publish budget from the tenant's bucket (bucket.ts), and the current state. */
  async lease(wantMsgs: number, wantBytes: number, now = Date.now()): Promise<LeaseAnswer> {
    const q = this.store.quotas();
    if (!this.bucket || !this.bucket.sameRates(q.publish_msgs_per_s, q.publish_bytes_per_s)) {
      this.bucket = new RateBucket(q.publish_msgs_per_s, q.publish_bytes_per_s, now);
    }
    const g = wantMsgs > 0 || wantBytes > 0 ? this.bucket.grant(wantMsgs, wantBytes, now) : { msgs: 0, bytes: 0 };
    return { msgs: g.msgs, bytes: g.bytes, state: await this.state() };
  }

  /**
   * A mailbox CREATE of `address`, under the tenant's mailbox limits
   * (mailbox-limits.ts: its quotas, else the broker's defaults — for every
   * tenant):
   * - creation rate: one token of the tenant's bucket (`createsPerS`,
   *   holding CREATE_BURST_S seconds of it); none left → refused `rate`
   *   with the time until the next token;
   * - count: asked of the tenant's MailboxIndex (`admit`), which counts
   *   exactly the mailboxes it lists plus the CREATEs admitted whose mailbox
   *   is not listed yet; at `maxMailboxes` → refused `mailboxes`. A mailbox
   *   frees its slot when its expiry (TTL) removes it from the index.
   * `at` of an admission that reserved a slot is for `unadmitMailbox`.
   * @throws when the index cannot be reached (the caller decides: connection-auth.ts admitMailbox)
   */
  async admitMailbox(address: string, now = Date.now()): Promise<AdmitAnswer> {
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
   * The dead-letter mailbox `address` (`<source>.dlq`) of a PUSH.CREATE,
   * under the tenant's mailbox count only (admitMailbox's count, not its
   * creation rate: it is part of the PUSH.CREATE). A `.dlq` already listed
   * takes no slot; `at` of an admission that reserved one is for
   * `unadmitMailbox`. docs/push.md "Dead letters".
   * @throws when the index cannot be reached
   */
  async admitDeadLetterMailbox(address: string, now = Date.now()): Promise<AdmitAnswer> {
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

  /** An admitted CREATE of `address` (`admitMailbox` answered `at`) created nothing: its count slot is free again (its rate token is not). */
  async unadmitMailbox(address: string, at: number): Promise<void> {
    await mailboxIndexStub(this.env, this.tenant).release(address, at);
  }

  /**
   * A PUSH.CREATE under the tenant's push subscription limit
   * (PUSH_MAX_SUBSCRIPTIONS, docs/push.md), counted from the
   * pipeline's `mortarmq_push_subscriptions` gauge — read after the last
   * change a Mailbox reported at once (confirmPush, pushesChanged) — plus
   * the CREATEs admitted and not yet confirmed. Without those reports (the
   * aggregator did not answer the Mailbox) a change is counted once the
   * Mailbox's next flush reported it.
   */
  async admitPush(now = Date.now()): Promise<PushAdmitAnswer> {
    const max = pushMaxSubscriptions(this.env);
    const usage = await this.usage(now, this.pushGeneration);
    return this.admitCounted(this.recentPushes, usage.pushes, usage.at, max, now,
      (n) => `push subscription limit reached: the tenant has ${n} push subscriptions, limit ${max}; nothing was created`);
  }

  /** An admitted PUSH.CREATE (`admitPush` answered `at`) created nothing: its slot is free again. */
  unadmitPush(at: number): void {
    unadmit(this.recentPushes, at);
  }

  /**
   * The PUSH.CREATE admitted at `at` created its subscription and the
   * Mailbox has reported it to the aggregator: the gauge counts it from
   * now on, the admission no longer needs to.
   */
  confirmPush(at: number): void {
    unadmit(this.recentPushes, at);
    this.pushGeneration++;
  }

  /**
   * A Mailbox reported fewer push subscriptions (PUSH.DELETE) to the
   * aggregator: the next admitPush reads the gauge again, so the slot is
   * free at once.
   */
  pushesChanged(): void {
    this.pushGeneration++;
  }

  /**
   * Push attempts from the tenant's bucket (PUSH_MAX_ATTEMPTS_PER_S; the
   * burst is one second of it): how many of `want` may start now. Every
   * Mailbox of the tenant leases here before it pushes (push/driver.ts).
   */
  leasePushAttempts(want: number, now = Date.now()): number {
    const rate = pushAttemptsPerS(this.env);
    if (!this.pushBucket || !this.pushBucket.sameRates(rate, null)) this.pushBucket = new RateBucket(rate, null, now);
    return this.pushBucket.grant(want, 0, now).msgs;
  }

  /**
   * Admits one more of something counted by a pipeline gauge (push
   * subscriptions; mailboxes are counted exactly by the tenant's
   * MailboxIndex, see admitMailbox): admitted while `existing` (the gauge as read at
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

  /** The tenant's quotas and storage state. */
  async state(now = Date.now()): Promise<TenantState> {
    const quotas = this.store.quotas();
    if (quotas.storage_bytes === null) return { quotas, storageFull: false, storedBytes: 0 };
    const { stored } = await this.usage(now);
    return { quotas, storageFull: stored >= quotas.storage_bytes, storedBytes: stored };
  }

  /**
   * Null when the token (if any) is good — then its use is recorded (at most
   * one write per token per TOKEN_USE_GRANULARITY_MS); otherwise the refusal:
   * unknown, revoked, expired (`expires_at` ≤ now), or the tenant deleted.
   */
  private checkToken(tokenId: string | undefined, tokenHash: string | undefined, now = Date.now()): ConnectAnswer | null {
    const rec = this.store.record();
    if (rec && rec.deleted_at !== null) return { ok: false, reason: "deleted", message: `tenant ${this.tenant} was deleted` };
    if (tokenId === undefined) return null;
    const row = rec ? this.store.token(tokenId) : null;
    if (!row || (tokenHash !== undefined && !timingSafeEqualStr(row.hash, tokenHash))) {
      return { ok: false, reason: "invalid", message: "invalid token" };
    }
    if (row.revoked_at !== null) return { ok: false, reason: "revoked", message: "token revoked" };
    if (row.expires_at !== null && row.expires_at <= now) return { ok: false, reason: "expired", message: `token expired at ${iso(row.expires_at)}` };
    this.store.touchToken(row, now);
    return null;
  }

  /** Stored bytes and push subscriptions from the UsageAggregator, read at most every STATE_CACHE_MS. */
  /**
   * The tenant's usage, read from its aggregator at most every
   * STATE_CACHE_MS — and again when the read is of a push generation older
   * than `generation` (a read that started before a reported change is not
   * used: at most two reads).
   */
  private async usage(now: number, generation = 0): Promise<Usage> {
    for (let reads = 0; ; reads++) {
      const r = this.usageRead;
      if (r && r.generation >= generation && (reads > 0 || now - r.at < STATE_CACHE_MS)) return r;
      if (reads === 2) return r ?? { at: 0, generation: 0, stored: 0, pushes: 0 };
      this.usageReading ??= (async () => {
        const gen = this.pushGeneration;
        try {
          const agg = usageStub(this.env, this.tenant);
          const [a, b, p] = await Promise.all([agg.seriesValue(STORED[0]!), agg.seriesValue(STORED[1]!), agg.seriesValue(PUSHES)]);
          this.usageRead = { at: Date.now(), generation: gen, stored: Math.max(0, a + b), pushes: Math.max(0, p) };
        } catch (e) {
          // Aggregator unreachable: keep the last read (quotas fail open until it answers again).
          console.warn(`TenantDirectory ${this.tenant}: usage read failed: ${e instanceof Error ? e.message : String(e)}`);
        } finally {
          this.usageReading = null;
        }
      })();
      await this.usageReading;
    }
  }

  private doc(rec: TenantRecord | null): TenantDoc {
    const purge = rec ? this.store.purge() : null;
    return {
      purge: purge ? purgeDoc(purge, Date.now()) : null,
      id: this.tenant,
      name: rec?.name ?? "",
      source: rec ? "directory" : "static",
      created_at: iso(rec?.created_at ?? null),
      deleted_at: iso(rec?.deleted_at ?? null),
      quotas: this.store.quotas(),
      tokens: this.store.tokens().map(tokenInfo),
    };
  }
}

/** The tenant's usage levels as read from its aggregator at `at`. */
interface Usage {
  at: number;
  /** The push generation when the read started. */
  generation: number;
  stored: number;
  pushes: number;
}

/** Gives back the admission made at `at` (the last one with that time). */
function unadmit(recent: number[], at: number): void {
  const i = recent.lastIndexOf(at);
  if (i >= 0) recent.splice(i, 1);
}

function tokenInfo(r: TokenRow): TokenInfo {
  return {
    token_id: r.token_id, label: r.label, created_at: iso(r.created_at)!, revoked_at: iso(r.revoked_at),
    expires_at: iso(r.expires_at), last_used_at: iso(r.last_used_at),
  };
}
