/**
 * The counting pipeline end to end inside workerd: a Meter (reporter side,
 * real SQLite storage) reporting to a real UsageAggregator — exactly-once
 * across lost answers and restarts, hourly usage, storage high-water.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { series } from "../../../objects/usage/catalog";
import { Meter } from "../../../objects/usage/meter";
import { HOUR_MS, hourOf, type UsageReport } from "../../../objects/usage/report";
import { usageIndexStub, usageStub } from "../../../objects/usage/stub";
import type { AggregateStore } from "../../../objects/usage/store";

const testEnv = env as unknown as Env;
const PUBLISHED = series("mortarmq_messages_published_total");
const PUB_BYTES = series("mortarmq_published_bytes_total");
const STORED = series("mortarmq_stored_bytes", { system: "mortar" });
const APPLIED = series("mortarmq_telemetry_reports_total", { result: "applied" });
const DUPLICATE = series("mortarmq_telemetry_reports_total", { result: "duplicate" });

let n = 0;
const tenant = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

/** The tenant's series but the aggregator's own cost ones (cost.test.ts checks those). */
async function seriesOf(t: string): Promise<Record<string, number>> {
  return Object.fromEntries(((await usageStub(testEnv, t).metrics()) as [string, number][]).filter(([k]) => !k.startsWith("mortarmq_tenant_")));
}

/** The aggregator's store (its reporters live in its state row and its `reporters` table). */
const storeOf = (o: unknown) => (o as { store: AggregateStore }).store;

describe("UsageAggregator", () => {
  it("applies each (reporter, number) once; later numbers apply; hours and storage high-water", async () => {
    const t = tenant("agg");
    const agg = usageStub(testEnv, t);
    const h = hourOf(Date.now()) - 5 * HOUR_MS;
    const r1: UsageReport = { reporter: "r1", no: 1, at: h, entries: [[h, PUBLISHED, 5], [h, PUB_BYTES, 50], [h, STORED, 100]] };
    expect(await agg.report(r1)).toEqual({ applied: true });
    expect(await agg.report(r1)).toEqual({ applied: false }); // the retry of a report whose answer was lost
    const r2: UsageReport = { reporter: "r1", no: 2, at: h + HOUR_MS, entries: [[h + HOUR_MS, PUBLISHED, 2], [h + HOUR_MS, STORED, -40]] };
    expect(await agg.report(r2)).toEqual({ applied: true });
    expect(await agg.report({ ...r1, entries: [[h, PUBLISHED, 1000]] })).toEqual({ applied: false }); // an old number never applies
    // Another reporter's number 1 is its own.
    expect(await agg.report({ reporter: "r2", no: 1, at: h, entries: [[h, PUBLISHED, 1]] })).toEqual({ applied: true });
    expect(await seriesOf(t)).toEqual({ [PUBLISHED]: 8, [PUB_BYTES]: 50, [STORED]: 60, [APPLIED]: 3, [DUPLICATE]: 2 });
    const hours = await agg.usage(h, h + 3 * HOUR_MS);
    expect(hours.map((u) => [u.hour - h, u.messages_in, u.bytes_in, u.storage_bytes])).toEqual([
      [0, 6, 50, 100],
      [HOUR_MS, 2, 0, 100], // 100 until the drop to 60 within this hour
      [2 * HOUR_MS, 0, 0, 60], // nothing reported: the level carries over
    ]);
    expect(await usageIndexStub(testEnv).tenants()).toContain(t);
  });

  it("skips unknown metrics and negative counter increments; refuses malformed reports", async () => {
    const t = tenant("agg-bad");
    const agg = usageStub(testEnv, t);
    const h = hourOf(Date.now());
    expect(await agg.report({ reporter: "x", no: 1, at: h, entries: [[h, "no_such_metric_total", 3], [h, PUBLISHED, -2], [h, PUBLISHED, 4]] })).toEqual({ applied: true });
    expect(await seriesOf(t)).toEqual({ [PUBLISHED]: 4, [APPLIED]: 1 });
    const bad = await agg.report({ reporter: "x", no: 0, at: h, entries: [] });
    expect(bad.applied).toBe(false);
    expect(bad.error).toMatch(/positive integer/);
    expect((await agg.report({ reporter: "x", no: 2, at: h, entries: [[h, PUBLISHED]] } as unknown as UsageReport)).error).toMatch(/entry/);
  });
});

describe("UsageAggregator after a long outage", () => {
  it("a retry of a report applied just before the broker was down for over 7 days still counts once", async () => {
    const t = tenant("outage");
    const agg = usageStub(testEnv, t);
    const h = hourOf(Date.now());
    const r: UsageReport = { reporter: "m1", no: 1, at: h, entries: [[h, PUBLISHED, 7]] };
    expect(await agg.report(r)).toEqual({ applied: true }); // its answer is lost; the Meter resends it after the outage
    expect(await agg.report({ reporter: "m2", no: 4, at: h, entries: [[h, PUBLISHED, 1]] })).toEqual({ applied: true });
    // the broker is down 8 days: every report the aggregator knows is that old when its prune alarm runs first
    await runInDurableObject(agg, (o) => storeOf(o).ageReporters(8 * 24 * HOUR_MS));
    expect(await runDurableObjectAlarm(agg)).toBe(true);
    expect(await agg.report(r)).toEqual({ applied: false });
    expect((await seriesOf(t))[PUBLISHED]).toBe(8);
    // reporters silent for 7 days while others report are still forgotten
    await runInDurableObject(agg, (o) => storeOf(o).ageReporters(8 * 24 * HOUR_MS, "m2"));
    expect(await runDurableObjectAlarm(agg)).toBe(true);
    const left = await runInDurableObject(agg, (o) => storeOf(o).reporters().map(([id]) => id));
    expect(left).toEqual(["m1"]);
  });
});

describe("Meter → UsageAggregator", () => {
  it("a report whose answer was lost is resent with its number and counted once; a restart resends the stored outbox", async () => {
    const t = tenant("meter");
    // Any object's storage works as the reporter's: use a scratch aggregator instance.
    const scratch = usageStub(testEnv, tenant("scratch"));
    let mode: "ok" | "lost" | "down" = "lost";
    const sent: number[] = [];
    const options = (schedule: number[]) => ({
      reporter: "meter-test",
      flushMs: 100,
      schedule: (at: number) => void schedule.push(at),
      send: async (r: UsageReport) => {
        sent.push(r.no);
        if (mode === "down") throw new Error("aggregator unreachable");
        await usageStub(testEnv, t).report(r); // a stub of this context (stubs are per I/O context)
        if (mode === "lost") throw new Error("answer lost");
      },
    });
    await runInDurableObject(scratch, async (_, state) => {
      const scheduled: number[] = [];
      const m = new Meter(state.storage, options(scheduled));
      m.add(PUBLISHED, 3);
      m.add(PUBLISHED, 4);
      expect(scheduled.length).toBe(1); // one flush asked for, not one per count
      expect(await m.flush()).toBe(false); // applied by the aggregator, answer lost
      mode = "down";
      m.add(PUB_BYTES, 70);
      expect(await m.flush()).toBe(false); // report 1 again: unreachable
      expect(m.hasOutbox).toBe(true);
    });
    // The object restarts: counts not yet in a report were in memory only (the bounded loss of
    // docs/operations.md "Exactness"); the stored report 1 is resent before report 2, and the
    // aggregator ignores it. Waking up alone asks for no flush (no aggregator call for an idle object).
    mode = "ok";
    await runInDurableObject(scratch, async (_, state) => {
      const scheduled: number[] = [];
      const m = new Meter(state.storage, options(scheduled));
      m.resume();
      expect(scheduled.length).toBe(0);
      m.add(PUB_BYTES, 5);
      expect(await m.flush()).toBe(true);
      expect(m.hasOutbox).toBe(false);
    });
    expect(sent).toEqual([1, 1, 1, 2]);
    expect(await seriesOf(t)).toEqual({ [PUBLISHED]: 7, [PUB_BYTES]: 5, [APPLIED]: 2, [DUPLICATE]: 1 });
  });

  it("levels are reported as changes and withdrawn by a final flush", async () => {
    const t = tenant("levels");
    let level = 5;
    await runInDurableObject(usageStub(testEnv, tenant("scratch")), async (_, state) => {
      const m = new Meter(state.storage, {
        reporter: "levels", flushMs: 100, schedule: () => {}, send: (r) => usageStub(testEnv, t).report(r), levels: () => ({ [STORED]: level }),
      });
      m.touch();
      expect(await m.flush()).toBe(true);
      expect((await seriesOf(t))[STORED]).toBe(5);
      level = 12;
      expect(await m.flush()).toBe(true);
      expect((await seriesOf(t))[STORED]).toBe(12);
      expect(await m.flush()).toBe(true); // unchanged: nothing sent
      expect((await seriesOf(t))[APPLIED]).toBe(2);
      expect(await m.flush(true)).toBe(true);
      expect((await seriesOf(t))[STORED]).toBe(0);
    });
  });
});
