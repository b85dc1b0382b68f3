/** The pure part of a tenant purge (objects/tenants/purge.ts): phase order, when steps run, the progress document. */
import { describe, expect, it } from "vitest";
import { PURGE_PHASES, newPurge, nextPhase, nextStepAt, purgeDoc } from "../../objects/tenants/purge";

describe("tenant purge state", () => {
  it("goes through every phase in order, the usage aggregator last, and stays done", () => {
    const order: string[] = [];
    for (let p: (typeof PURGE_PHASES)[number] = "waiting"; p !== "done"; p = nextPhase(p)) order.push(p);
    expect(order).toEqual(["waiting", "topics", "mailboxes", "agents", "registry", "mailbox-index", "usage"]);
    expect(nextPhase("done")).toBe("done");
  });

  it("waits for its start time, runs at once after a success, backs off after failures", () => {
    const s = newPurge(1_000, 300);
    expect(nextStepAt(s, 1_000)).toBe(1_300);
    expect(nextStepAt(s, 2_000)).toBe(2_000);
    const running = { ...s, phase: "topics" as const };
    expect(nextStepAt(running, 5_000)).toBe(5_000);
    expect([1, 2, 3, 10].map((failures) => nextStepAt({ ...running, failures }, 5_000)! - 5_000)).toEqual([500, 1_000, 2_000, 30_000]);
    expect(nextStepAt({ ...running, phase: "done" }, 5_000)).toBeNull();
  });

  it("shows progress as the admin API documents it", () => {
    const s = { ...newPurge(Date.parse("2026-01-01T00:00:00Z"), 1_000), phase: "mailboxes" as const, startedAt: Date.parse("2026-01-01T00:00:01Z"),
      purged: { groups: 2, partitions: 10, mailboxes: 32 }, estimated: { groups: 2, partitions: 10, mailboxes: 100 }, steps: 3, lastError: "boom", failures: 1 };
    expect(purgeDoc(s, Date.parse("2026-01-01T00:00:05Z"))).toEqual({
      state: "running", phase: "mailboxes", requested_at: "2026-01-01T00:00:00.000Z", started_at: "2026-01-01T00:00:01.000Z", finished_at: null,
      next_step_at: "2026-01-01T00:00:05.500Z", purged: { groups: 2, partitions: 10, mailboxes: 32 }, estimated: { groups: 2, partitions: 10, mailboxes: 100 },
      steps: 3, last_error: "boom",
    });
    expect(purgeDoc(newPurge(0, 10), 0)).toMatchObject({ state: "waiting", next_step_at: "1970-01-01T00:00:00.010Z", estimated: null });
  });
});
