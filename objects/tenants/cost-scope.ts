/**
 * Which TenantDirectory costs are attributed to its tenant (issue #26 §3,
 * objects/usage/cost-report.ts, docs/tenants.md "What a tenant costs"):
 * those of a tenant that exists — configured statically (AUTH_TOKENS, the
 * open broker's `default`) or a directory tenant not deleted. A token that
 * names a tenant that does not exist (or no longer does) still reaches
 * `tenants/<id>`; its cost is the operator's, and must not create a usage
 * record for the id (the aggregator would list the tenant).
 */
import type { Env } from "../env";
import { isStaticTenant } from "./auth";
import { TenantStore } from "./store";

/**
 * The TenantDirectory's methods that are the operator's calls, not the
 * tenant's traffic: the directory role's admin calls (the tenant's record,
 * tokens, quotas, jurisdiction) and the index role. The admission role's
 * calls (token checks, connection leases, rate buckets, mailbox and push
 * admission, state) are the tenant's.
 */
export const DIRECTORY_OPERATOR_METHODS: readonly string[] = [
  "create", "setJurisdiction", "describe", "remove", "issueToken", "listTokens", "revokeToken", "setTokenScopes",
  "putQuotas", "directoryRow", "indexUpsert", "indexList",
];

/** True when the costs of the TenantDirectory owning `storage` go to `tenant` (reads its record; writes nothing). */
export function directoryCostsAttributed(storage: DurableObjectStorage, env: Env, tenant: string): boolean {
  if (isStaticTenant(env, tenant)) return true;
  const r = new TenantStore(storage).record();
  return r !== null && r.id === tenant && r.deleted_at === null;
}
