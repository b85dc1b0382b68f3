/**
 * The aggregator keeps every series in one row (`series_set`) instead of
 * one row per series (issue #26 (g): a report rewrites one row, not one per
 * series it touches), and merges the `series` table of an earlier version.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { series } from "../../../objects/usage/catalog";
import { hourOf, type UsageReport } from "../../../objects/usage/report";
import { AggregateStore } from "../../../objects/usage/store";
import { usageStub } from "../../../objects/usage/stub";

const testEnv = env as unknown as Env;
const PUBLISHED = series("mortarmq_messages_published_total");
const PUB_BYTES = series("mortarmq_published_bytes_total");
const DELIVERED = series("mortarmq_messages_delivered_total");
const APPLIED = series("mortarmq_telemetry_reports_total", { result: "applied" });
const tenant = () => `series-${Math.random().toString(36).slice(2, 10)}`;

describe("UsageAggregator series", () => {
  it("are one row however many series a report touches, and /metrics reads them exactly", async () => {
    const agg = usageStub(testEnv, tenant());
    const h = hourOf(Date.now());
    const r = (no: number, n: number): UsageReport => ({ reporter: "p", no, at: Date.now(), entries: [[h, PUBLISHED, n], [h, PUB_BYTES, 10 * n], [h, DELIVERED, n]] });
    await agg.report(r(1, 2));
    await agg.report(r(2, 3));
    expect(Object.fromEntries(await agg.metrics())).toEqual({ [PUBLISHED]: 5, [PUB_BYTES]: 50, [DELIVERED]: 5, [APPLIED]: 2 });
    expect(await agg.seriesValue(PUB_BYTES)).toBe(50);
    await runInDurableObject(agg, (_o, state) => {
      expect(state.storage.sql.exec("SELECT id FROM series_set").toArray()).toEqual([{ id: 1 }]);
    });
  });

  it("an earlier version's series table is merged and dropped with the next report", async () => {
    const agg = usageStub(testEnv, tenant());
    const h = hourOf(Date.now());
    await runInDurableObject(agg, (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE series(key TEXT PRIMARY KEY, value REAL NOT NULL)");
      sql.exec("INSERT INTO series(key, value) VALUES (?, 7), (?, 70)", PUBLISHED, PUB_BYTES);
      const store = new AggregateStore(state.storage); // as after a deploy: the object starts on the old layout
      expect(store.seriesValue(PUBLISHED)).toBe(7);
      expect(store.apply({ reporter: "p", no: 1, at: Date.now(), entries: [[h, PUBLISHED, 1]] }, Date.now())).toBe(true);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name = 'series'").toArray()).toEqual([]);
      expect(Object.fromEntries(new AggregateStore(state.storage).allSeries())).toEqual({ [PUBLISHED]: 8, [PUB_BYTES]: 70, [APPLIED]: 1 });
    });
  });
});
