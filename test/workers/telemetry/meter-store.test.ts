/**
 * The meter's table inside a real Durable Object whose storage is deleted
 * under it (sessions drop all their storage once a connection ended, which
 * can happen while a report is in flight): the meter's writes neither throw
 * ("no such table: telemetry" surfaced as unhandled rejections) nor lose
 * what is written afterwards.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MeterStore } from "../../../objects/usage/meter-store";
import { newNatsSessionStub } from "../../../objects/nats/stub";

describe("MeterStore after deleteAll", () => {
  it("dropOutbox, savePending and saveReport work after the object's storage was deleted", async () => {
    const stub = newNatsSessionStub(env);
    await runInDurableObject(stub, async (_o, state) => {
      const store = new MeterStore<{ no: number }>(state.storage);
      const report = { reporter: "r", no: 1, at: 0, entries: [] as [number, string, number][] };
      store.saveReport(report, { no: 1 });
      await state.storage.deleteAll();
      expect(() => store.dropOutbox()).not.toThrow();
      store.savePending([[0, "mortarmq_frames_received_total", 3]]);
      expect(store.load().pending).toEqual([[0, "mortarmq_frames_received_total", 3]]);
      await state.storage.deleteAll();
      store.saveReport({ ...report, no: 2 }, { no: 2 });
      expect(store.load()).toMatchObject({ outbox: { no: 2 }, state: { no: 2 }, pending: null });
      await state.storage.deleteAll();
    });
  });
});
