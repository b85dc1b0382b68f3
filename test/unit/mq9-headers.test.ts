import { describe, expect, it } from "vitest";
import { compareDelivery, laneOf, parseMq9Headers, PRIORITIES, priorityOfLane } from "../../wire/mq9";

const h = (o: Record<string, string>) => new Map(Object.entries(o));

describe("parseMq9Headers", () => {
  it("defaults", () => {
    expect(parseMq9Headers(h({}))).toEqual({ key: null, delaySec: 0, ttlSec: 0, tags: [], priority: "normal" });
  });
  it("reads every header, names case-insensitive, values trimmed", () => {
    const o = parseMq9Headers(h({ "MQ9-Key": " status ", "Mq9-Delay": "5", "mq9-TTL": "60", "mq9-tags": "billing, vip,,billing", "MQ9-PRIORITY": "urgent", "content-type": "x" }));
    expect(o).toEqual({ key: "status", delaySec: 5, ttlSec: 60, tags: ["billing", "vip"], priority: "urgent" });
  });
  it("keeps non-ASCII UTF-8 text in keys and tags", () => {
    expect(parseMq9Headers(h({ "mq9-key": "éA", "mq9-tags": "ü, 東京" }))).toMatchObject({ key: "éA", tags: ["ü", "東京"] });
  });
  it("accepts any iterable of entries", () => {
    expect(parseMq9Headers([["Mq9-Priority", "critical"]]).priority).toBe("critical");
  });
  it.each([
    [{ "mq9-delay": "abc" }, "mq9-delay must be a whole number"],
    [{ "mq9-delay": "-1" }, "mq9-delay must be a whole number"],
    [{ "mq9-delay": "1.5" }, "mq9-delay must be a whole number"],
    [{ "mq9-ttl": "" }, "mq9-ttl must be a whole number"],
    [{ "mq9-ttl": "-5" }, "mq9-ttl must be a whole number"],
    [{ "mq9-ttl": "9999999999" }, "exceeds the maximum"],
    [{ "mq9-ttl": "5", "mq9-delay": "5" }, "must be greater than mq9-delay"],
    [{ "mq9-ttl": "3", "mq9-delay": "10" }, "must be greater than mq9-delay"],
    [{ "mq9-priority": "high" }, 'invalid mq9-priority "high"'],
    [{ "mq9-priority": "Urgent" }, "invalid mq9-priority"],
    [{ "mq9-key": "" }, "mq9-key must not be empty"],
    [{ "mq9-prio": "urgent" }, "unknown header mq9-prio"],
    [{ "mq9-key": "\uFFFDA" }, "mq9-key must be UTF-8 text: it contains bytes that are not UTF-8 (or U+FFFD)"],
    [{ "mq9-tags": "a,\uFFFD,b" }, "mq9-tags must be UTF-8 text: it contains bytes that are not UTF-8 (or U+FFFD)"],
  ])("rejects %j", (headers, message) => {
    expect(() => parseMq9Headers(h(headers))).toThrow(message);
  });
  it("rejects a header given twice under different case", () => {
    expect(() => parseMq9Headers([["mq9-key", "a"], ["MQ9-KEY", "b"]])).toThrow("more than once");
  });
  it("ttl 0 means no TTL even with a delay", () => {
    expect(parseMq9Headers(h({ "mq9-ttl": "0", "mq9-delay": "3" }))).toMatchObject({ ttlSec: 0, delaySec: 3 });
  });
});

describe("priority lanes", () => {
  it("orders critical, urgent, normal", () => {
    expect(PRIORITIES.map(laneOf)).toEqual([0, 1, 2]);
    expect(priorityOfLane(2)).toBe("normal");
    const msgs = [
      { lane: 2, msgId: 0 }, { lane: 1, msgId: 1 }, { lane: 0, msgId: 4 }, { lane: 2, msgId: 2 }, { lane: 0, msgId: 3 },
    ];
    expect([...msgs].sort(compareDelivery).map((m) => m.msgId)).toEqual([3, 4, 1, 0, 2]);
  });
});
