/**
 * `/metrics` on a hosted broker (ADMIN_TOKEN, static tenant "static-tenant",
 * issued tokens) shows the known tenants from the start: the static one and
 * every tenant of the directory, at 0, before they sent anything — and none
 * of them gets an aggregator for it; a deleted tenant is gone; not open, so
 * no `default`. A tenant's token sees only its own zeros (docs/operations.md
 * "Series before any traffic").
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import pkg from "../../../package.json";
import type { Env } from "../../../objects/env";
import { METRICS, initialSeries } from "../../../objects/usage/catalog";
import { usageIndexStub } from "../../../objects/usage/stub";
import { parseMetrics, type Sample } from "../../fixtures/prometheus";
import { ADMIN, STATIC_TOKEN, admin, tenantWithToken } from "./helpers";

const testEnv = env as unknown as Env;
const INITIAL = METRICS.flatMap(initialSeries).length;

async function scrape(token: string): Promise<Sample[]> {
  const r = await admin("GET", "/metrics", undefined, token);
  expect(r.status).toBe(200);
  return parseMetrics(r.json as string);
}

/** Samples per tenant label (build info, without one, under ""). */
function byTenant(samples: Sample[]): Map<string, Sample[]> {
  const out = new Map<string, Sample[]>();
  for (const s of samples) {
    const t = s.labels.tenant ?? "";
    out.set(t, [...(out.get(t) ?? []), s]);
  }
  return out;
}

describe("/metrics knows the configured tenants before their first request", () => {
  it("operator: the static tenant and each directory tenant at 0, a deleted one not, no default; no aggregator created", async () => {
    const a = await tenantWithToken("mk");
    const b = await tenantWithToken("mk");
    const gone = await tenantWithToken("mk");
    expect((await admin("DELETE", `/admin/tenants/${gone.tenant}`)).status).toBe(200);

    const tenants = byTenant(await scrape(ADMIN));
    expect(tenants.get("")).toEqual([{ name: "mortarmq_build_info", type: "gauge", labels: { version: pkg.version }, value: 1 }]);
    for (const t of ["static-tenant", a.tenant, b.tenant]) {
      expect(tenants.get(t)?.length, t).toBe(INITIAL);
      expect(tenants.get(t)!.every((s) => s.value === 0), t).toBe(true);
    }
    expect(tenants.has(gone.tenant)).toBe(false);
    expect(tenants.has("default")).toBe(false);
    const reported = await usageIndexStub(testEnv).tenants();
    expect(reported).not.toContain(a.tenant);
    expect(reported).not.toContain("static-tenant");
  });

  it("a tenant's token: its own zeros and the build info, nothing of another tenant", async () => {
    const a = await tenantWithToken("mk");
    const own = byTenant(await scrape(a.token));
    expect([...own.keys()].sort()).toEqual(["", a.tenant]);
    expect(own.get(a.tenant)!.length).toBe(INITIAL);
    const stat = byTenant(await scrape(STATIC_TOKEN));
    expect([...stat.keys()].sort()).toEqual(["", "static-tenant"]);
  });
});
