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

/** Tenants with usage (`configured`: also the configured ones — AUTH_TOKENS, directory, open mode), sorted. */
export async function knownTenants(env: Env, configured: boolean): Promise<string[]> {
  const out = new Set(await usageIndexStub(env).tenants());
  if (configured) {
    for (const t of parseStaticTokens(env.AUTH_TOKENS).values()) out.add(t);
    for (const r of await tenantIndexStub(env).indexList()) if (r.deleted_at === null) out.add(r.id);
    if (isOpen(env)) out.add(OPEN_TENANT);
  }
  return [...out].sort();
}
