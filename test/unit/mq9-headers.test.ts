import { describe, expect, it } from "vitest";
import { compareDelivery, laneOf, parseMq9Headers, PRIORITIES, priorityOfLane, sendMetadataBytes } from "../../wire/mq9";

const h = (o: Record<string, string>) => new Map(Object.entries(o));

describe("parseMq9Headers", () => {
  it("without mq9 headers: the one shared default options, frozen; with any: a fresh object", () => {
    const a = parseMq9Headers([["content-type", "text/plain"]]);
    expect(parseMq9Headers([])).toBe(a);
    expect(Object.isFrozen(a) && Object.isFrozen(a.tags)).toBe(true);
    expect(() => a.tags.push("x")).toThrow();
    const b = parseMq9Headers([["mq9-tags", "x"]]);
    expect(b).not.toBe(a);
    expect(b.tags).toEqual(["x"]);
    expect(a.tags).toEqual([]);
  });

  it("defaults", () => {
    expect(parseMq9Headers(h({}))).toEqual({ key: null, delaySec: 0, ttlSec: 0, tags: [], priority: "normal", replyTo: null, correlationId: null });
  });
  it("reads every header, names case-insensitive, values trimmed", () => {
    const o = parseMq9Headers(h({ "MQ9-Key": " status ", "Mq9-Delay": "5", "mq9-TTL": "60", "mq9-tags": "billing, vip,,billing", "MQ9-PRIORITY": "urgent", "content-type": "x" }));
    expect(o).toEqual({ key: "status", delaySec: 5, ttlSec: 60, tags: ["billing", "vip"], priority: "urgent", replyTo: null, correlationId: null });
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

describe("conversation headers (mq9-reply-to, mq9-correlation-id)", () => {
  it("reads both, names case-insensitive, values trimmed", () => {
    const o = parseMq9Headers(h({ "MQ9-Reply-To": " agent.a.inbox ", "mq9-Correlation-ID": " req-7 f00 " }));
    expect(o).toMatchObject({ replyTo: "agent.a.inbox", correlationId: "req-7 f00" });
  });
  it("accepts a correlation id of exactly 128 printable bytes, every printable character", () => {
    const printable = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join("");
    expect(parseMq9Headers(h({ "mq9-correlation-id": printable })).correlationId).toBe(printable);
    expect(parseMq9Headers(h({ "mq9-correlation-id": "x".repeat(128) })).correlationId).toHaveLength(128);
  });
  it.each([
    [{ "mq9-reply-to": "Agent.Inbox" }, 'invalid mq9-reply-to "Agent.Inbox": contains upper-case "A" (addresses are lower case) (it must be a mail_address)'],
    [{ "mq9-reply-to": "" }, 'invalid mq9-reply-to "": must not be empty (it must be a mail_address)'],
    [{ "mq9-reply-to": "a..b" }, 'invalid mq9-reply-to "a..b": contains ".." (it must be a mail_address)'],
    [{ "mq9-reply-to": "mq9://broker/a.b" }, 'invalid mq9-reply-to "mq9://broker/a.b": contains ":" (allowed: a-z, 0-9 and ".") (it must be a mail_address)'],
    [{ "mq9-correlation-id": "" }, 'invalid mq9-correlation-id "": must not be empty'],
    [{ "mq9-correlation-id": "x".repeat(129) }, "longer than 128 bytes"],
    [{ "mq9-correlation-id": "a\tb" }, 'invalid mq9-correlation-id "a\tb": contains control character 0x09 (allowed: printable ASCII, 0x20–0x7E)'],
    [{ "mq9-correlation-id": "naïve" }, 'contains non-ASCII "ï"'],
    [{ "mq9-correlation-id": "id-😀" }, 'contains non-ASCII "😀"'],
  ])("rejects %j", (headers, message) => {
    expect(() => parseMq9Headers(h(headers))).toThrow(message);
  });
  it("an over-long value is quoted cut to 128 characters", () => {
    let error = "";
    try {
      parseMq9Headers(h({ "mq9-reply-to": "a".repeat(5000) }));
    } catch (e) {
      error = (e as Error).message;
    }
    expect(error).toBe(`invalid mq9-reply-to "${"a".repeat(128)}…": longer than 128 characters (it must be a mail_address)`);
  });
  it("counts both in the stored metadata bytes", () => {
    const o = parseMq9Headers(h({ "mq9-reply-to": "agent.a.inbox", "mq9-correlation-id": "req-1", "mq9-key": "k" }));
    expect(sendMetadataBytes(o)).toBe(1 + "agent.a.inbox".length + "req-1".length);
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
