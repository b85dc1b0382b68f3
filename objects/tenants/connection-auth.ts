/**
 * The tenant side of one client connection (MortarSession, NatsSession):
 * authenticates it with a connection lease (connection quota), re-checks
 * its token and renews the lease every TENANT_REVALIDATE_MS (the bound
 * within which a revoked token's open connections close), gives the lease
 * back at close, and holds the connection's PublishGate (rate and storage
 * quotas) and the mailbox-count check. docs/tenants.md.
 *
 * What must survive hibernation is `snapshot()` (tenant, token id, lease
 * id, last check time, quota state); the session stores it in its socket
 * attachment and calls `restore()` when it wakes.
 */
import type { Env } from "../env";
import { authenticateToken, issuedScopes, type AuthResult } from "./auth";
import type { Scopes } from "../../wire/admin/scopes";
import { UNLIMITED } from "../../wire/admin/tenants";
import { ADMITTED, PublishGate, type Refusal } from "./gate";
import type { ConnectionProtocol, TenantState } from "./rpc";

/**
 * A mailbox CREATE's answer from the mailbox quota: refused, or admitted —
 * then `undo()` if the CREATE created nothing after all (bad request,
 * existing name), so it does not hold a slot.
 */
export type CreateAdmission = { ok: false; refuse: Refusal } | { ok: true; undo(): Promise<void> };

/** Admitted, nothing to give back (no mailbox quota, or the directory could not be asked). */
export const CREATE_ADMITTED: CreateAdmission = Object.freeze({ ok: true, undo: () => Promise.resolve() });
/** CREATE_ADMITTED, as the settled answer of an admission. */
export const CREATE_ADMITTED_NOW: Promise<CreateAdmission> = Promise.resolve(CREATE_ADMITTED);

/** The quota checks an mq9 request needs (handleMq9Request's `quota`). */
export interface Mq9Quota {
  /**
   * A SEND storing `bytes` (payload + key + tags, sendMetadataBytes; publish
   * rate, storage): resolves null = admitted, else the refusal. Awaited in
   * the mailbox's lane (objects/mq9/sendbatch.ts), so the SEND keeps its
   * place among the connection's requests while it waits for a lease.
   */
  admitSend(bytes: number): Promise<Refusal | null>;
  /** A mailbox CREATE of `address` (creation rate and mailbox count, mailbox-limits.ts): asks the tenant's directory object; resolves admitted or refused. */
  admitCreate(address: string): Promise<CreateAdmission>;
}
import { revalidateMs } from "./config";
import { tenantStub } from "./stub";
import { noteJurisdiction } from "../shared/jurisdiction";
import { CreateGate } from "./create-gate";
import { mailboxLimits } from "./mailbox-limits";
import { MAILBOX_QUOTA_RETRY_MS } from "./admission";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { RETRY_AFTER_S, faultKind, logOverload } from "../shared/platform-faults";

/** A failed renewal (tenant object unreachable) is retried after this long, ms. */
export const RETRY_MS = 5_000;

/** What a session keeps across hibernation. */
export interface ConnectionAuthSnapshot {
  tenant: string;
  tokenId?: string;
  leaseId: string;
  /** Last successful check (connect or renew), unix ms. */
  checkedAt: number;
  state: TenantState;
  /** The token's scopes (undefined = full tenant access); refreshed by each re-check. */
  scopes?: Scopes;
}

/** Outcome of `revalidate`. */
export type Revalidation = { ok: true } | { ok: false; reason: string; message: string };

const NO_QUOTAS: TenantState = { quotas: UNLIMITED, storageFull: false, storedBytes: 0 };

export class ConnectionAuth {
  private snap: ConnectionAuthSnapshot | null = null;
  private gateOf: PublishGate | null = null;
  private quotaOf: Mq9Quota | null = null;
  /** Next check time (a failed check retries sooner than a full interval). */
  private dueAt = Infinity;

  constructor(private readonly env: Env, private readonly protocol: ConnectionProtocol, private readonly leaseId = crypto.randomUUID()) {}

  /** The authenticated tenant, or null. */
  get tenant(): string | null {
    return this.snap?.tenant ?? null;
  }

  /** The token's scopes as of the last check (undefined: full tenant access, or not authenticated). */
  get scopes(): Scopes | undefined {
    return this.snap?.scopes;
  }

  /** The issued token's id (undefined: a static token or the open broker), for refusal logs. */
  get tokenId(): string | undefined {
    return this.snap?.tokenId;
  }

  /**
   * Authenticates `token` for this connection (taking a connection slot
   * under a quota). A connection's tenant never changes: on a connection
   * already authenticated (NATS allows CONNECT again), a token of another
   * tenant is refused (`invalid`) and the slot it took there is given back.
   */
  async connect(token: string | undefined, now = Date.now()): Promise<AuthResult> {
    const auth = await authenticateToken(this.env, token, { leaseId: this.leaseId, protocol: this.protocol });
    if (!auth.ok) return auth;
    const current = this.snap?.tenant;
    if (current !== undefined && auth.tenant !== current) {
      if (auth.state?.quotas.connections != null) {
        await tenantStub(this.env, auth.tenant).release(this.leaseId).catch(() => {}); // else it expires by itself
      }
      return { ok: false, reason: "invalid", message: `this connection is tenant ${current}'s: a token of another tenant cannot be used on it` };
    }
    this.adopt({ tenant: auth.tenant, tokenId: auth.tokenId, leaseId: this.leaseId, checkedAt: now, state: auth.state ?? NO_QUOTAS, scopes: auth.scopes });
    return auth;
  }

  /** Restores what `snapshot` returned (the object woke from hibernation). */
  restore(s: ConnectionAuthSnapshot): void {
    noteJurisdiction(s.tenant, s.state.jurisdiction);
    this.adopt(s);
  }

  /** What to keep across hibernation (null before authentication). */
  snapshot(): ConnectionAuthSnapshot | null {
    return this.snap;
  }

  /** When the next re-check is due, unix ms (Infinity before authentication). */
  get nextCheckAt(): number {
    return this.dueAt;
  }

  /**
   * Re-checks the token and renews the lease; refreshes the quotas and the
   * token's scopes. A
   * refusal (revoked token, deleted tenant) means the connection must
   * close. An unreachable tenant object keeps the connection (retried in
   * RETRY_MS).
   */
  async revalidate(now = Date.now()): Promise<Revalidation> {
    const s = this.snap;
    if (!s) return { ok: true };
    try {
      const a = await tenantStub(this.env, s.tenant).renew({ tokenId: s.tokenId, leaseId: s.leaseId, protocol: this.protocol });
      if (!a.ok) return { ok: false, reason: a.reason, message: a.message };
      // An issued token's scopes come with each re-check (a change reaches the connection within TENANT_REVALIDATE_MS);
      // a static token's are configuration and stay.
      this.snap = { ...s, checkedAt: now, state: a.state, scopes: s.tokenId !== undefined ? issuedScopes(a.scopes) : s.scopes };
      noteJurisdiction(s.tenant, a.state.jurisdiction);
      this.gateOf?.setState(a.state, now);
      this.dueAt = now + revalidateMs(this.env);
    } catch {
      this.dueAt = now + Math.min(RETRY_MS, revalidateMs(this.env));
    }
    return { ok: true };
  }

  /** The connection closed: give the slot back (best effort; an unreturned lease expires). */
  async release(): Promise<void> {
    const s = this.snap;
    this.dueAt = Infinity;
    if (!s || s.state.quotas.connections === null) return;
    try {
      await tenantStub(this.env, s.tenant).release(s.leaseId);
    } catch {
      /* the lease expires by itself */
    }
  }

  /**
   * May a message of `bytes` be published (rate and storage quotas)?
   * Resolves null = admitted, else the refusal (PublishGate.admitAsync:
   * waits for leases as needed; settled at once when no wait is needed).
   */
  admitPublish(bytes: number): Promise<Refusal | null> {
    return this.gate().admitAsync(bytes);
  }

  /** The mq9 quota checks of this connection (NATS sessions pass it to handleMq9Request); one object per connection, reading the current tenant state. */
  mq9Quota(): Mq9Quota {
    return (this.quotaOf ??= {
      admitSend: (bytes) => (this.snap ? this.gate().admitAsync(bytes) : ADMITTED),
      admitCreate: (address) => this.admitMailbox(address),
    });
  }

  /** A mailbox CREATE under the tenant's mailbox limits (one call to its directory object; none before authentication). */
  admitMailbox(address: string): Promise<CreateAdmission> {
    const s = this.snap;
    if (!s) return CREATE_ADMITTED_NOW;
    return admitMailbox(this.env, s.tenant, address);
  }

  private adopt(s: ConnectionAuthSnapshot): void {
    this.snap = s;
    this.gateOf = null;
    this.dueAt = s.checkedAt + revalidateMs(this.env);
  }

  private gate(): PublishGate {
    const s = this.snap!;
    this.gateOf ??= new PublishGate((m, b) => tenantStub(this.env, s.tenant).lease(m, b), s.state, s.checkedAt);
    return this.gateOf;
  }
}

/** Per-isolate creation gates, by tenant (bounded: the least recently created are dropped). */
const createGates = new Map<string, CreateGate>();
const MAX_CREATE_GATES = 1_000;

/** The isolate's CreateGate of `tenant` (create-gate.ts), leasing from its directory object. */
function createGateOf(env: Env, tenant: string): CreateGate {
  let g = createGates.get(tenant);
  if (!g) {
    if (createGates.size >= MAX_CREATE_GATES) createGates.delete(createGates.keys().next().value!);
    g = new CreateGate((want) => tenantStub(env, tenant).leaseCreates(want), Date.now());
    createGates.set(tenant, g);
  }
  return g;
}

/**
 * Admits one mailbox CREATE of `address` in `tenant` (mailbox-limits.ts):
 * a creation token of the isolate's CreateGate (leased from the tenant's
 * directory object about once a second while CREATEs keep coming), then a
 * slot of the mailbox count, asked of the tenant's MailboxIndex. When an
 * object cannot be reached the CREATE is admitted (a directory outage must
 * not stop a tenant) — unless the broker is overloaded (out of memory, the
 * object over its limits): then it is refused, since admitting more objects
 * is what an overload cannot take.
 */
export async function admitMailbox(env: Env, tenant: string, address: string): Promise<CreateAdmission> {
  try {
    const gate = createGateOf(env, tenant);
    const v = await gate.admit();
    if (!v.ok) return { ok: false, refuse: v.refuse };
    const max = mailboxLimits(env, (v.state ?? gate.state)?.quotas ?? UNLIMITED).maxMailboxes;
    const index = mailboxIndexStub(env, tenant);
    const a = await index.admit(address, max, Date.now());
    if (!a.ok) {
      return { ok: false, refuse: { kind: "mailboxes", message: `mailbox quota exceeded: the tenant has ${a.count} mailboxes, quota ${max}; nothing was created`, retryAfterMs: MAILBOX_QUOTA_RETRY_MS } };
    }
    const at = a.at;
    if (at === undefined) return CREATE_ADMITTED;
    return { ok: true, undo: () => mailboxIndexStub(env, tenant).release(address, at).catch(() => {}) };
  } catch (e) {
    const kind = faultKind(e);
    if (kind !== "overloaded" && kind !== "out_of_memory") return CREATE_ADMITTED;
    logOverload("mailbox CREATE check", e);
    return { ok: false, refuse: { kind: "overloaded", message: "broker overloaded, no mailbox was created; retry later", retryAfterMs: RETRY_AFTER_S[kind] * 1000 } };
  }
}
