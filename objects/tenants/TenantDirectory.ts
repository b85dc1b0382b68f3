/**
 * TenantDirectory Durable Object (docs/tenants.md), the glue of four roles
 * in one class and binding (`TENANTS`):
 *
 * - **directory** (directory.ts, `tenants/<id>`, tenantStub): the tenant's
 *   record and quotas as the admin API sets them, and its issued tokens
 *   (SHA-256 only). Every transport that meets an issued token asks this
 *   object — the token names its tenant and token id (wire/admin/tenants.ts),
 *   so there is no global lookup.
 * - **admission** (admission.ts, usage-read.ts): connection leases, the
 *   publish, mailbox-creation and push-attempt rate buckets, the mailbox and
 *   push-subscription counts, the storage state. Sessions register here
 *   (`openConnection`), re-check their token and renew their lease (`renew`,
 *   every TENANT_REVALIDATE_MS) and lease publish budget in chunks
 *   (`lease`). Tenants configured statically (AUTH_TOKENS) and the open
 *   broker's `default` use the same object for quotas, without a record.
 * - **purge** (purge.ts, purger.ts): a deleted tenant's data is purged from
 *   this object's alarm, one bounded step per run; the record stays, with
 *   the purge's progress, until the id is taken again.
 * - **index** (tenant-index.ts, `tenants-index/all`, tenantIndexStub): the
 *   list of directory tenants.
 *
 * All roles share one store (store.ts); the layout is unchanged by the
 * split. Each method below decodes nothing and decides nothing: it calls
 * its role (token checks of the directory first where a token is shown).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { Quotas, TenantDoc, IssuedToken, TokenInfo } from "../../wire/admin/tenants";
import { tenantOfName } from "../shared/names";
import { Admission } from "./admission";
import { purgeDelayMs } from "./config";
import { Directory } from "./directory";
import { Purger } from "./purger";
import { TenantStore } from "./store";
import { TenantIndex } from "./tenant-index";
import type { CreateLease } from "./create-gate";
import { noteJurisdiction, parseTenantJurisdictions, type Jurisdiction } from "../shared/jurisdiction";
import { tenantHoldsData } from "./holds-data";
import type { AdminResult, AdmitAnswer, DirectoryRow, PushAdmitAnswer, ConnectAnswer, ConnectRequest, LeaseAnswer, ScopeLists, TenantState } from "./rpc";

export class TenantDirectory extends DurableObject<Env> {
  private readonly store: TenantStore;
  private readonly tenant: string;
  private readonly directory: Directory;
  private readonly admission: Admission;
  private readonly purger: Purger;
  private readonly index: TenantIndex;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new TenantStore(ctx.storage);
    // Started for its alarm (a purge) the object has no name (objects/shared/object-name.ts), and the
    // named calls that follow reach this same instance: its record knows the id. (Not stored as a
    // name: a lookup of a tenant that does not exist must leave no storage behind, store.ts.)
    this.tenant = tenantOfName(ctx.id.name) ?? this.store.record()?.id ?? "";
    this.directory = new Directory(this.store, this.tenant, parseTenantJurisdictions(env.TENANT_JURISDICTION).get(this.tenant) ?? null);
    noteJurisdiction(this.tenant, this.directory.jurisdiction()); // the purge addresses the tenant's objects there
    this.admission = new Admission(env, this.store, this.tenant);
    this.purger = new Purger(env, ctx.storage, this.store, this.tenant);
    this.index = new TenantIndex(this.store);
  }

  // ---------------------------------------------------------------- directory role (admin)

  /** Creates the directory tenant (Directory.create: 409 while it exists or its id's purge runs), its objects in `jurisdiction`. */
  create(name: string, quotas: Quotas | null, now = Date.now(), jurisdiction: Jurisdiction | null = null): AdminResult<TenantDoc> {
    const r = this.directory.create(name, quotas, now, jurisdiction);
    if (r.ok) {
      this.admission.quotasChanged();
      noteJurisdiction(this.tenant, jurisdiction);
    }
    return r;
  }

  /**
   * Changes the jurisdiction of the tenant's objects (Directory.setJurisdiction):
   * 409 while the tenant holds data — any topic, mailbox, agent or stored
   * byte, asked of its objects in the current jurisdiction.
   * @throws when one of those objects does not answer
   */
  async setJurisdiction(j: Jurisdiction | null): Promise<AdminResult<TenantDoc>> {
    const current = this.directory.jurisdiction();
    const holds = current === j ? false : await tenantHoldsData(this.env, this.tenant);
    const r = this.directory.setJurisdiction(j, holds);
    if (r.ok) noteJurisdiction(this.tenant, j);
    return r;
  }

  /** The tenant document. `implicit`: the tenant is configured outside the directory (AUTH_TOKENS / open broker). */
  describe(implicit: boolean): AdminResult<TenantDoc> {
    return this.directory.describe(implicit);
  }

  /**
   * Deletes the tenant: every token is revoked and every lease dropped at
   * once, and the purge of all its data is scheduled (it starts
   * TENANT_PURGE_DELAY_MS later, from this object's alarm). Deleting a
   * deleted tenant again answers its document and makes sure an unfinished
   * purge is still scheduled (idempotent). 404 for a tenant that never existed.
   */
  async remove(now = Date.now()): Promise<AdminResult<TenantDoc>> {
    const r = this.directory.remove(now, purgeDelayMs(this.env));
    if (r.ok) await this.purger.arm(now);
    return r;
  }

  /** Issues a token (Directory.issueToken; `scopes` validated by the caller); the answer is the only place the token appears. */
  issueToken(label: string, expiresAt: number | null = null, now = Date.now(), scopes?: ScopeLists): Promise<AdminResult<IssuedToken>> {
    return this.directory.issueToken(label, expiresAt, now, scopes);
  }

  /** The tenant's issued tokens (never their secrets), with expiry and last use. */
  listTokens(): AdminResult<TokenInfo[]> {
    return this.directory.listTokens();
  }

  /** Revokes a token (idempotent). New connections and requests are refused at once. */
  revokeToken(tokenId: string, now = Date.now()): AdminResult<TokenInfo> {
    return this.directory.revokeToken(tokenId, now);
  }

  /** Replaces a token's scopes (Directory.setTokenScopes; validated by the caller). */
  setTokenScopes(tokenId: string, scopes: ScopeLists): AdminResult<TokenInfo> {
    return this.directory.setTokenScopes(tokenId, scopes);
  }

  /** Replaces the quotas. `implicit` as in describe. */
  putQuotas(q: Quotas, implicit: boolean): AdminResult<Quotas> {
    const r = this.directory.putQuotas(q, implicit);
    if (r.ok) this.admission.quotasChanged();
    return r;
  }

  /** The tenant's row for the directory index (null: never created), so the admin API can repair the index. */
  directoryRow(): DirectoryRow | null {
    return this.directory.directoryRow();
  }

  // ---------------------------------------------------------------- purge role

  /** The object's one alarm (shared/scheduler.ts): the purge's next step (Purger). */
  override async alarm(): Promise<void> {
    await this.purger.alarm();
  }

  // ---------------------------------------------------------------- index role

  /** Index: records or updates a directory tenant. */
  indexUpsert(row: DirectoryRow): void {
    this.index.upsert(row);
  }

  /** Index: every directory tenant (deleted ones included), by id. */
  indexList(): DirectoryRow[] {
    return this.index.list();
  }

  // ---------------------------------------------------------------- admission role

  /** Checks an issued token (by id, then its hash in constant time) without registering a connection (mq9 over HTTP); answers with the token's expiry. */
  async authenticate(tokenId: string, tokenHash: string): Promise<ConnectAnswer> {
    const now = Date.now();
    const refused = this.directory.checkToken(tokenId, tokenHash, now);
    if (refused) return refused;
    const expiresAt = this.directory.tokenExpiry(tokenId); // bounds the isolates' cache (token-cache.ts on main)
    return withScopes({ ok: true, state: await this.admission.state(now), expiresAt }, this.directory.tokenScopes(tokenId));
  }

  /** A connection authenticated (or is about to): its issued token checked if it has one, a connection slot taken while a connection quota is set. */
  async openConnection(req: ConnectRequest, now = Date.now()): Promise<ConnectAnswer> {
    const a = this.directory.checkToken(req.tokenId, req.tokenHash, now) ?? (await this.admission.openConnection(req, now));
    return withScopes(a, this.directory.tokenScopes(req.tokenId));
  }

  /** An open connection re-checks its token (revoked → refused) and renews its lease; answers the current state and the token's current scopes. */
  async renew(req: ConnectRequest, now = Date.now()): Promise<ConnectAnswer> {
    const a = this.directory.checkToken(req.tokenId, undefined, now) ?? (await this.admission.renew(req, now));
    return withScopes(a, this.directory.tokenScopes(req.tokenId));
  }

  /** The connection closed: its slot is free. */
  release(leaseId: string): void {
    this.admission.release(leaseId);
  }

  /** Publish budget from the tenant's bucket (bucket.ts), and the current state. */
  lease(wantMsgs: number, wantBytes: number, now = Date.now()): Promise<LeaseAnswer> {
    return this.admission.lease(wantMsgs, wantBytes, now);
  }

  /**
   * A mailbox CREATE of `address` under the tenant's mailbox limits
   * (creation rate, then count; Admission.admitMailbox). `at` of an
   * admission that reserved a slot is for `unadmitMailbox`.
   * @throws when the MailboxIndex cannot be reached (the caller decides: connection-auth.ts admitMailbox)
   */
  admitMailbox(address: string, now = Date.now()): Promise<AdmitAnswer> {
    return this.admission.admitMailbox(address, now);
  }

  /** Mailbox-creation tokens for a Worker isolate's CreateGate (create-gate.ts; Admission.leaseCreates). */
  leaseCreates(want: number, now = Date.now()): Promise<CreateLease> {
    return this.admission.leaseCreates(want, now);
  }

  /**
   * The dead-letter mailbox `address` (`<source>.dlq`) of a PUSH.CREATE,
   * under the mailbox count only. docs/push.md "Dead letters".
   * @throws when the MailboxIndex cannot be reached
   */
  admitDeadLetterMailbox(address: string, now = Date.now()): Promise<AdmitAnswer> {
    return this.admission.admitDeadLetterMailbox(address, now);
  }

  /** An admitted CREATE of `address` (`admitMailbox` answered `at`) created nothing: its count slot is free again (its rate token is not). */
  unadmitMailbox(address: string, at: number): Promise<void> {
    return this.admission.unadmitMailbox(address, at);
  }

  /** A PUSH.CREATE under the tenant's push subscription limit (PUSH_MAX_SUBSCRIPTIONS, docs/push.md; Admission.admitPush). */
  admitPush(now = Date.now()): Promise<PushAdmitAnswer> {
    return this.admission.admitPush(now);
  }

  /** An admitted PUSH.CREATE (`admitPush` answered `at`) created nothing: its slot is free again. */
  unadmitPush(at: number): void {
    this.admission.unadmitPush(at);
  }

  /** The PUSH.CREATE admitted at `at` created its subscription and the Mailbox reported it to the aggregator: the gauge counts it from now on. */
  confirmPush(at: number): void {
    this.admission.confirmPush(at);
  }

  /** A Mailbox reported fewer push subscriptions (PUSH.DELETE): the next admitPush reads the gauge again, so the slot is free at once. */
  pushesChanged(): void {
    this.admission.pushesChanged();
  }

  /** Push attempts from the tenant's bucket (PUSH_MAX_ATTEMPTS_PER_S): how many of `want` may start now (push/driver.ts leases here). */
  leasePushAttempts(want: number, now = Date.now()): number {
    return this.admission.leasePushAttempts(want, now);
  }

  /** The tenant's quotas and storage state. */
  state(now = Date.now()): Promise<TenantState> {
    return this.admission.state(now);
  }

  /** The tenant's quotas (null = unset); reads only, so a tenant never created stays without storage. The TopicRegistry reads `partitions` before it creates a topic. */
  quotas(): Quotas {
    return this.store.quotas();
  }
}

/** `a` with the token's scopes when it is a good answer and the token has scopes. */
function withScopes(a: ConnectAnswer, scopes: ScopeLists | undefined): ConnectAnswer {
  return a.ok && scopes ? { ...a, scopes } : a;
}
