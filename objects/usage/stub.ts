/**
 * Where the counting pipeline reports: the per-tenant UsageAggregator
 * (`usage/<tenant>`) and the one index object that lists the tenants with
 * usage (`usage-index/all`, also the storage probe of /healthz). The flush
 * interval is in config.ts.
 */
import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { objectName, tenantOfName } from "../shared/names";
import type { UsageAggregator } from "./UsageAggregator";
export { tenantOfName };
// Re-exported for objects/mailbox* (moved by the scheduler change) and worker/telemetry.ts (changed on main meanwhile); the rest import it from ./config.
export { telemetryFlushMs } from "./config";

/** The UsageAggregator of `tenant`. */
export function usageStub(env: Env, tenant: string): DurableObjectStub<UsageAggregator> {
  return tenantObject(env, env.USAGE, tenant, objectName("usage", tenant));
}

/** The index object (a UsageAggregator in its index role): known tenants, storage probe. */
export function usageIndexStub(env: Env): DurableObjectStub<UsageAggregator> {
  return env.USAGE.get(env.USAGE.idFromName(objectName("usage-index", "all")));
}
