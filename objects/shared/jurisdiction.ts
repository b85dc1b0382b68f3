/**
 * Data residency (docs/tenants.md "Jurisdiction"; issue 27 item 6): a
 * tenant pinned to a Cloudflare jurisdiction has every per-tenant object
 * (topics' TopicRegistry, Partitions, ConsumerGroups, Mailboxes, the
 * MailboxIndex, AgentRegistry, UsageAggregator) created in it, through
 * `namespace.jurisdiction(j)`. Every objects/<kind>/stub.ts of a per-tenant
 * object addresses it with `tenantObject`.
 *
 * Where a tenant's jurisdiction comes from, synchronously (stubs are sync):
 * - `TENANT_JURISDICTION` (var, `tenant=eu,other=fedramp`): tenants
 *   configured statically (AUTH_TOKENS, the open broker's `default`);
 * - a directory tenant's record (`admin tenants create --jurisdiction`),
 *   learnt by the isolate from every TenantState the TenantDirectory answers
 *   (token checks, connections, leases: `noteJurisdiction`), and by an
 *   object of the tenant from its own id (`noteOwnJurisdiction`: an object
 *   created in a jurisdiction knows it), before it addresses its siblings.
 * The TenantDirectory (which stores the jurisdiction), the tenant and usage
 * indexes and the per-connection sessions stay outside any jurisdiction:
 * they hold the tenant's record, token hashes and quotas, not its messages.
 *
 * The local runtime (workerd under wrangler dev / vitest) throws
 * "Jurisdiction restrictions are not implemented": then the plain namespace
 * is used, with one warning per isolate.
 */
import type { Env } from "../env";
import { tenantOfName } from "./names";
import { jurisdictionSchema, type Jurisdiction } from "../../wire/admin/tenants";

/** The jurisdictions a tenant may be pinned to (Cloudflare's). */
export const JURISDICTIONS: readonly Jurisdiction[] = jurisdictionSchema.options;
export type { Jurisdiction };

/** Whether `v` names a jurisdiction. */
export function isJurisdiction(v: unknown): v is Jurisdiction {
  return typeof v === "string" && (JURISDICTIONS as readonly string[]).includes(v);
}

/** Directory tenants' jurisdictions as this isolate learnt them (null: none, known). */
const learnt = new Map<string, Jurisdiction | null>();
let parsedVar: { raw: string; map: Map<string, Jurisdiction> } | null = null;
/** The "not implemented" warning was logged (local workerd). */
let warned = false;

/**
 * `TENANT_JURISDICTION` parsed: `tenant=jurisdiction` pairs separated by
 * commas (blanks ignored); entries with an unknown jurisdiction are skipped.
 */
export function parseTenantJurisdictions(raw: string | undefined): Map<string, Jurisdiction> {
  const out = new Map<string, Jurisdiction>();
  for (const entry of (raw ?? "").split(",")) {
    const [t, j] = entry.split("=").map((s) => s.trim());
    if (t && isJurisdiction(j)) out.set(t, j);
  }
  return out;
}

/** The isolate learnt `tenant`'s jurisdiction (null: none) from its TenantDirectory. */
export function noteJurisdiction(tenant: string, j: Jurisdiction | null | undefined): void {
  if (j !== undefined) learnt.set(tenant, j);
}

/**
 * An object notes its own jurisdiction for its tenant: `name` (its
 * `idFromName` name, objects/shared/object-name.ts) names the tenant, and
 * `id.jurisdiction` is set when it was created in one.
 */
export function noteOwnJurisdiction(id: DurableObjectId, name: string | null | undefined): void {
  const tenant = tenantOfName(name);
  if (tenant !== null && isJurisdiction(id.jurisdiction)) learnt.set(tenant, id.jurisdiction);
}

/** The jurisdiction of `tenant`'s objects: the var first, then what the isolate learnt; null = none. */
export function jurisdictionOf(env: Env, tenant: string): Jurisdiction | null {
  const raw = env.TENANT_JURISDICTION ?? "";
  if (raw !== "") {
    if (parsedVar?.raw !== raw) parsedVar = { raw, map: parseTenantJurisdictions(raw) };
    const j = parsedVar.map.get(tenant);
    if (j) return j;
  }
  return learnt.get(tenant) ?? null;
}

/**
 * The stub of the per-tenant object `name` of `tenant` in binding `ns`, in
 * the tenant's jurisdiction (`ns.jurisdiction(j)`). On a runtime without
 * jurisdictions (local workerd) the plain namespace, with one warning.
 */
export function tenantObject<T extends Rpc.DurableObjectBranded | undefined>(
  env: Env, ns: DurableObjectNamespace<T>, tenant: string, name: string, options?: DurableObjectNamespaceGetDurableObjectOptions,
): DurableObjectStub<T> {
  const j = jurisdictionOf(env, tenant);
  if (j !== null) {
    try {
      const scoped = ns.jurisdiction(j);
      return scoped.get(scoped.idFromName(name), options);
    } catch (e) {
      if (!/not implemented/i.test(String(e))) throw e;
      if (!warned) console.warn(`mortarmq: this runtime has no Durable Object jurisdictions (${String(e)}); tenants pinned to one use the default namespace here`);
      warned = true;
    }
  }
  return ns.get(ns.idFromName(name), options);
}
