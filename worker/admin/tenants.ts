/**
 * The tenants an operator view covers: those that ever reported usage (the
 * usage index object; a Worker cannot list Durable Objects), plus those
 * named in AUTH_TOKENS, plus `default` on an open broker.
 */
import { OPEN_TENANT, isOpen, parseStaticTokens } from "../auth";
import type { Env } from "../env";
import { usageIndexStub } from "../../objects/usage/stub";

/** Tenants with usage (`configured`: also the ones configured in AUTH_TOKENS / open mode), sorted. */
export async function knownTenants(env: Env, configured: boolean): Promise<string[]> {
  const out = new Set(await usageIndexStub(env).tenants());
  if (configured) {
    for (const t of parseStaticTokens(env.AUTH_TOKENS).values()) out.add(t);
    if (isOpen(env)) out.add(OPEN_TENANT);
  }
  return [...out].sort();
}
