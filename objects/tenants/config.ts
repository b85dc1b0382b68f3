/**
 * The TenantDirectory's settings from Worker vars (docs/tenants.md), pure:
 * how often open connections re-check their token, how long a connection
 * lease lives, and when a deleted tenant's purge starts.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | TENANT_REVALIDATE_MS | 30000 | open connections re-check their token and renew their lease this often (> 0) |
 * | TENANT_PURGE_DELAY_MS | 5 × TENANT_REVALIDATE_MS + 10000 | a deleted tenant's purge starts this long after the delete (≥ 0) |
 * | TOKEN_CACHE_MS | 5000 | a Worker isolate trusts a good issued-token check this long for HTTP requests (≥ 0; 0 = no cache; token-cache.ts) |
 * | TENANT_STATE_MS | 5000 | a Worker isolate uses a static or open tenant's quota state this long before asking its TenantDirectory again (≥ 0; 0 = every request; worker/quota.ts) |
 *
 * A var that is empty or not a whole number in range means its default
 * (shared/int-var.ts).
 */
import { nonNegativeInt, positiveInt } from "../shared/int-var";

/** The vars read here (a subset of Env). */
export interface TenantVars {
  TENANT_REVALIDATE_MS?: string;
  TENANT_PURGE_DELAY_MS?: string;
  TOKEN_CACHE_MS?: string;
  TENANT_STATE_MS?: string;
}

/** Default `TOKEN_CACHE_MS`, ms. */
export const DEFAULT_TOKEN_CACHE_MS = 5_000;

/** `TOKEN_CACHE_MS` (0 = no cache), else 5000, ms. */
export function tokenCacheMs(env: TenantVars): number {
  return nonNegativeInt(env.TOKEN_CACHE_MS, DEFAULT_TOKEN_CACHE_MS);
}

/** Default `TENANT_STATE_MS`, ms: the same bound as the token cache (issue 27 item 4). */
export const DEFAULT_TENANT_STATE_MS = 5_000;

/**
 * `TENANT_STATE_MS` (0 = ask on every HTTP request), else 5000, ms: how long
 * a Worker isolate uses a static or open tenant's quota state (quotas,
 * storage full) for HTTP admission before asking the TenantDirectory
 * again — so a quota change reaches HTTP requests within this bound.
 */
export function tenantStateMs(env: TenantVars): number {
  return nonNegativeInt(env.TENANT_STATE_MS, DEFAULT_TENANT_STATE_MS);
}

/** Default interval at which open connections re-check their token and renew their lease, ms. */
export const DEFAULT_REVALIDATE_MS = 30_000;

/** `TENANT_REVALIDATE_MS`, else 30000: the revocation bound of open connections (docs/tenants.md), ms. */
export function revalidateMs(env: TenantVars): number {
  return positiveInt(env.TENANT_REVALIDATE_MS, DEFAULT_REVALIDATE_MS);
}

/**
 * An idle connection (nothing received since its last re-check) re-checks its token every this
 * many re-check intervals (issue #26 §2 (f): one TenantDirectory request per 2 minutes, not per
 * 30 s); its first message pulls the re-check in (objects/session-base/SocketSession.ts).
 */
export const IDLE_RECHECK_FACTOR = 4;

/**
 * How long after a tenant's delete its purge starts, ms: `TENANT_PURGE_DELAY_MS`, else an idle
 * connection's re-check interval plus one (every open connection has been refused and closed by
 * then) plus 10 s (the call deadline: their last calls have landed). docs/tenants.md "Deleting a tenant".
 */
export function purgeDelayMs(env: TenantVars): number {
  return nonNegativeInt(env.TENANT_PURGE_DELAY_MS, (IDLE_RECHECK_FACTOR + 1) * revalidateMs(env) + 10_000);
}

/** A connection lease expires this long after its last renewal (an idle connection's re-check interval plus one), ms. */
export function leaseTtlMs(env: TenantVars): number {
  return (IDLE_RECHECK_FACTOR + 1) * revalidateMs(env);
}
