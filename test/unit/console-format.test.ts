import { describe, expect, it } from "vitest";
import { bytes, duration, retention } from "../../console/format";
import { topicRow } from "../../objects/registry/topic-row";
import type { TopicInfo } from "../../objects/registry/rpc";

describe("console formatting", () => {
  it("writes durations in their largest unit", () => {
    expect(duration(604_800_000)).toBe("7 d");
    expect(duration(5_400_000)).toBe("1.5 h");
    expect(duration(1500)).toBe("1.5 s");
    expect(duration(250)).toBe("250 ms");
  });

  it("writes retention settings in words", () => {
    expect(retention(null)).toBe("keep all");
    expect(retention({ ms: 0, bytes: 0, messages: 0, discard: "old" })).toBe("keep all");
    expect(retention({ ms: 604_800_000, bytes: 0, messages: 0, discard: "old" })).toBe("7 d");
    expect(retention({ ms: 0, bytes: 2 * 1024 ** 3, messages: 1_000_000, discard: "new" })).toBe("2.0 GiB, 1,000,000 records, discard new");
    expect(bytes(1536)).toBe("1.5 KiB");
  });
});

describe("topic rows (GET /v0/topics)", () => {
  const topic: TopicInfo = {
    name: "orders", topicId: 1, incarnation: 1, partitionCount: 2, dlq: false, createdAt: 0,
    retention: { ms: 0, bytes: 4096, messages: 0, discard: "old" },
  } as TopicInfo;

  it("counts retained records and lag from the first retained sequence", () => {
    const row = topicRow(topic, [
      // partition 0: sequences 41..50 retained, the group settled up to 10 (below the log start)
      { firstSequence: 41, highWatermark: 50, sizeBytes: 100, producers: 0, groups: [{ group: "g", committedFloor: 10, inFlight: 0, retentionSkipped: 30 }] },
      // partition 1: 1..5 retained, the group has no position here
      { firstSequence: 1, highWatermark: 5, sizeBytes: 50, producers: 0, groups: [] },
    ]);
    expect(row.records).toBe(15);
    expect(row.lag).toBe(10 + 5);
    expect(row.size_bytes).toBe(150);
    expect(row.retention).toEqual({ ms: 0, bytes: 4096, messages: 0, discard: "old" });
  });
});
