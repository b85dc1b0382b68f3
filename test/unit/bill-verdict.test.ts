/**
 * The bill bench's verdict on an idle client (bench/bill/verdict.ts):
 * issue #26 §2 (f)'s budget — ≤ 2 billed requests and ≤ 2 rows written per
 * minute beyond the client's own polls, no row per empty poll, every object
 * evicted while idle.
 */
import { describe, expect, it } from "vitest";
import { IDLE_BUDGET, idleVerdict, verdictText } from "../../bench/bill/verdict";

const evicted = [{ kind: "Mailbox", evictedWhileIdle: true, couldHibernate: true }];

describe("idle verdict", () => {
  it("keeps the issue's budget", () => {
    expect(IDLE_BUDGET).toEqual({ requestsPerMinute: 2, rowsPerMinute: 2, rowsPerEmptyPoll: 0 });
  });

  it("subtracts the client's own polls from the requests and meets the budget when nothing else happens", () => {
    const v = idleVerdict({ doRequestsPerMinute: 7, rowsWrittenPerMinute: 1, pollsPerMinute: 6, polledObjectRowsPerMinute: 0, objects: evicted });
    expect(v).toEqual({ requestsBeyondPolls: 1, rowsWrittenPerMinute: 1, rowsPerEmptyPoll: 0, evictedWhileIdle: true, met: true, over: [] });
    expect(verdictText(v)).toBe("(f) met");
  });

  it("fails an empty poll that writes a row even when the minute's rows are within budget", () => {
    const v = idleVerdict({ doRequestsPerMinute: 6, rowsWrittenPerMinute: 1.2, pollsPerMinute: 6, polledObjectRowsPerMinute: 1.2, objects: evicted });
    expect(v.met).toBe(false);
    expect(v.rowsPerEmptyPoll).toBe(0.2);
    expect(v.over).toEqual(["0.2 rows per empty poll (budget 0)"]);
  });

  it("fails too many requests or rows per minute, and an object kept resident or never evicted", () => {
    const v = idleVerdict({
      doRequestsPerMinute: 9.4, rowsWrittenPerMinute: 12.4,
      objects: [
        { kind: "MortarSession", evictedWhileIdle: false, couldHibernate: false },
        { kind: "Partition", evictedWhileIdle: false, couldHibernate: true },
        { kind: "ConsumerGroup", evictedWhileIdle: true, couldHibernate: true },
      ],
    });
    expect(v.rowsPerEmptyPoll).toBeNull();
    expect(v.evictedWhileIdle).toBe(false);
    expect(v.over).toEqual([
      "9.4 requests/min beyond own polls (budget 2)", "12.4 rows written/min (budget 2)",
      "MortarSession kept resident", "Partition not evicted while idle",
    ]);
    expect(verdictText(v)).toMatch(/^\(f\) NOT met: 9\.4 requests/);
  });
});
