/**
 * The alarm scheduler (objects/shared/scheduler.ts) on a real object's
 * storage: a handler that fails is retried with backoff and never needs
 * the runtime's alarm retries (6 on Cloudflare), and its failures survive
 * a restart of the object. The scheduler's clock is the test's (starting
 * days ahead, so the stored alarm never fires on its own during the test).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { AlarmScheduler, retryDelayMs } from "../../../objects/shared/scheduler";
import { usageStub } from "../../../objects/usage/stub";

const FAILURES = 10;

function failures(storage: DurableObjectStorage, part: string): number | null {
  const t = storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alarm_failures'").toArray();
  if (t.length === 0) return null;
  for (const r of storage.sql.exec<{ failures: number }>("SELECT failures FROM alarm_failures WHERE part = ?", part)) return r.failures;
  return null;
}

describe("alarm scheduler", () => {
  it("a job that fails 10 times in a row is retried with growing delays and completes later", async () => {
    await runInDurableObject(usageStub(env as unknown as Env, "sched-job"), async (_obj, state) => {
      let t = Date.now() + 10 * 86_400_000;
      let calls = 0;
      let done = false;
      const make = () =>
        new AlarmScheduler(state.storage, { owner: "test", jobs: true, now: () => t }).job("step", () => {
          calls++;
          if (calls <= FAILURES) throw new Error(`step failed ${calls}`);
          done = true;
          sched.clear("step");
        });
      let sched = make();
      await sched.set("step", t);
      expect(await state.storage.getAlarm()).toBe(t);
      for (let i = 1; i <= FAILURES; i++) {
        if (i === 6) sched = make(); // the object restarted: the failure count goes on from the stored record
        await sched.alarm();
        expect(calls).toBe(i);
        const next = await state.storage.getAlarm();
        expect(next).toBe(t + retryDelayMs(i)); // re-armed by the scheduler, never left to the runtime
        expect(sched.get("step")).toBe(next);
        expect(failures(state.storage, "step")).toBe(i);
        t = next!;
      }
      await sched.alarm();
      expect(done).toBe(true);
      expect(await state.storage.getAlarm()).toBeNull();
      expect(failures(state.storage, "step")).toBeNull(); // a success forgets the record
    });
  });

  it("a failing part is retried alone; the other parts keep their own times", async () => {
    await runInDurableObject(usageStub(env as unknown as Env, "sched-part"), async (_obj, state) => {
      const t0 = Date.now() + 10 * 86_400_000;
      let t = t0;
      let stepDue: number | null = t0;
      let tickDue: number | null = t0 + 500;
      let ticks = 0;
      let calls = 0;
      const sched = new AlarmScheduler(state.storage, { owner: "test", now: () => t })
        .part("step", {
          due: () => stepDue,
          run: () => {
            if (++calls <= FAILURES) throw new Error(`step failed ${calls}`);
            stepDue = null;
          },
        })
        .part("tick", {
          due: () => tickDue,
          run: (now) => {
            ticks++;
            tickDue = now + 100_000;
          },
        });
      await sched.rearm();
      expect(await state.storage.getAlarm()).toBe(t0);
      await sched.alarm(); // step fails once; tick is not due yet
      expect(await state.storage.getAlarm()).toBe(t0 + 500);
      t = t0 + 500;
      await sched.alarm(); // tick runs; step waits for its retry (t0 + 1 s)
      expect(ticks).toBe(1);
      expect(calls).toBe(1);
      expect(await state.storage.getAlarm()).toBe(t0 + retryDelayMs(1));
      while (stepDue !== null) {
        t = (await state.storage.getAlarm())!;
        await sched.alarm();
      }
      expect(calls).toBe(FAILURES + 1);
      expect(await state.storage.getAlarm()).toBe(tickDue);
      await sched.stop();
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });
});
