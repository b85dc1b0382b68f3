/**
 * Tenant quotas for mq9 over HTTP (docs/tenants.md): the Worker has no
 * per-connection object, so each isolate keeps one PublishGate per tenant
 * (objects/tenants/gate.ts) that leases publish budget from the tenant's
 * TenantDirectory in chunks, like a session does.
 *
 * The tenant's state (quotas, storage) comes with every issued-token
 * authentication (one call per request anyway); for static and open
 * tenants it is fetched when a SEND or CREATE finds it older than
 * `TENANT_STATE_MS` (default 5 s, objects/tenants/config.ts: the bound of
 * the token cache) — so HTTP sees a quota change within that bound, and a
 * steady HTTP publisher causes at most one `state` call per 5 s per
 * isolate (issue 27 item 4).
 */
import type { Env } from "../objects/env";
import { PublishGate, type Refusal } from "../objects/tenants/gate";
import { admitMailbox, type CreateAdmission, type Mq9Quota } from "../objects/tenants/connection-auth";
import { tenantStub } from "../objects/tenants/stub";
import type { TenantState } from "../objects/tenants/rpc";
import { UNLIMITED } from "../wire/admin/tenants";
import { tenantStateMs } from "../objects/tenants/config";

/** Per-isolate gates, by tenant (bounded: the least recently created are dropped). */
const gates = new Map<string, { gate: PublishGate; at: number }>();
const MAX_GATES = 1_000;

/**
 * The mq9 quota checks for one HTTP request of `tenant`. `state`: the
 * state the authentication answered, if any.
 */
export function httpQuota(env: Env, tenant: string, state: TenantState | undefined): Mq9Quota {
  return new HttpQuota(env, tenant, state);
}

/** httpQuota's checks (a class: no closures made per request). */
class HttpQuota implements Mq9Quota {
  constructor(private readonly env: Env, private readonly tenant: string, private readonly state: TenantState | undefined) {}

  async admitSend(bytes: number): Promise<Refusal | null> {
    return (await this.gate()).admitAsync(bytes);
  }

  /** Every tenant: the mailbox limits (objects/tenants/mailbox-limits.ts). */
  admitCreate(address: string): Promise<CreateAdmission> {
    return admitMailbox(this.env, this.tenant, address);
  }

  /** The isolate's gate of the tenant, its state refreshed from the authentication or, when older than TENANT_STATE_MS, from the directory. */
  private async gate(): Promise<PublishGate> {
    const { env, tenant, state } = this;
    const now = Date.now();
    let g = gates.get(tenant);
    const stale = !state && (!g || now - g.at >= tenantStateMs(env));
    // One refresh per TENANT_STATE_MS per isolate, not one per request in flight: the first stale request claims
    // it (requests arriving meanwhile use the state they have; none waits on another request's call).
    if (stale && g) g.at = now;
    const fresh = state ?? (stale ? await tenantStub(env, tenant).state().catch(() => undefined) : undefined);
    if (!g) {
      if (gates.size >= MAX_GATES) gates.delete(gates.keys().next().value!);
      // perCaller: this gate serves many requests; none may wait on another's lease call (gate.ts)
      g = { gate: new PublishGate((m, b) => tenantStub(env, tenant).lease(m, b), fresh ?? { quotas: UNLIMITED, storageFull: false, storedBytes: 0 }, now, Date.now, true), at: now };
      gates.set(tenant, g);
    } else if (fresh) {
      g.gate.setState(fresh, now);
      g.at = now;
    }
    return g.gate;
  }
}
