import { describe, expect, it, vi } from "vitest";
import { ReplyBudget } from "../../objects/mailbox/batch";
import { dueAt, mailboxExpiry, messageExpiry } from "../../objects/shared/ttl";
import { RETRY_BASE_MS, RETRY_MAX_MS, earliest, retryDelayMs } from "../../objects/shared/alarm-times";
import { WaiterSet, type Waiter } from "../../objects/mailbox/waiters";

describe("schedule math", () => {
  it("picks the earliest time", () => {
    expect(earliest()).toBeNull();
    expect(earliest(null, undefined)).toBeNull();
    expect(earliest(5, null, 3, 9)).toBe(3);
  });
  it("retries a failed alarm part after a delay that doubles per failure in a row, up to a cap", () => {
    expect(retryDelayMs(1)).toBe(RETRY_BASE_MS);
    expect(retryDelayMs(2)).toBe(2 * RETRY_BASE_MS);
    expect(retryDelayMs(4)).toBe(8 * RETRY_BASE_MS);
    expect(retryDelayMs(40)).toBe(RETRY_MAX_MS);
    expect(retryDelayMs(1_000)).toBe(RETRY_MAX_MS);
  });
  it("counts TTLs and delays in seconds from the given time", () => {
    expect(dueAt(1_000, 5)).toBe(6_000);
    expect(messageExpiry(1_000, 0)).toBeNull();
    expect(messageExpiry(1_000, 300)).toBe(301_000);
    expect(mailboxExpiry(0, 0)).toBeNull();
    expect(mailboxExpiry(10, 1)).toBe(1_010);
  });
});

function waiter(deadline: number, ready: () => boolean) {
  const w: Waiter & { answered: string } = { deadline, answered: "", poll: () => false, expire: () => {}, fail: () => {} };
  w.poll = () => { if (!ready()) return false; w.answered = "poll"; return true; };
  w.expire = () => { w.answered = "expire"; };
  w.fail = (e) => { w.answered = `fail:${String(e)}`; };
  return w;
}

describe("WaiterSet", () => {
  it("wakes only waiters that can be answered", () => {
    const set = new WaiterSet();
    let ready = false;
    const a = waiter(100, () => ready);
    const b = waiter(50, () => false);
    set.add(a);
    set.add(b);
    expect(set.earliestDeadline()).toBe(50);
    set.wake();
    expect(set.size).toBe(2);
    ready = true;
    set.wake();
    expect(a.answered).toBe("poll");
    expect(set.size).toBe(1);
    set.expireDue(49);
    expect(b.answered).toBe("");
    set.expireDue(50);
    expect(b.answered).toBe("expire");
    expect(set.size).toBe(0);
    expect(set.earliestDeadline()).toBeNull();
  });
  it("fails everyone on failAll and a poll that throws", () => {
    const set = new WaiterSet();
    const a = waiter(1, () => { throw new Error("boom"); });
    const b = waiter(2, () => false);
    set.add(a);
    set.add(b);
    set.wake();
    expect(a.answered).toBe("fail:Error: boom");
    set.failAll("gone");
    expect(b.answered).toBe("fail:gone");
    expect(set.size).toBe(0);
    const spy = vi.fn();
    set.failAll(spy);
    expect(spy).not.toHaveBeenCalled();
  });
});

describe("ReplyBudget", () => {
  it("stops at the message limit", () => {
    const b = new ReplyBudget(2, 1000);
    expect([b.admit(1), b.admit(1), b.admit(1)]).toEqual([true, true, false]);
    expect(b.full).toBe(true);
  });
  it("stops at the byte budget but always admits the first message", () => {
    const b = new ReplyBudget(10, 100);
    expect(b.admit(500)).toBe(true);
    expect(b.admit(1)).toBe(false);
    const c = new ReplyBudget(10, 100);
    expect([c.admit(60), c.admit(40), c.admit(1)]).toEqual([true, true, false]);
    expect(c.admitted).toBe(2);
  });
});
