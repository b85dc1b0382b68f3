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
