/**
 * `GET /metrics`: Prometheus text exposition of every known tenant's series
 * (operator) or of the caller's tenant (tenant token), and the broker's
 * build info. Values come from the tenants' UsageAggregators, so they are as
 * fresh as the reporters' last flush (docs/operations.md "Staleness"). A
 * configured tenant (AUTH_TOKENS, directory, `default` when open) that never
 * reported shows its initial series at 0 without a call to its aggregator
 * (none exists yet, and none is created).
 *
 * Bounded fan-out (docs/operations.md "Cost and paging"): a scrape reads at
 * most SCRAPE_TENANTS aggregators. `?shard=I/N` (0 ≤ I < N ≤ 1024) limits
 * the scrape to the tenants whose name hashes to shard I of N (tenantShard),
 * so N scrape jobs together cover every tenant; when a scrape still holds
 * more tenants with usage than SCRAPE_TENANTS, the rest (in name order) are
 * left out and the gauge `mortarmq_scrape_tenants_skipped` (present only
 * then) says how many — raise N.
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { isolateMeter } from "../telemetry";
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../../objects/usage/prometheus";
import { usageStub } from "../../objects/usage/stub";
import { operatorAccess } from "./access";
import { tenantsByOrigin } from "./tenants";
import { VERSION } from "../../wire/version";

/** Tenant aggregators one scrape reads at most (the rest of the request's 100 object calls: the two tenant lists, the meter's flush). */
export const SCRAPE_TENANTS = 90;
/** Name of the gauge of the tenants a scrape left out. */
export const SKIPPED_METRIC = "mortarmq_scrape_tenants_skipped";

/** Handler for `GET /metrics`. */
export async function metricsHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const access = await operatorAccess(c.env, c.req.header("authorization"));
  if (access.kind === "denied") return c.text(`${access.error}\n`, access.status, access.headers);
  const shardParam = c.req.query("shard");
  const shard = shardParam === undefined ? { index: 0, count: 1 } : parseShard(shardParam);
  if (shard === null) return c.text("shard must be I/N with 0 <= I < N <= 1024\n", 400);
  await isolateMeter.flush(c.env);
  const tenants = access.kind === "operator" ? await tenantsByOrigin(c.env) : { withUsage: [access.tenant], configured: [] };
  const mine = (t: string) => shard.count === 1 || tenantShard(t, shard.count) === shard.index;
  const withUsage = tenants.withUsage.filter(mine);
  const readNow = withUsage.slice(0, SCRAPE_TENANTS);
  const skipped = withUsage.length - readNow.length;
  const known = new Set(withUsage);
  const all = [
    ...(await Promise.all(readNow.map(async (tenant) => ({ tenant, series: (await usageStub(c.env, tenant).metrics()) as [string, number][] })))),
    ...tenants.configured.filter((t) => mine(t) && !known.has(t)).map((tenant) => ({ tenant, series: [] })),
  ].sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0));
  let text = renderPrometheus(all, { version: VERSION });
  if (skipped > 0) {
    text += `# HELP ${SKIPPED_METRIC} Tenants with usage this scrape left out (over ${SCRAPE_TENANTS} in its shard): scrape with ?shard=I/N and a larger N.\n`
      + `# TYPE ${SKIPPED_METRIC} gauge\n${SKIPPED_METRIC} ${skipped}\n`;
  }
  return c.body(text, 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE });
}

/** `I/N` → the shard, or null when malformed or out of range (0 ≤ I < N ≤ 1024). */
export function parseShard(v: string): { index: number; count: number } | null {
  const m = /^(\d{1,4})\/(\d{1,4})$/.exec(v);
  if (!m) return null;
  const index = Number(m[1]), count = Number(m[2]);
  return count >= 1 && count <= 1024 && index < count ? { index, count } : null;
}

/** The shard (0 … count − 1) of `tenant`: FNV-1a of its name mod `count`, stable as tenants come and go. */
export function tenantShard(tenant: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < tenant.length; i++) {
    h ^= tenant.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}
