/**
 * The aggregator writes ONE row per report (issue #26 (g)): every series,
 * the recent reporters, the hour's usage and the recent intervals live in its
 * state row (objects/usage/aggregate-state.ts), and an earlier version's
 * tables (`series` / `series_set`, `recent`, `storage_now`) are merged into
 * it and dropped with the next report.
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
const STORED = series("mortarmq_stored_bytes", { system: "mortar" });
const APPLIED = series("mortarmq_telemetry_reports_total", { result: "applied" });
const tenant = () => `series-${Math.random().toString(36).slice(2, 10)}`;
const withoutCosts = (all: [string, number][]) => Object.fromEntries(all.filter(([k]) => !k.startsWith("mortarmq_tenant_")));

describe("UsageAggregator state row", () => {
  it("a report writes one row however many series, hours' usage and reporters it touches; /metrics and usage read it exactly", async () => {
    const agg = usageStub(testEnv, tenant());
    const h = hourOf(Date.now());
    const r = (no: number, n: number): UsageReport => ({
      reporter: "p", no, at: Date.now(), entries: [[h, PUBLISHED, n], [h, PUB_BYTES, 10 * n], [h, DELIVERED, n], [h, STORED, 100 * n]],
    });
    await agg.report(r(1, 2));
    const written = await runInDurableObject(agg, (o, state) => {
      const store = (o as unknown as { store: AggregateStore }).store;
      let rows = 0;
      const exec = state.storage.sql.exec.bind(state.storage.sql);
      const sql = state.storage.sql as { exec: typeof exec };
      const orig = sql.exec;
      sql.exec = ((q: string, ...a: SqlStorageValue[]) => {
        const c = exec(q, ...a);
        c.toArray();
        rows += c.rowsWritten;
        return c;
      }) as typeof exec;
      try {
        store.apply(r(2, 3), Date.now());
      } finally {
        sql.exec = orig;
      }
      return rows;
    });
    expect(written).toBe(1);
    expect(withoutCosts((await agg.metrics()) as [string, number][])).toEqual({ [PUBLISHED]: 5, [PUB_BYTES]: 50, [DELIVERED]: 5, [STORED]: 500, [APPLIED]: 2 });
    expect(await agg.seriesValue(PUB_BYTES)).toBe(50);
    const [hour] = await agg.usage(h, h + 3_600_000);
    expect([hour!.messages_in, hour!.bytes_in, hour!.messages_out, hour!.storage_bytes]).toEqual([5, 50, 5, 500]);
    await runInDurableObject(agg, (_o, state) => {
      expect(state.storage.sql.exec("SELECT id FROM agg_state").toArray()).toEqual([{ id: 1 }]);
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM usage").one().n).toBe(0); // the current hour is in the state row
      // a restarted object reads everything back from that row
      expect(withoutCosts(new AggregateStore(state.storage).allSeries())).toEqual({ [PUBLISHED]: 5, [PUB_BYTES]: 50, [DELIVERED]: 5, [STORED]: 500, [APPLIED]: 2 });
    });
  });

  it("an earlier version's tables are merged and dropped with the next report", async () => {
    const agg = usageStub(testEnv, tenant());
    const h = hourOf(Date.now());
    await runInDurableObject(agg, (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE agg_state");
      sql.exec("CREATE TABLE series(key TEXT PRIMARY KEY, value REAL NOT NULL)");
      sql.exec("INSERT INTO series(key, value) VALUES (?, 7), (?, 70)", PUBLISHED, PUB_BYTES);
      sql.exec("CREATE TABLE series_set(id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
      sql.exec("INSERT INTO series_set(id, v) VALUES (1, ?)", JSON.stringify({ [DELIVERED]: 3 }));
      sql.exec("INSERT INTO agg_meta(k, v) VALUES ('storage_now', 40)");
      sql.exec("INSERT INTO reporters(id, last_no, seen_ms) VALUES ('p', 4, ?)", Date.now());
      const store = new AggregateStore(state.storage); // as after a deploy: the object starts on the old layout
      expect(store.seriesValue(PUBLISHED)).toBe(7);
      expect(store.apply({ reporter: "p", no: 4, at: Date.now(), entries: [[h, PUBLISHED, 1]] }, Date.now())).toBe(false); // its reporters are still known
      expect(store.apply({ reporter: "p", no: 5, at: Date.now(), entries: [[h, PUBLISHED, 1], [h, STORED, 2]] }, Date.now())).toBe(true);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name IN ('series', 'series_set')").toArray()).toEqual([]);
      const again = new AggregateStore(state.storage);
      expect(again.seriesValue(PUBLISHED)).toBe(8);
      expect(again.seriesValue(DELIVERED)).toBe(3);
      expect(again.storageNow()).toBe(42);
    });
  });
});
