import { describe, expect, it } from "vitest";
import { WaiterSet, type Waiter } from "../../objects/mailbox/waiters";

function waiter(id: string | null, deadline: number, log: string[]): Waiter {
  return { id, deadline, poll: () => false, expire: () => log.push(`expire ${id}`), fail: () => log.push(`fail ${id}`) };
}

describe("WaiterSet.cancel", () => {
  it("releases one held FETCH by id at once, answering it; unknown or answered ids are false", () => {
    const log: string[] = [];
    const set = new WaiterSet();
    set.add(waiter("a", 100, log));
    set.add(waiter("b", 50, log));
    set.add(waiter(null, 200, log));
    expect(set.cancel("b")).toBe(true);
    expect(log).toEqual(["expire b"]);
    expect(set.size).toBe(2);
    expect(set.earliestDeadline()).toBe(100);
    expect(set.cancel("b")).toBe(false);
    expect(set.cancel("zzz")).toBe(false);
    set.expireDue(150); // "a" answered by its deadline: no longer cancellable
    expect(set.cancel("a")).toBe(false);
    expect(log).toEqual(["expire b", "expire a"]);
    set.failAll(new Error("gone"));
    expect(set.size).toBe(0);
  });
});
