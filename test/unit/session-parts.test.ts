import { describe, expect, it, vi } from "vitest";
import { ErrorCode } from "../../wire/mortar";
import { ResponseQueue } from "../../objects/session/responses";
import { CallTimeoutError, faultOf, withDeadline } from "../../objects/session/faults";
import { TopicCache, TOPIC_CACHE_TTL_MS } from "../../objects/session/topic-cache";
import { choosePair, pairOf, sourceTopicId, twinTopicId, isTwinId } from "../../objects/registry/topics";

const b = (...xs: number[]) => new Uint8Array(xs);

describe("ResponseQueue", () => {
  it("writes answers strictly in request order, however they complete", () => {
    const q = new ResponseQueue();
    const s1 = q.reserve(10), s2 = q.reserve(20), s3 = q.reserve(30);
    expect(q.pendingBytes).toBe(60);
    q.fill(s3, b(3));
    q.fill(s2, b(2));
    expect(q.drain().bytes).toBeNull();
    expect(q.readyBytes).toBe(2); // answers waiting behind the unanswered head
    q.fill(s1, b(1, 1));
    expect([...q.drain().bytes!]).toEqual([1, 1, 2, 3]);
    expect(q.pending).toBe(0);
    expect(q.pendingBytes).toBe(0);
    expect(q.readyBytes).toBe(0);
  });

  it("stops after a closing slot and never writes past it", () => {
    const q = new ResponseQueue();
    const a = q.reserve(1), c = q.reserve(1), d = q.reserve(1);
    q.fill(d, b(9));
    q.fill(c, b(8), { code: 1002, reason: "X" });
    q.fill(a, b(7));
    const r = q.drain();
    expect([...r.bytes!]).toEqual([7, 8]);
    expect(r.close).toEqual({ code: 1002, reason: "X" });
    expect(q.drain()).toEqual({ bytes: null, close: null, written: [] });
  });

  it("ignores a second answer for the same slot (a late reply after a timeout)", () => {
    const q = new ResponseQueue();
    const a = q.reserve(5);
    q.fill(a, b(1));
    q.fill(a, b(2));
    expect([...q.drain().bytes!]).toEqual([1]);
    q.fill(a, b(3));
    expect(q.drain().bytes).toBeNull();
    expect(q.isPending(a)).toBe(false);
  });

  it("keeps slot ids valid across compaction", () => {
    const q = new ResponseQueue();
    for (let i = 0; i < 5000; i++) {
      const s = q.reserve(1);
      q.fill(s, b(i & 0xff));
      expect(q.drain().bytes![0]).toBe(i & 0xff);
    }
    const s = q.reserve(1);
    expect(q.isPending(s)).toBe(true);
  });
});

describe("platform faults", () => {
  it("maps overloaded / retryable / timeout / other onto the registry", () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(faultOf(Object.assign(new Error("x"), { overloaded: true })).code).toBe(ErrorCode.BACKPRESSURE);
    expect(faultOf(Object.assign(new Error("x"), { retryable: true })).code).toBe(ErrorCode.LEADER_CHANGED);
    expect(faultOf(new CallTimeoutError(5)).code).toBe(ErrorCode.ELECTION_TIMEOUT);
    expect(faultOf(new Error("boom")).code).toBe(ErrorCode.INTERNAL_ERROR);
    logged.mockClear();
    expect(faultOf("weird").message).toMatch(/^internal error \(ref [0-9a-f]{8}\); the broker logged the details$/); // the text stays in the log
    expect(logged.mock.calls[0]![0]).toMatch(/: internal error \(ref [0-9a-f]{8}\): weird$/);
    logged.mockRestore();
    warned.mockRestore();
  });
  it("withDeadline rejects a call that does not answer in time and passes answers through", async () => {
    await expect(withDeadline(new Promise(() => {}), 20)).rejects.toBeInstanceOf(CallTimeoutError);
    await expect(withDeadline(Promise.resolve(7), 1000)).resolves.toBe(7);
  });
});

describe("TopicCache", () => {
  const topic = (topicId: number, incarnation = 1) => ({ topicId, name: "t", partitionCount: 2, incarnation, dlq: false, createdAt: 0 });
  it("trusts an entry for the TTL only", () => {
    const c = new TopicCache();
    c.put(topic(1), 1000);
    expect(c.fresh(1, 1000 + TOPIC_CACHE_TTL_MS - 1)?.topicId).toBe(1);
    expect(c.fresh(1, 1000 + TOPIC_CACHE_TTL_MS)).toBeUndefined();
  });
  it("forgets a topic and its twin together", () => {
    const c = new TopicCache();
    c.put(topic(3), 0);
    c.put({ ...topic(4), dlq: true }, 0);
    c.forgetPair(4);
    expect(c.fresh(3, 1)).toBeUndefined();
    expect(c.fresh(4, 1)).toBeUndefined();
  });
});

describe("topic id pairs", () => {
  it("source odd, twin even, pair = ceil(id / 2)", () => {
    expect([sourceTopicId(1), twinTopicId(1), sourceTopicId(32767), twinTopicId(32767)]).toEqual([1, 2, 65533, 65534]);
    expect([pairOf(1), pairOf(2), pairOf(65534), pairOf(0), pairOf(65535)]).toEqual([1, 1, 32767, 0, 0]);
    expect(isTwinId(4)).toBe(true);
  });
  it("hands out fresh pairs first, then the lowest free one, then none", () => {
    expect(choosePair(5, () => [1, 2, 3, 4], 10)).toBe(5);
    expect(choosePair(11, () => [1, 2, 4, 5, 6, 7, 8, 9, 10], 10)).toBe(3);
    expect(choosePair(11, () => [2, 3, 4, 5, 6, 7, 8, 9, 10], 10)).toBe(1);
    expect(choosePair(11, () => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 10)).toBe(0);
  });
});
