/**
 * The tenants an operator view covers: those that ever reported usage (the
 * usage index object; a Worker cannot list Durable Objects), plus those
 * named in AUTH_TOKENS, the directory's tenants (not deleted), and
 * `default` on an open broker.
 */
import { OPEN_TENANT, isOpen, parseStaticTokens } from "../../objects/tenants/auth";
import type { Env } from "../../objects/env";
import { usageIndexStub } from "../../objects/usage/stub";
import { tenantIndexStub } from "../../objects/tenants/stub";
import { noteJurisdiction } from "../../objects/shared/jurisdiction";

/** Tenants with usage (`configured`: also the configured ones — AUTH_TOKENS, directory, open mode), sorted. */
export async function knownTenants(env: Env, configured: boolean): Promise<string[]> {
  const [usage, config] = await Promise.all([usageIndexStub(env).tenants(), configured ? configuredTenants(env) : []]);
  return [...new Set([...usage, ...config])].sort();
}

/** The tenants with usage, and the configured ones (AUTH_TOKENS, the directory's not deleted, `default` when open); each sorted. */
export async function tenantsByOrigin(env: Env): Promise<{ withUsage: string[]; configured: string[] }> {
  const [withUsage, configured] = await Promise.all([usageIndexStub(env).tenants(), configuredTenants(env)]);
  return { withUsage: [...withUsage].sort(), configured };
}

/** The configured tenants: named in AUTH_TOKENS, in the directory (not deleted), and `default` on an open broker; sorted. */
async function configuredTenants(env: Env): Promise<string[]> {
  const out = new Set<string>(parseStaticTokens(env.AUTH_TOKENS).values());
  for (const r of await tenantIndexStub(env).indexList()) {
    noteJurisdiction(r.id, r.jurisdiction ?? null); // the operator's reads address the tenant's objects there
    if (r.deleted_at === null) out.add(r.id);
  }
  if (isOpen(env)) out.add(OPEN_TENANT);
  return [...out].sort();
}
