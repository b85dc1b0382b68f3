/**
 * Where the tenant directory lives: one TenantDirectory object per tenant
 * (`tenants/<id>`: record, token hashes, quotas, rate bucket, connection
 * leases) and one index object (`tenants-index/all`: the list of directory
 * tenants for `GET /admin/tenants`), plus the revalidation interval.
 */
import type { Env } from "../env";
import { objectName } from "../shared/names";
import { positive } from "../shared/positive";
import type { TenantDirectory } from "./TenantDirectory";

/** Default interval at which open connections re-check their token and renew their lease, ms. */
export const DEFAULT_REVALIDATE_MS = 30_000;

/** `TENANT_REVALIDATE_MS`, else 30000: the revocation bound of open connections (docs/tenants.md). */
export function revalidateMs(env: Env): number {
  return positive(env.TENANT_REVALIDATE_MS, DEFAULT_REVALIDATE_MS);
}

/**
 * How long after a tenant's delete its purge starts, ms: `TENANT_PURGE_DELAY_MS`, else two
 * re-check intervals (every open connection has been refused and closed by then) plus 10 s (the
 * call deadline: their last calls have landed). docs/tenants.md "Deleting a tenant".
 */
export function purgeDelayMs(env: Env): number {
  return nonNegative(env.TENANT_PURGE_DELAY_MS, 2 * revalidateMs(env) + 10_000);
}

function nonNegative(v: string | undefined, dflt: number): number {
  const n = Number(v);
  return v !== undefined && v.trim() !== "" && Number.isFinite(n) && n >= 0 ? n : dflt;
}

/** A connection lease expires this long after its last renewal (3 revalidation intervals), ms. */
export function leaseTtlMs(env: Env): number {
  return 3 * revalidateMs(env);
}

/** The TenantDirectory object of `tenant`. */
export function tenantStub(env: Env, tenant: string): DurableObjectStub<TenantDirectory> {
  const ns = env.TENANTS as unknown as DurableObjectNamespace<TenantDirectory>;
  return ns.get(ns.idFromName(objectName("tenants", tenant)));
}

/** The index object (a TenantDirectory in its index role). */
export function tenantIndexStub(env: Env): DurableObjectStub<TenantDirectory> {
  const ns = env.TENANTS as unknown as DurableObjectNamespace<TenantDirectory>;
  return ns.get(ns.idFromName(objectName("tenants-index", "all")));
}
