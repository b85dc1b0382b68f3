import { describe, expect, it } from "vitest";
import { base64ToBytes, bytesToBase64, parseAckRequest, parseCreateRequest, parseFetchRequest, parseQueryRequest } from "../../wire/mq9";

const body = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

describe("request bodies", () => {
  it("CREATE", () => {
    expect(parseCreateRequest(body({ name: "agent.translator.inbox", ttl: 0 }))).toEqual({ name: "agent.translator.inbox", ttlSec: 0 });
    expect(parseCreateRequest(new Uint8Array())).toEqual({ name: null, ttlSec: null });
    expect(() => parseCreateRequest(body({ ttl: -1 }))).toThrow("field ttl");
    expect(() => parseCreateRequest(body("{nope"))).toThrow("not valid JSON");
    expect(() => parseCreateRequest(new Uint8Array([0xff, 0xfe]))).toThrow("UTF-8");
  });
  it("FETCH defaults and clamps", () => {
    expect(parseFetchRequest(body({}))).toEqual({ group: null, deliver: { kind: "latest" }, forceDeliver: false, numMsgs: 100, maxWaitMs: 500 });
    expect(parseFetchRequest(body({ group_name: "g", deliver: "from_id", from_id: 3, force_deliver: true, config: { num_msgs: 5000, max_wait_ms: 10 ** 9 } })))
      .toEqual({ group: "g", deliver: { kind: "from_id", fromId: 3 }, forceDeliver: true, numMsgs: 1000, maxWaitMs: 30_000 });
    expect(parseFetchRequest(body({ deliver: "from_time", from_time: 1234567890 })).deliver).toEqual({ kind: "from_time", fromTimeSec: 1234567890 });
    expect(() => parseFetchRequest(body({ deliver: "from_id" }))).toThrow("needs the from_id field");
    expect(() => parseFetchRequest(body({ deliver: "newest" }))).toThrow("field deliver");
    expect(() => parseFetchRequest(body({ config: { num_msgs: 0 } }))).toThrow("field config.num_msgs");
    expect(() => parseFetchRequest(body({ group_name: "" }))).toThrow("field group_name");
  });
  it("ACK requires all fields", () => {
    expect(parseAckRequest(body({ group_name: "g", mail_address: "a", msg_id: 5 }))).toEqual({ group: "g", mailAddress: "a", msgId: 5 });
    expect(() => parseAckRequest(body({ group_name: "g", mail_address: "a" }))).toThrow("field msg_id");
  });
  it("QUERY", () => {
    expect(parseQueryRequest(body({}))).toEqual({ key: null, limit: 1000, sinceSec: null, tags: [], correlationId: null });
    expect(parseQueryRequest(body({ key: "status", limit: 10, since: 1234567890, tags: "billing, vip" })))
      .toEqual({ key: "status", limit: 10, sinceSec: 1234567890, tags: ["billing", "vip"], correlationId: null });
    expect(parseQueryRequest(body({ tags: ["vip"] })).tags).toEqual(["vip"]);
    expect(() => parseQueryRequest(body({ limit: 0 }))).toThrow("field limit");
  });
  it("QUERY correlation_id (conversation extension): validated like the mq9-correlation-id header", () => {
    expect(parseQueryRequest(body({ correlation_id: "req-1" })).correlationId).toBe("req-1");
    expect(parseQueryRequest(body({ correlation_id: null })).correlationId).toBeNull();
    expect(() => parseQueryRequest(body({ correlation_id: "" }))).toThrow('invalid request field correlation_id "": must not be empty');
    expect(() => parseQueryRequest(body({ correlation_id: "é" }))).toThrow('invalid request field correlation_id "é": contains non-ASCII "é" (allowed: printable ASCII, 0x20–0x7E)');
    expect(() => parseQueryRequest(body({ correlation_id: 7 }))).toThrow(/^invalid request field correlation_id: /);
  });
});

describe("base64", () => {
  it("round-trips every byte value and large buffers", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(base64ToBytes(bytesToBase64(all))).toEqual(all);
    const big = new Uint8Array(200_000).map((_, i) => (i * 31) & 0xff);
    const back = base64ToBytes(bytesToBase64(big));
    expect(back.length).toBe(big.length);
    expect(back.every((b, i) => b === big[i])).toBe(true);
    expect(bytesToBase64(new TextEncoder().encode("hello"))).toBe("aGVsbG8=");
    expect(bytesToBase64(new Uint8Array())).toBe("");
  });
});

describe("range errors name the real limits", () => {
  const errorOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error("did not throw");
  };

  it("ttl: 2^64 and 315360001 name the 10-year maximum, not the float-safety bound", () => {
    for (const ttl of [2 ** 64, 315_360_001, -1, 1.5]) {
      const msg = errorOf(() => parseCreateRequest(body({ ttl })));
      expect(msg, String(ttl)).toBe("invalid request field ttl: must be a whole number of seconds from 0 to 315360000");
    }
    expect(errorOf(() => parseCreateRequest(body(`{"ttl":18446744073709551616}`)))).not.toContain("9007199254740991");
    expect(parseCreateRequest(body({ ttl: 315_360_000 })).ttlSec).toBe(315_360_000);
  });

  it("clamped fields accept any whole number; ids and times name their exact-integer range", () => {
    const f = parseFetchRequest(body({ config: { num_msgs: 2 ** 64, max_wait_ms: 2 ** 64 } }));
    expect([f.numMsgs, f.maxWaitMs]).toEqual([1000, 30_000]);
    expect(parseQueryRequest(body({ limit: 2 ** 64 })).limit).toBe(1000);
    expect(errorOf(() => parseFetchRequest(body({ config: { num_msgs: 0 } })))).toBe("invalid request field config.num_msgs: must be a whole number ≥ 1");
    expect(errorOf(() => parseAckRequest(body({ group_name: "g", mail_address: "a", msg_id: 2 ** 64 })))).toBe(
      "invalid request field msg_id: must be a whole number from 0 to 9007199254740991",
    );
    expect(errorOf(() => parseQueryRequest(body({ since: -5 })))).toBe("invalid request field since: must be a whole number of unix seconds from 0 to 9007199254740991");
    expect(errorOf(() => parseAckRequest(body({ group_name: "g", mail_address: "a", msg_id: "3" })))).toContain("field msg_id: must be a whole number");
  });
});
