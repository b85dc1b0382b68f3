/**
 * `GET /metrics`: Prometheus text exposition of every known tenant's series
 * (operator) or of the caller's tenant (tenant token), and the broker's
 * build info. Values come from the tenants' UsageAggregators, so they are as
 * fresh as the reporters' last flush (docs/operations.md "Staleness"). A
 * configured tenant (AUTH_TOKENS, directory, `default` when open) that never
 * reported shows its initial series at 0 without a call to its aggregator
 * (none exists yet, and none is created).
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { isolateMeter } from "../telemetry";
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../../objects/usage/prometheus";
import { usageStub } from "../../objects/usage/stub";
import { operatorAccess } from "./access";
import { tenantsByOrigin } from "./tenants";
import { VERSION } from "../../wire/version";

/** Handler for `GET /metrics`. */
export async function metricsHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const access = await operatorAccess(c.env, c.req.header("authorization"));
  if (access.kind === "denied") return c.text(`${access.error}\n`, access.status, access.headers);
  await isolateMeter.flush(c.env);
  const tenants = access.kind === "operator" ? await tenantsByOrigin(c.env) : { withUsage: [access.tenant], configured: [] };
  const read = new Set(tenants.withUsage);
  const all = [
    ...(await Promise.all(tenants.withUsage.map(async (tenant) => ({ tenant, series: (await usageStub(c.env, tenant).metrics()) as [string, number][] })))),
    ...tenants.configured.filter((t) => !read.has(t)).map((tenant) => ({ tenant, series: [] })),
  ].sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0));
  return c.body(renderPrometheus(all, { version: VERSION }), 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE });
}
