/**
 * The meter's table inside a real Durable Object: one row per report
 * (issue #26 (g): telemetry writes no row per message), rows of the earlier
 * layout read and removed, and writes that neither throw nor get lost when
 * the object's storage is deleted under it (sessions drop all their storage
 * once a connection ended, which can happen while a report is in flight).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MeterStore } from "../../../objects/usage/meter-store";
import { newNatsSessionStub } from "../../../objects/nats/stub";

const report = (no: number) => ({ reporter: "r", no, at: 0, entries: [[0, "mortarmq_frames_received_total", no]] as [number, string, number][] });

describe("MeterStore", () => {
  it("stores a report and the state after it as one row, rewritten in place", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const store = new MeterStore<{ no: number }>(state.storage);
      store.saveReport(report(1), { no: 1 });
      const sql = state.storage.sql;
      const c = sql.exec("INSERT INTO telemetry(k, v) VALUES ('meter', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", JSON.stringify({ state: { no: 2 }, outbox: report(2) }));
      c.toArray();
      expect(c.rowsWritten).toBe(1); // the statement saveReport runs: an in-place update, not a delete + insert
      store.saveReport(report(3), { no: 3 });
      expect(sql.exec("SELECT k FROM telemetry").toArray()).toEqual([{ k: "meter" }]);
      expect(new MeterStore<{ no: number }>(state.storage).load()).toEqual({ pending: null, state: { no: 3 }, outbox: report(3) });
      await state.storage.deleteAll();
    });
  });

  it("reads the rows an earlier version stored and removes them with the next write", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE telemetry(k TEXT PRIMARY KEY, v TEXT NOT NULL)");
      sql.exec("INSERT INTO telemetry(k, v) VALUES ('pending', ?), ('state', ?), ('outbox', ?)",
        JSON.stringify([[0, "mortarmq_frames_received_total", 3]]), JSON.stringify({ no: 4 }), JSON.stringify(report(4)));
      const store = new MeterStore<{ no: number }>(state.storage);
      expect(store.load()).toEqual({ pending: [[0, "mortarmq_frames_received_total", 3]], state: { no: 4 }, outbox: report(4) });
      store.saveReport(report(5), { no: 5 });
      expect(sql.exec("SELECT k FROM telemetry").toArray()).toEqual([{ k: "meter" }]);
      await state.storage.deleteAll();
    });
  });

  it("saveReport works after the object's storage was deleted", async () => {
    await runInDurableObject(newNatsSessionStub(env), async (_o, state) => {
      const store = new MeterStore<{ no: number }>(state.storage);
      store.saveReport(report(1), { no: 1 });
      await state.storage.deleteAll();
      store.saveReport(report(2), { no: 2 });
      expect(store.load()).toEqual({ pending: null, state: { no: 2 }, outbox: report(2) });
      await state.storage.deleteAll();
    });
  });
});
