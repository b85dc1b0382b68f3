import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { decodeRuns, fromRuns, toRuns } from "../../objects/partition/delivery-runs";
import { DeliveryState, GroupLedger, type PendingDelivery } from "../../objects/partition/ledger";
import { SettleKind } from "../../objects/partition/rpc";

const owner = { sessionId: "s1", subscriptionId: 1, memberId: 7 };
const limits = { ackWaitMs: 1000, maxAttempts: 3 };

describe("delivery runs", () => {
  it("one deliver call is one run; an ACK in the middle splits it, ACKs at its ends shrink it", () => {
    const l = new GroupLedger(1, "g", 1);
    l.assign(1, owner);
    for (let s = 1; s <= 10; s++) l.delivered(s, 100 + s, 5000);
    expect(toRuns(l.pending.values())).toEqual([[1, 10, 101, 1, 5000, DeliveryState.IN_FLIGHT, 0]]);
    expect(l.settle(SettleKind.ACK, 5, 105, 1, owner, 0, limits)).toBe(0);
    expect(l.settle(SettleKind.ACK, 1, 101, 1, owner, 0, limits)).toBe(0);
    expect(l.settle(SettleKind.ACK, 10, 110, 1, owner, 0, limits)).toBe(0);
    expect(toRuns(l.pending.values())).toEqual([[2, 4, 102, 1, 5000, 0, 0], [6, 9, 106, 1, 5000, 0, 0]]);
    expect(l.settle(SettleKind.RETRY, 7, 107, 1, owner, 0, limits)).toBe(0);
    expect(toRuns(l.pending.values())).toEqual([[2, 4, 102, 1, 5000, 0, 0], [6, 6, 106, 1, 5000, 0, 0], [7, 7, 107, 1, 5000, DeliveryState.RETRY, 0], [8, 9, 108, 1, 5000, 0, 0]]);
  });

  it("ids that are not consecutive, or other deadlines, start a new run", () => {
    const d = (seq: number, deliveryId: number, deadline = 1): PendingDelivery => ({ seq, deliveryId, attempt: 1, deadline, state: 0, reason: 0 });
    expect(toRuns([d(3, 12), d(1, 10), d(2, 11), d(4, 20), d(5, 21, 2)])).toEqual([[1, 3, 10, 1, 1, 0, 0], [4, 4, 20, 1, 1, 0, 0], [5, 5, 21, 1, 2, 0, 0]]);
  });

  it("runs give back exactly the deliveries they were made of (any pending set)", () => {
    const delivery = fc.record({ deliveryId: fc.integer({ min: 1, max: 40 }), attempt: fc.integer({ min: 1, max: 3 }), deadline: fc.integer({ min: 0, max: 2 }), state: fc.integer({ min: 0, max: 2 }), reason: fc.integer({ min: 0, max: 1 }) });
    fc.assert(fc.property(fc.dictionary(fc.integer({ min: 1, max: 60 }).map(String), delivery), (byKey) => {
      const pending = Object.entries(byKey).map(([k, v]) => ({ seq: Number(k), ...v })).sort((a, b) => a.seq - b.seq);
      const runs = decodeRuns(JSON.stringify(toRuns(pending)));
      expect([...fromRuns(runs)]).toEqual(pending);
      for (let i = 1; i < runs.length; i++) expect(runs[i]![0]).toBeGreaterThan(runs[i - 1]![1]);
    }));
  });

  it("a carried delivery the session declined is taken back: same attempt next time, counters as if never made", () => {
    const l = new GroupLedger(1, "g", 1);
    l.assign(1, owner);
    l.delivered(1, 101, 5000);
    expect(l.settle(SettleKind.RETRY, 1, 101, 1, owner, 0, limits)).toBe(0);
    l.delivered(1, 102, 5000); // attempt 2
    l.delivered(2, 103, 5000); // attempt 1
    expect(l.returned([1, 2, 3], [102, 103, 104])).toBe(2);
    expect(l.counters).toMatchObject({ delivered: 1, redelivered: 0 });
    expect(l.retries()).toEqual([1, 2]);
    expect(l.ackFloor()).toBe(1);
    expect([l.delivered(1, 105, 6000), l.delivered(2, 106, 6000)]).toEqual([2, 1]);
    expect(l.counters).toMatchObject({ delivered: 3, redelivered: 1 });
    expect(l.returned([1], [102])).toBe(0); // an old delivery id: nothing
  });
});

