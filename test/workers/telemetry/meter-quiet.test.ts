/**
 * Counts survive an object that goes quiet before its report is due
 * (objects/usage/meter.ts QUIET_SAVE_MS; docs/operations.md "Exactness").
 *
 * With the default TELEMETRY_FLUSH_MS (60 s) a Partition that took one PUB
 * and nothing else was hibernated by the runtime after ~10 s idle, its
 * in-memory counts dropped, and its report (through the alarm, a fresh
 * instance) carried the stored-bytes level but `messages_published_total`
 * 0 — found by a new user of `npm start`. The meter now stores what it holds
 * QUIET_SAVE_MS after its last count, in its one row; a restarted object
 * reads it back and reports it. Real Durable Object storage; the "restart"
 * is a second Meter over the same storage (what the constructor of a
 * re-created instance does).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Meter, QUIET_SAVE_MS } from "../../../objects/usage/meter";
import { newNatsSessionStub } from "../../../objects/nats/stub";
import type { UsageReport } from "../../../objects/usage/report";

const SERIES = "mortarmq_messages_published_total";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function meterOn(storage: DurableObjectStorage, sent: UsageReport[], extra: Partial<ConstructorParameters<typeof Meter>[1]> = {}): Meter {
  return new Meter(storage, {
    reporter: "r1",
    flushMs: 60_000,
    send: async (r) => void sent.push(r),
    schedule: () => {},
    ...extra,
  });
}

/** The sum of `series` over the reports, each report number once (the aggregator ignores a number it applied). */
const total = (reports: UsageReport[], series: string) =>
  [...new Map(reports.map((r) => [`${r.reporter}/${r.no}`, r])).values()].flatMap((r) => r.entries).filter(([, k]) => k === series).reduce((a, [, , v]) => a + v, 0);

describe("Meter quiet save", () => {
  it("a rebuilt object asks for its report when it was due, not an interval after the rebuild (one rebuilt by every message would never report)", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const asked: number[] = [];
      const m = meterOn(state.storage, [], { schedule: (at) => void asked.push(at) });
      const t0 = Date.now();
      m.add(SERIES, 1);
      expect(asked).toHaveLength(1);
      const due = asked[0]!;
      expect(due).toBeGreaterThanOrEqual(t0 + 60_000);
      await sleep(QUIET_SAVE_MS + 300); // stored with its due time
      for (let i = 0; i < 3; i++) {
        const rebuilt = meterOn(state.storage, [], { schedule: (at) => void asked.push(at) });
        rebuilt.resume();
        expect(asked.at(-1)).toBe(due); // each rebuild: still the first due time
      }
    });
  });

  it("stores counts QUIET_SAVE_MS after the last one, and a restarted object reports them", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const sent: UsageReport[] = [];
      const m = meterOn(state.storage, sent);
      m.add(SERIES, 3);
      await sleep(QUIET_SAVE_MS / 2);
      m.add(SERIES, 4); // the spell goes on: the timer looks again later
      await sleep(QUIET_SAVE_MS / 2 + 200);
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE name = 'telemetry'").one().n).toBe(0); // not quiet long enough yet
      await sleep(QUIET_SAVE_MS);
      const rows = state.storage.sql.exec<{ k: string; v: string }>("SELECT k, v FROM telemetry").toArray();
      expect(rows.map((r) => r.k)).toEqual(["meter"]);
      const pending = JSON.parse(rows[0]!.v).pending as [number, string, number][];
      expect(pending.filter(([, k]) => k === SERIES).reduce((a, [, , v]) => a + v, 0)).toBe(7);

      // the object is evicted (memory gone); the alarm re-creates it and its report carries the counts
      const restarted = meterOn(state.storage, sent);
      expect(await restarted.flush()).toBe(true);
      expect(sent).toHaveLength(1);
      expect(total(sent, SERIES)).toBe(7);
      expect(sent[0]!.no).toBe(1);

      // the report took them: the row holds no pending counts, a second restart reports nothing more
      expect(JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM telemetry").one().v).pending).toBeUndefined();
      const again = meterOn(state.storage, sent);
      expect(await again.flush()).toBe(true);
      expect(sent.map((r) => r.no)).toEqual([1, 1]); // the stored report resent as a duplicate, nothing new
      expect(total(sent, SERIES)).toBe(7);
      await state.storage.deleteAll();
    });
  }, 20_000);

  it("counts reported before the object went quiet are not saved again (no row), and collect() moves the object's own counts", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const sent: UsageReport[] = [];
      const m = meterOn(state.storage, sent);
      m.add(SERIES, 2);
      expect(await m.flush()).toBe(true);
      const before = state.storage.sql.exec<{ v: string }>("SELECT v FROM telemetry").one().v;
      await sleep(QUIET_SAVE_MS + 500);
      expect(state.storage.sql.exec<{ v: string }>("SELECT v FROM telemetry").one().v).toBe(before); // nothing unsaved: no write

      await state.storage.deleteAll(); // a second object's meter, on empty storage
      let own = 5; // counts a session keeps itself until they are drained
      const s = meterOn(state.storage, sent, { reporter: "r2", collect: () => { s.add("mortarmq_frames_received_total", own); own = 0; } });
      s.touch(); // a frame counted by the session: touch() stands for a count when collect is given
      await sleep(QUIET_SAVE_MS + 500);
      expect(own).toBe(0);
      const restarted = meterOn(state.storage, sent, { reporter: "r2" });
      expect(await restarted.flush()).toBe(true);
      expect(total(sent.slice(1), "mortarmq_frames_received_total")).toBe(5);
      await state.storage.deleteAll();
    });
  }, 20_000);
});
