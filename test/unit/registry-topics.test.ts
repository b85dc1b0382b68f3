import { describe, expect, it } from "vitest";
import { purgePage, topicInfo } from "../../objects/registry/topics";

describe("registry topics (pure)", () => {
  it("a stored topic's source and twin views", () => {
    const t = { name: "orders", pair: 3, partitions: 4, incarnation: 7, createdAt: 1_700_000_000_000, locationHint: null };
    expect(topicInfo(t, false)).toEqual({ topicId: 5, name: "orders", partitionCount: 4, incarnation: 7, dlq: false, createdAt: 1_700_000_000_000 });
    expect(topicInfo(t, true)).toEqual({ topicId: 6, name: "orders.dlq", partitionCount: 4, incarnation: 7, dlq: true, createdAt: 1_700_000_000_000 });
  });

  it("a topic created with a location hint: source and twin both carry it", () => {
    const t = { name: "orders", pair: 3, partitions: 4, incarnation: 7, createdAt: 1_700_000_000_000, locationHint: "weur" as const };
    expect(topicInfo(t, false).locationHint).toBe("weur");
    expect(topicInfo(t, true).locationHint).toBe("weur");
  });

  it("purges registered partitions page by page; a short page ends the job", () => {
    const registered = [0, 3, 9, 12, 40];
    const asked: number[] = [];
    const take = (limit: number) => {
      asked.push(limit);
      return registered.splice(0, limit);
    };
    expect(purgePage({ partitions: 64, next: 0 }, false, take, 2)).toEqual({ partitions: [0, 3], done: false });
    expect(purgePage({ partitions: 64, next: 0 }, false, take, 2)).toEqual({ partitions: [9, 12], done: false });
    expect(purgePage({ partitions: 64, next: 0 }, false, take, 2)).toEqual({ partitions: [40], done: true });
    expect(purgePage({ partitions: 64, next: 0 }, false, take, 2)).toEqual({ partitions: [], done: true });
    expect(asked).toEqual([2, 2, 2, 2]);
  });

  it("purges a topic from before registration by full fan-out: every index, in order, until the last", () => {
    const never = () => {
      throw new Error("a full fan-out does not read registrations");
    };
    expect(purgePage({ partitions: 5, next: 0 }, true, never, 2)).toEqual({ partitions: [0, 1], done: false });
    expect(purgePage({ partitions: 5, next: 2 }, true, never, 2)).toEqual({ partitions: [2, 3], done: false });
    expect(purgePage({ partitions: 5, next: 4 }, true, never, 2)).toEqual({ partitions: [4], done: true });
    // an exact multiple of the page ends with the page that reaches the last partition
    expect(purgePage({ partitions: 4, next: 2 }, true, never, 2)).toEqual({ partitions: [2, 3], done: true });
  });
});
