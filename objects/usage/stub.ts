/**
 * Where the counting pipeline reports: the per-tenant UsageAggregator
 * (`usage/<tenant>`), the one index object that lists the tenants with
 * usage (`usage-index/all`, also the storage probe of /healthz), and the
 * flush interval.
 */
import type { Env } from "../env";
import { objectName, tenantOfName } from "../shared/names";
export { tenantOfName };
import { positive } from "../shared/positive";
import type { UsageAggregator } from "./UsageAggregator";

/** Default flush interval of every reporter, ms (TELEMETRY_FLUSH_MS). */
export const DEFAULT_TELEMETRY_FLUSH_MS = 10_000;

/** The flush interval of this deployment, ms: `TELEMETRY_FLUSH_MS`, else 10000. */
export function telemetryFlushMs(env: Env): number {
  return positive(env.TELEMETRY_FLUSH_MS, DEFAULT_TELEMETRY_FLUSH_MS);
}

/** The UsageAggregator of `tenant`. */
export function usageStub(env: Env, tenant: string): DurableObjectStub<UsageAggregator> {
  return env.USAGE.get(env.USAGE.idFromName(objectName("usage", tenant)));
}

/** The index object (a UsageAggregator in its index role): known tenants, storage probe. */
export function usageIndexStub(env: Env): DurableObjectStub<UsageAggregator> {
  return env.USAGE.get(env.USAGE.idFromName(objectName("usage-index", "all")));
}

