/**
 * Where the tenant directory lives: one TenantDirectory object per tenant
 * (`tenants/<id>`: record, token hashes, quotas, rate buckets, connection
 * leases) and one index object (`tenants-index/all`: the list of directory
 * tenants for `GET /admin/tenants`). Settings: config.ts.
 */
import type { Env } from "../env";
import { objectName } from "../shared/names";
import type { TenantDirectory } from "./TenantDirectory";

/** The TenantDirectory object of `tenant`. */
export function tenantStub(env: Env, tenant: string): DurableObjectStub<TenantDirectory> {
  return env.TENANTS.get(env.TENANTS.idFromName(objectName("tenants", tenant)));
}

/** The index object (a TenantDirectory in its index role). */
export function tenantIndexStub(env: Env): DurableObjectStub<TenantDirectory> {
  return env.TENANTS.get(env.TENANTS.idFromName(objectName("tenants-index", "all")));
}
