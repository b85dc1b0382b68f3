/**
 * Issue 27 item 1, fan-out over tenants: with 104 tenants known to the usage
 * index, `/metrics` and `/stats?all=1` stay within 100 object calls per
 * request (the harness's budgetFetch fails a request over it). `/metrics`
 * reads at most 90 tenants and says how many it left out
 * (`mortarmq_scrape_tenants_skipped`); `?shard=I/N` scrapes together cover
 * every tenant once; `/stats?all=1` pages 4 tenants at a time (`next_tenant`,
 * `&after=`) in name order.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { usageIndexStub } from "../../../objects/usage/stub";
import type { AllStatsDoc } from "../../../worker/admin/stats";
import { budgetFetch } from "../helpers/call-budget";

const e = env as unknown as Env;
const TENANTS = Array.from({ length: 104 }, (_, i) => `fan-t${String(i).padStart(3, "0")}`);

/** The tenants named in a scrape's samples, and the skipped gauge's value. */
function scrapeOf(text: string): { tenants: Set<string>; skipped: number } {
  const tenants = new Set([...text.matchAll(/tenant="(fan-t\d+)"/g)].map((m) => m[1]!));
  const m = /^mortarmq_scrape_tenants_skipped (\d+)$/m.exec(text);
  return { tenants, skipped: m ? Number(m[1]) : -1 };
}

describe("object calls per request over 104 tenants", () => {
  it("/metrics reads at most 90 tenants, counts the skipped, and shards cover all", async () => {
    await Promise.all(TENANTS.map((t) => usageIndexStub(e).addTenant(t)));

    const whole = await budgetFetch("/metrics");
    expect(whole.res.status).toBe(200);
    const w = scrapeOf(await whole.res.text());
    expect(w.tenants.size).toBeLessThanOrEqual(90);
    expect(w.skipped).toBeGreaterThanOrEqual(14);

    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await budgetFetch(`/metrics?shard=${i}/3`);
      const s = scrapeOf(await r.res.text());
      expect(s.skipped).toBe(-1); // the gauge is there only when a scrape skipped
      seen.push(...s.tenants);
    }
    expect(seen.sort()).toEqual(TENANTS);
    expect((await budgetFetch("/metrics?shard=3/3")).res.status).toBe(400);
    expect((await budgetFetch("/metrics?shard=x")).res.status).toBe(400);
  }, 60_000);

  it("/stats?all=1 pages 4 tenants at a time", async () => {
    await Promise.all(TENANTS.map((t) => usageIndexStub(e).addTenant(t)));
    const first = await budgetFetch("/stats?all=1");
    expect(first.res.status).toBe(200);
    const doc = (await first.res.json()) as AllStatsDoc;
    expect(doc.tenants).toHaveLength(4);
    expect(doc.next_tenant).toBe(doc.tenants[3]!.tenant);
    // From the 90th on (reading all 26 pages would only repeat this): the pages continue in name order to the end.
    const seen: string[] = [];
    let after: string | null = TENANTS[89]!;
    while (after !== null) {
      const r = await budgetFetch(`/stats?all=1&after=${encodeURIComponent(after)}`);
      const page = (await r.res.json()) as AllStatsDoc;
      expect(page.tenants.length).toBeLessThanOrEqual(4);
      seen.push(...page.tenants.map((t) => t.tenant));
      after = page.next_tenant;
    }
    expect(seen.filter((t) => t.startsWith("fan-t"))).toEqual(TENANTS.slice(90));
    expect(new Set(seen).size).toBe(seen.length);
  }, 60_000);
});
