import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  DEFAULT_CREDIT_BYTES, DEFAULT_CREDIT_COUNT, DeadLetterReason, ErrorCode,
  decodeDeadLetter, encodeDeadLetter,
} from "../../wire/mortar";
import { DeliveryState, GroupLedger } from "../../objects/partition/ledger";
import { SettleKind } from "../../objects/partition/rpc";
import { CreditWindow, planFetches, splitShares } from "../../objects/session/credit";

const owner = { sessionId: "s1", subscriptionId: 1, memberId: 7 };
const limits = { ackWaitMs: 1000, maxAttempts: 3 };

function ledger(): GroupLedger {
  const l = new GroupLedger(1, "g", 1);
  l.assign(1, owner);
  return l;
}

describe("GroupLedger", () => {
  it("the ack floor is the lowest unsettled sequence; acks above it are remembered by absence", () => {
    const l = ledger();
    for (let s = 1; s <= 5; s++) l.delivered(s, 100 + s, 1000);
    expect([l.ackFloor(), l.next]).toEqual([1, 6]);
    for (const s of [2, 3, 5]) expect(l.settle(SettleKind.ACK, s, 100 + s, 1, owner, 0, limits)).toBe(0);
    expect(l.ackFloor()).toBe(1);
    expect(l.settle(SettleKind.ACK, 1, 101, 1, owner, 0, limits)).toBe(0);
    expect(l.ackFloor()).toBe(4);
    expect(l.settle(SettleKind.ACK, 4, 104, 1, owner, 0, limits)).toBe(0);
    expect([l.ackFloor(), l.pending.size, l.counters.acked]).toEqual([6, 0, 5]);
  });

  it("fences: older epoch → STALE_OWNERSHIP_EPOCH, another subscription → NOT_OWNER, unknown delivery → UNKNOWN_DELIVERY; nothing changes", () => {
    const l = ledger();
    l.delivered(1, 11, 1000);
    expect(l.assign(2, { ...owner, subscriptionId: 2 })).toBe(true);
    expect(l.pending.get(1)!.state).toBe(DeliveryState.RETRY); // the old owner's delivery goes up for redelivery
    expect(l.settle(SettleKind.ACK, 1, 11, 1, owner, 0, limits)).toBe(ErrorCode.STALE_OWNERSHIP_EPOCH);
    expect(l.settle(SettleKind.ACK, 1, 11, 2, owner, 0, limits)).toBe(ErrorCode.NOT_OWNER);
    expect(l.settle(SettleKind.ACK, 1, 11, 3, { ...owner, subscriptionId: 2 }, 0, limits)).toBe(ErrorCode.NOT_OWNER);
    expect(l.settle(SettleKind.ACK, 1, 11, 2, { ...owner, subscriptionId: 2 }, 0, limits)).toBe(ErrorCode.UNKNOWN_DELIVERY);
    expect(l.assign(1, owner)).toBe(false);
    expect(l.ownershipEpoch).toBe(2);
    expect(l.delivered(1, 12, 2000)).toBe(2);
    expect(l.settle(SettleKind.ACK, 1, 11, 2, { ...owner, subscriptionId: 2 }, 0, limits)).toBe(ErrorCode.UNKNOWN_DELIVERY);
    expect(l.settle(SettleKind.ACK, 1, 12, 2, { ...owner, subscriptionId: 2 }, 0, limits)).toBe(0);
  });

  it("a fence ends in-flight attempts: redelivery below the maximum, the dead-letter twin at the last attempt; never an attempt above it", () => {
    const l = ledger();
    l.delivered(1, 1, 1000);
    l.delivered(2, 2, 1000);
    expect(l.settle(SettleKind.RETRY, 1, 1, 1, owner, 0, limits)).toBe(0);
    expect(l.delivered(1, 3, 1000)).toBe(2);
    expect(l.settle(SettleKind.RETRY, 1, 3, 1, owner, 0, limits)).toBe(0);
    expect(l.delivered(1, 4, 1000)).toBe(3); // the last attempt, in flight
    expect(l.assign(2, { ...owner, subscriptionId: 2 }, limits.maxAttempts)).toBe(true);
    expect(l.pending.get(1)).toMatchObject({ state: DeliveryState.DEAD, reason: DeadLetterReason.MAX_ATTEMPTS, attempt: 3 });
    expect(l.pending.get(2)).toMatchObject({ state: DeliveryState.RETRY, attempt: 1 });
    expect(l.retries()).toEqual([2]);
    expect(l.deadLetters(10).map((d) => d.seq)).toEqual([1]);
  });

  it("restored() repairs a delivery left waiting for redelivery after its last attempt (rows of an earlier version)", () => {
    const l = new GroupLedger(1, "g", 4, 2, owner);
    l.restore({ seq: 1, deliveryId: 9, attempt: 3, deadline: 0, state: DeliveryState.RETRY, reason: 0 });
    l.restore({ seq: 2, deliveryId: 8, attempt: 2, deadline: 0, state: DeliveryState.RETRY, reason: 0 });
    l.restore({ seq: 3, deliveryId: 7, attempt: 1, deadline: 0, state: DeliveryState.RETRY, reason: 0 });
    expect(l.restored(3)).toBe(1);
    expect(l.pending.get(1)).toMatchObject({ state: DeliveryState.DEAD, reason: DeadLetterReason.MAX_ATTEMPTS });
    expect(l.retries()).toEqual([2, 3]);
    expect([...l.dirty]).toEqual([1]);
  });

  it("PROGRESS moves the deadline; expiry redelivers until the last attempt, then dead-letters", () => {
    const l = ledger();
    l.delivered(1, 1, 1000);
    expect(l.settle(SettleKind.PROGRESS, 1, 1, 1, owner, 900, limits)).toBe(0);
    expect(l.expire(1500, 3)).toBe(0);
    expect(l.nextDeadline()).toBe(1900);
    expect(l.expire(1900, 3)).toBe(1);
    expect(l.retries()).toEqual([1]);
    expect(l.delivered(1, 2, 3000)).toBe(2);
    expect(l.settle(SettleKind.RETRY, 1, 2, 1, owner, 0, limits)).toBe(0);
    expect(l.delivered(1, 3, 4000)).toBe(3);
    expect(l.expire(4000, 3)).toBe(1);
    expect(l.pending.get(1)).toMatchObject({ state: DeliveryState.DEAD, reason: DeadLetterReason.MAX_ATTEMPTS, attempt: 3 });
    expect(l.deadLetters(10).map((d) => d.seq)).toEqual([1]);
    expect(l.ackFloor()).toBe(1);
    l.deadLettered([1]);
    expect([l.ackFloor(), l.counters.deadLettered, l.counters.redelivered]).toEqual([2, 1, 2]);
  });

  it("REJECT dead-letters at once; retries are redelivered lowest sequence first", () => {
    const l = ledger();
    for (let s = 1; s <= 4; s++) l.delivered(s, s, 1000);
    expect(l.settle(SettleKind.REJECT, 2, 2, 1, owner, 0, limits)).toBe(0);
    expect(l.pending.get(2)).toMatchObject({ state: DeliveryState.DEAD, reason: DeadLetterReason.REJECTED });
    for (const s of [4, 1, 3]) l.settle(SettleKind.RETRY, s, s, 1, owner, 0, limits);
    expect(l.retries()).toEqual([1, 3, 4]);
  });

  it("keeps floor = min(unsettled) and never loses a delivered sequence under random operations", () => {
    const op = fc.oneof(
      fc.constant({ t: "deliver" as const }),
      fc.nat({ max: 30 }).map((s) => ({ t: "ack" as const, s })),
      fc.nat({ max: 30 }).map((s) => ({ t: "nack" as const, s })),
      fc.nat({ max: 30 }).map((s) => ({ t: "reject" as const, s })),
      fc.constant({ t: "expire" as const }),
      fc.constant({ t: "fence" as const }),
      fc.constant({ t: "dlq" as const }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
      const l = ledger();
      const ids = new Map<number, number>();
      const settled = new Set<number>();
      let id = 0, now = 0, epoch = 1;
      for (const o of ops) {
        now += 100;
        if (o.t === "deliver") {
          const seq = l.retries()[0] ?? l.next;
          ids.set(seq, ++id);
          l.delivered(seq, id, now + 1000);
        } else if (o.t === "ack" || o.t === "nack" || o.t === "reject") {
          const kind = { ack: SettleKind.ACK, nack: SettleKind.RETRY, reject: SettleKind.REJECT }[o.t];
          if (l.settle(kind, o.s, ids.get(o.s) ?? -1, epoch, owner, now, limits) === 0 && o.t === "ack") settled.add(o.s);
        } else if (o.t === "expire") l.expire(now, limits.maxAttempts);
        else if (o.t === "fence") l.assign(++epoch, owner);
        else {
          const dead = l.deadLetters(100).map((d) => d.seq);
          l.deadLettered(dead);
          for (const s of dead) settled.add(s);
        }
        const pending = [...l.pending.keys()];
        expect(l.ackFloor()).toBe(pending.length ? Math.min(...pending) : l.next);
        for (let s = 1; s < l.next; s++) expect(settled.has(s) !== l.pending.has(s)).toBe(true);
      }
    }), { numRuns: 300 });
  });
});

describe("CreditWindow", () => {
  it("defaults, SET/ADD limits, outstanding accounting and the idle allowance", () => {
    const c = new CreditWindow(0, 0);
    expect([c.count, c.bytes]).toEqual([DEFAULT_CREDIT_COUNT, DEFAULT_CREDIT_BYTES]);
    expect(c.add(65535, 0)).toBe(ErrorCode.CREDIT_LIMIT_EXCEEDED);
    expect([c.count, c.epoch]).toEqual([DEFAULT_CREDIT_COUNT, 0]);
    expect(c.set(3, 100)).toBe(0);
    expect(c.idle()).toBe(true);
    c.delivered(0, 1, 11, 60);
    c.delivered(1, 1, 12, 30);
    expect(c.available()).toEqual({ count: 1, bytes: 10 });
    expect(c.idle()).toBe(false);
    c.delivered(0, 1, 13, 60); // a redelivery of the same record replaces the old one
    expect(c.outstanding).toEqual({ count: 2, bytes: 90 });
    expect(c.settled(0, 1, 11)).toBe(false); // the old delivery id returns nothing
    expect(c.settled(0, 1, 13)).toBe(true);
    expect(c.settled(0, 1, 13)).toBe(false);
    c.dropPartition(1);
    expect([c.outstanding, c.idle(), c.epoch]).toEqual([{ count: 0, bytes: 0 }, true, 1]);
  });

  it("a client's ACK/NACK returns credit only with the ownership epoch the delivery was made under", () => {
    const c = new CreditWindow(2, 1000);
    c.delivered(0, 5, 50, 10, 3);
    expect(c.settled(0, 5, 50, 2)).toBe(false); // stale epoch: the Partition fences it
    expect(c.settled(0, 5, 50, 9)).toBe(false); // never issued
    expect(c.outstanding).toEqual({ count: 1, bytes: 10 });
    expect(c.settled(0, 5, 50, 3)).toBe(true);
    c.delivered(0, 6, 60, 10, 3);
    expect(c.settled(0, 6, 60)).toBe(true); // an expiry reported by the Partition: the delivery id decides
  });

  it("plans fetches: a blocked record that fits what is free gets its size; budgets never exceed the free bytes", () => {
    // 90 B free over 3 partitions blocked at 40 B: an even share (30) fits none, two fit the total.
    expect(planFetches([40, 40, 40], 255, 90, false).map((f) => [f.index, f.bytes])).toEqual([[0, 40], [1, 40]]);
    expect(planFetches([0, 0, 0], 3, 90, false).map((f) => f.bytes)).toEqual([30, 30, 30]);
    expect(planFetches([500, 0], 2, 100, true)).toEqual([{ index: 0, count: 1, bytes: 50, oversize: true }, { index: 1, count: 1, bytes: 50, oversize: false }]);
    expect(planFetches([0, 0, 0], 1, 90, false).map((f) => [f.index, f.count, f.bytes])).toEqual([[0, 1, 90]]);
    fc.assert(fc.property(fc.array(fc.nat({ max: 200 }), { maxLength: 8 }), fc.nat({ max: 20 }), fc.integer({ min: -50, max: 400 }), fc.boolean(), (blocked, count, bytes, over) => {
      const plan = planFetches(blocked, count, bytes, over);
      expect(plan.reduce((a, f) => a + f.bytes, 0)).toBeLessThanOrEqual(Math.max(0, bytes));
      expect(plan.reduce((a, f) => a + f.count, 0)).toBeLessThanOrEqual(Math.max(0, count));
      expect(plan.filter((f) => f.oversize).length).toBeLessThanOrEqual(over ? 1 : 0);
      for (const f of plan) if (!f.oversize) expect(f.bytes).toBeGreaterThanOrEqual(blocked[f.index]!);
    }), { numRuns: 300 });
  });

  it("splits budgets into shares that never add up to more than the total", () => {
    fc.assert(fc.property(fc.nat({ max: 100_000 }), fc.integer({ min: 1, max: 50 }), (total, k) => {
      const s = splitShares(total, k);
      expect(s.reduce((a, b) => a + b, 0)).toBe(total);
      expect(Math.max(...s) - Math.min(...s)).toBeLessThanOrEqual(1);
    }));
    expect(splitShares(-5, 2)).toEqual([0, 0]);
  });
});

describe("dead-letter envelope", () => {
  it("round-trips its header and the original value; anything else is not an envelope", () => {
    const value = new TextEncoder().encode("payload");
    const h = { reason: DeadLetterReason.REJECTED, topicId: 3, partition: 2, sequence: 2n ** 40n, attempts: 4, publishedAt: 1_700_000_000_000, deadLetteredAt: 1_700_000_001_000, group: "billing-é" };
    const e = encodeDeadLetter(h, value);
    expect(e.length).toBe(37 + new TextEncoder().encode(h.group).length + value.length);
    const d = decodeDeadLetter(e)!;
    expect(d.header).toEqual(h);
    expect(new TextDecoder().decode(d.value)).toBe("payload");
    expect(decodeDeadLetter(value)).toBeNull();
    expect(decodeDeadLetter(e.subarray(0, 36))).toBeNull();
    expect(() => encodeDeadLetter({ ...h, group: "x".repeat(256) }, value)).toThrow(RangeError);
  });
});
