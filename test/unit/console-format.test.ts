import { describe, expect, it } from "vitest";
import { bytes, duration, plural, preview, retention, topicsSummary } from "../../console/format";
import { pushStatus } from "../../console/push-status";
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

describe("counted nouns, shortened text, the topic count, the push status (issue 28)", () => {
  it("gives a noun the number of its count", () => {
    expect(plural(0, "message")).toBe("0 messages");
    expect(plural(1, "message")).toBe("1 message");
    expect(plural(1200, "message")).toBe("1,200 messages");
    expect(plural(2, "child", "children")).toBe("2 children");
  });

  it("shortens only what is longer than the limit, never inside a surrogate pair", () => {
    expect(preview("abc", 3)).toBeNull();
    expect(preview("abcd", 3)).toBe("abc");
    expect(preview("ab😀cd", 3)).toBe("ab"); // 😀 is two UTF-16 units: cut before it
  });

  it("counts the topics and the twins listed with them", () => {
    expect(topicsSummary(0, "beta")).toBe("0 topics in tenant beta");
    expect(topicsSummary(1, "acme")).toBe("1 topic in tenant acme, and its dead-letter (.dlq) twin: 2 listed in all");
    expect(topicsSummary(3, "acme")).toBe("3 topics in tenant acme, and their 3 dead-letter (.dlq) twins: 6 listed in all");
  });

  it("shows a push subscription's last error only while the latest outcome is a failure", () => {
    const p = { state: "active" as const, last_error: "", last_success_time: null, last_failure_time: null };
    expect(pushStatus(p)).toBe("active");
    expect(pushStatus({ ...p, state: "retrying", last_error: "HTTP 500", last_failure_time: 100 })).toBe("retrying: HTTP 500");
    expect(pushStatus({ ...p, last_error: "HTTP 500", last_failure_time: 100, last_success_time: 105 })).toBe("active"); // recovered
    expect(pushStatus({ ...p, last_error: "HTTP 500", last_failure_time: 110, last_success_time: 105 })).toBe("active: HTTP 500"); // failed since (dead-lettered)
    expect(pushStatus({ ...p, state: "retrying", last_error: "HTTP 500", last_failure_time: 105, last_success_time: 105 })).toBe("retrying: HTTP 500");
    expect(pushStatus({ ...p, last_error: "HTTP 500", last_failure_time: 105, last_success_time: 105 })).toBe("active");
    // stored before last_failure_time existed
    expect(pushStatus({ ...p, last_error: "HTTP 500", last_success_time: 105 })).toBe("active");
    expect(pushStatus({ ...p, state: "retrying", last_error: "HTTP 500", last_success_time: 105 })).toBe("retrying: HTTP 500");
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
