/**
 * `GET /admin/tenants/:id/usage?from&to` (operator only): the tenant's
 * metering per hour (docs/operations.md "Usage metering"). `from` / `to`
 * are unix ms or ISO 8601 times; the answer covers every whole hour from
 * the hour holding `from` up to (excluding) the hour after the one holding
 * `to` — default: the last 24 hours up to now — at most 31 days (744 hours).
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { TENANT_ID_RE } from "../../objects/tenants/auth";
import { isolateMeter } from "../telemetry";
import { usageStub } from "../../objects/usage/stub";
import { HOUR_MS, hourOf } from "../../objects/usage/report";
import { SUMMED_USAGE_FIELDS } from "../../objects/usage/catalog";
import type { HourUsage } from "../../objects/usage/rpc";
import { operatorAccess } from "./access";
import type { UsageAnswer } from "../../wire/admin/tenants";

/** Longest range answered, hours (31 days). */
export const MAX_USAGE_HOURS = 31 * 24;

/** Handler for `GET /admin/tenants/:id/usage`. */
export async function usageHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const access = await operatorAccess(c.env, c.req.header("authorization"));
  if (access.kind === "denied") return c.json({ error: access.error }, access.status, access.headers);
  if (access.kind !== "operator") return c.json({ error: "forbidden: /admin needs the operator token (ADMIN_TOKEN)" }, 403);
  const tenant = c.req.param("id") ?? "";
  if (!TENANT_ID_RE.test(tenant)) return c.json({ error: "tenant id must be 1-64 chars of [a-z0-9_-]" }, 400);
  const r = await tenantUsage(c.env, tenant, c.req.query("from"), c.req.query("to"));
  return "error" in r ? c.json({ error: r.error }, 400) : c.json(r.answer);
}

/**
 * The usage answer of `tenant` for the `from` / `to` query values (unix ms
 * or ISO 8601; default the last 24 hours), or the 400 error text. Also
 * behind the tenant's own `GET /v0/usage` (worker/console/overview-api.ts).
 */
export async function tenantUsage(env: Env, tenant: string, fromQ: string | undefined, toQ: string | undefined): Promise<{ answer: UsageAnswer } | { error: string }> {
  const now = Date.now();
  const to = parseTime(toQ, now);
  const from = parseTime(fromQ, to === null ? null : to - 24 * HOUR_MS);
  if (from === null || to === null) return { error: "from and to must be unix ms or ISO 8601 times" };
  if (from > to) return { error: "from must not be after to" };
  const fromHour = hourOf(from);
  const toHour = hourOf(to) + HOUR_MS;
  if ((toHour - fromHour) / HOUR_MS > MAX_USAGE_HOURS) return { error: `at most ${MAX_USAGE_HOURS} hours per request` };
  await isolateMeter.flush(env);
  const hours = await usageStub(env, tenant).usage(fromHour, toHour);
  return {
    answer: {
      tenant,
      from: new Date(fromHour).toISOString(),
      to: new Date(toHour).toISOString(),
      hours: hours.map((h) => ({ ...h, hour: new Date(h.hour).toISOString() })),
      totals: totals(hours),
    },
  };
}

/** Sums of the summed fields, and the highest storage over the range. */
export function totals(hours: readonly HourUsage[]): Omit<HourUsage, "hour"> {
  const t = { requests: 0, messages_in: 0, messages_out: 0, bytes_in: 0, bytes_out: 0, connection_seconds: 0, rows_written: 0, rows_read: 0, do_requests: 0, worker_requests: 0, storage_bytes: 0 };
  for (const h of hours) {
    for (const f of SUMMED_USAGE_FIELDS) t[f] += h[f];
    t.storage_bytes = Math.max(t.storage_bytes, h.storage_bytes);
  }
  t.connection_seconds = Math.round(t.connection_seconds * 1000) / 1000;
  t.do_requests = Math.round(t.do_requests * 1000) / 1000; // WebSocket messages count 1/20 each
  return t;
}

/** Latest time answered, unix ms: the hour after it must still be a valid date (±8.64e15 ms). */
const MAX_TIME_MS = 8.64e15 - 2 * HOUR_MS;

/** A query time: unix ms digits or an ISO 8601 string; `dflt` when absent; null when invalid or beyond what a date can hold. */
function parseTime(v: string | undefined, dflt: number | null): number | null {
  if (v === undefined || v === "") return dflt;
  const t = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  return Number.isNaN(t) || Math.abs(t) > MAX_TIME_MS ? null : t;
}
