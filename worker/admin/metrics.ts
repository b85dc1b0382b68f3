/**
 * `GET /metrics`: Prometheus text exposition of every tenant's series
 * (operator) or of the caller's tenant (tenant token). Values come from the
 * tenants' UsageAggregators, so they are as fresh as the reporters' last
 * flush (docs/operations.md "Staleness").
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { isolateMeter } from "../telemetry";
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../../objects/usage/prometheus";
import { usageStub } from "../../objects/usage/stub";
import { UNAUTHORIZED_HEADERS, operatorAccess } from "./access";
import { knownTenants } from "./tenants";

/** Handler for `GET /metrics`. */
export async function metricsHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const access = await operatorAccess(c.env, c.req.header("authorization"));
  if (access.kind === "denied") return c.text(`${access.error}\n`, access.status, UNAUTHORIZED_HEADERS);
  await isolateMeter.flush(c.env);
  const tenants = access.kind === "operator" ? await knownTenants(c.env, false) : [access.tenant];
  const all = await Promise.all(tenants.map(async (tenant) => ({ tenant, series: (await usageStub(c.env, tenant).metrics()) as [string, number][] })));
  return c.body(renderPrometheus(all), 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE });
}
