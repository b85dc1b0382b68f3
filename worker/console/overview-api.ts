/**
 * Who-am-I, overview and usage routes of the console (docs/console.md
 * "APIs"), per tenant (scope.ts):
 *
 * | route | answer |
 * |---|---|
 * | `GET /v0/whoami` | 200 WhoamiAnswer: auth mode, role, tenant, the token's scopes; 401 for a bad token |
 * | `GET /v0/overview?minutes=` | 200 OverviewAnswer: the last `minutes` (1–60, default 15) in 10-s intervals, current levels, quotas |
 * | `GET /v0/usage?from&to` | 200 the tenant's own hourly usage (as `/admin/tenants/:id/usage`) with its quotas; 400 |
 */
import type { Hono } from "hono";
import type { Env } from "../../objects/env";
import type { OverviewAnswer, TenantUsageAnswer, WhoamiAnswer } from "../../wire/admin/console";
import { UNLIMITED, type Quotas } from "../../wire/admin/tenants";
import { OPEN_TENANT, isOpen } from "../../objects/tenants/auth";
import { tenantStub } from "../../objects/tenants/stub";
import { scopeRefusal } from "../admin/access";
import { telemetryFlushMs } from "../../objects/usage/config";
import { usageStub } from "../../objects/usage/stub";
import { series } from "../../objects/usage/catalog";
import { RECENT_BUCKET_MS, type RecentBucket } from "../../objects/usage/store";
import { agentRegistryStub } from "../../objects/agents/stub";
import { registryStub } from "../../objects/registry/stub";
import { withDeadline } from "../../objects/session/faults";
import { isolateMeter } from "../telemetry";
import { tenantUsage } from "../admin/usage";
import { intParam, tenantRoute } from "./scope";

const MAILBOXES = series("mortarmq_mq9_mailboxes");
const CONN_MORTAR = series("mortarmq_open_connections", { protocol: "mortar" });
const CONN_NATS = series("mortarmq_open_connections", { protocol: "nats" });

/** Registers the routes on `app`. */
export function registerOverviewRoutes(app: Hono<{ Bindings: Env }>): void {
  app.get("/v0/whoami", tenantRoute(async (c, s) => {
    const answer: WhoamiAnswer = {
      auth: isOpen(c.env) ? "open" : "tokens",
      role: s.access.kind === "operator" ? "operator" : "tenant",
      tenant: s.access.kind === "tenant" ? s.access.tenant : OPEN_TENANT,
      allow: s.access.kind === "tenant" ? (s.access.scopes?.allow.map((x) => x.text) ?? []) : [],
      deny: s.access.kind === "tenant" ? (s.access.scopes?.deny.map((x) => x.text) ?? []) : [],
      ...(s.access.kind === "tenant" && s.access.tokenId ? { token_id: s.access.tokenId } : {}),
    };
    return c.json(answer);
  }));

  app.get("/v0/overview", tenantRoute(async (c, s) => {
    const minutes = intParam(c.req.query("minutes"), 15, 1, 60);
    if (minutes === null) return c.json({ error: "minutes must be a whole number from 1 to 60" }, 400);
    await isolateMeter.flush(c.env);
    const usage = usageStub(c.env, s.tenant);
    const [buckets, mortar, nats, mailboxes, agents, topics, quotas] = await Promise.all([
      withDeadline(usage.recent(minutes * 60_000) as Promise<RecentBucket[]>),
      withDeadline(usage.seriesValue(CONN_MORTAR)),
      withDeadline(usage.seriesValue(CONN_NATS)),
      withDeadline(usage.seriesValue(MAILBOXES)),
      withDeadline(agentRegistryStub(c.env, s.tenant).counts().then((n) => n.agents)),
      withDeadline(registryStub(c.env, s.tenant).topicCount() as Promise<number>),
      quotasOf(c.env, s.tenant),
    ]);
    const answer: OverviewAnswer = {
      tenant: s.tenant,
      interval_ms: RECENT_BUCKET_MS,
      buckets,
      now: {
        connections: { mortar: Math.max(0, mortar), nats: Math.max(0, nats) },
        storage_bytes: buckets.at(-1)?.storage_bytes ?? 0,
        mailboxes: Math.max(0, mailboxes),
        agents,
        topics,
      },
      quotas,
      telemetry_interval_ms: telemetryFlushMs(c.env),
      generated_at: Date.now(),
    };
    return c.json(answer);
  }));

  app.get("/v0/usage", tenantRoute(async (c, s) => {
    const refused = scopeRefusal(s.access, "usage.read", null);
    if (refused !== null) return c.json({ error: refused }, 403);
    const r = await tenantUsage(c.env, s.tenant, c.req.query("from"), c.req.query("to"));
    if ("error" in r) return c.json({ error: r.error }, 400);
    const answer: TenantUsageAnswer = { ...r.answer, quotas: await quotasOf(c.env, s.tenant) };
    return c.json(answer);
  }));
}

/** The tenant's quotas (every one unlimited on an open broker, where there is no directory). */
async function quotasOf(env: Env, tenant: string): Promise<Quotas> {
  if (isOpen(env)) return UNLIMITED;
  return (await withDeadline(tenantStub(env, tenant).state())).quotas;
}
