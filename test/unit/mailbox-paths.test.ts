/** The Mailbox's pure send path (send-path.ts) and read path (read-path.ts). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Lane, Mq9SendOptions } from "../../wire/mq9";
import { isPlain, newMessage, planSendWrites } from "../../objects/mailbox/send-path";
import { readBatch, startId } from "../../objects/mailbox/read-path";

const opts = (o: Partial<Mq9SendOptions> = {}): Mq9SendOptions => ({
  key: null, delaySec: 0, ttlSec: 0, tags: [], priority: "normal", replyTo: null, correlationId: null, ...o,
});
const P = opts();
const K = opts({ key: "k" });
const D = opts({ delaySec: 5 });

describe("send path", () => {
  it("stores a SEND with its lane, TTL from send time, and conversation headers", () => {
    const m = newMessage(opts({ priority: "critical", ttlSec: 3, tags: ["a"], replyTo: "r.1", correlationId: "c" }), new Uint8Array([1]), 1_000);
    expect(m).toEqual({ lane: 0, key: null, tags: ["a"], payload: new Uint8Array([1]), sentMs: 1_000, expiresMs: 4_000, replyTo: "r.1", correlationId: "c" });
    expect(newMessage(opts({ ttlSec: 0 }), new Uint8Array(), 5).expiresMs).toBeNull();
    expect(newMessage({ ...opts(), replyTo: undefined, correlationId: undefined } as unknown as Mq9SendOptions, new Uint8Array(), 5).replyTo).toBeNull();
  });

  it("a plain SEND has no delay (a keyed one is plain: compaction happens inside the segment write)", () => {
    expect([isPlain(P), isPlain(K), isPlain(D)]).toEqual([true, true, false]);
  });

  it("writes runs of two or more plain SENDs together, every other SEND alone, in order", () => {
    expect(planSendWrites([])).toEqual([]);
    expect(planSendWrites([P])).toEqual([{ kind: "one", at: 0 }]);
    expect(planSendWrites([P, P, P])).toEqual([{ kind: "plain", from: 0, to: 3 }]);
    expect(planSendWrites([P, K, P, P, D, P])).toEqual([{ kind: "plain", from: 0, to: 4 }, { kind: "one", at: 4 }, { kind: "one", at: 5 }]);
    expect(planSendWrites([P, D, K, D, P])).toEqual([
      { kind: "one", at: 0 }, { kind: "one", at: 1 }, { kind: "one", at: 2 }, { kind: "one", at: 3 }, { kind: "one", at: 4 },
    ]);
  });

  it("covers every SEND exactly once, in order (property)", () => {
    fc.assert(fc.property(fc.array(fc.constantFrom(P, K, D), { maxLength: 40 }), (sends) => {
      const covered = planSendWrites(sends).flatMap((w) => (w.kind === "one" ? [w.at] : Array.from({ length: w.to - w.from }, (_, i) => w.from + i)));
      expect(covered).toEqual(sends.map((_, i) => i));
      for (const w of planSendWrites(sends)) if (w.kind === "plain") expect(w.to - w.from).toBeGreaterThanOrEqual(2);
    }));
  });
});

describe("read path", () => {
  it("starts a FETCH where its deliver policy says", () => {
    const at = (ms: number) => (ms <= 5_000 ? 7 : null);
    expect(startId({ kind: "latest" }, 42, at)).toBe(42);
    expect(startId({ kind: "earliest" }, 42, at)).toBe(0);
    expect(startId({ kind: "from_id", fromId: 9 }, 42, at)).toBe(9);
    expect(startId({ kind: "from_time", fromTimeSec: 5 }, 42, at)).toBe(7);
    expect(startId({ kind: "from_time", fromTimeSec: 6 }, 42, at)).toBe(42); // nothing stored since: the next id
  });

  type M = { msgId: number; lane: Lane; size: number };
  const lanes: M[][] = [
    [{ msgId: 3, lane: 0, size: 10 }],
    [{ msgId: 1, lane: 1, size: 10 }, { msgId: 4, lane: 1, size: 10 }],
    [{ msgId: 0, lane: 2, size: 10 }, { msgId: 2, lane: 2, size: 10 }, { msgId: 5, lane: 2, size: 10 }],
  ];
  const reads: Lane[] = [];
  const readLane = (lane: Lane, floor: number, max: number) => {
    reads.push(lane);
    return lanes[lane]!.filter((m) => m.msgId >= floor).slice(0, max);
  };
  const tops = [3, 4, 5];

  it("takes lanes in priority order, FIFO inside each, up to the limit", () => {
    expect(readBatch([0, 0, 0], 10, Infinity, tops, readLane).map((m) => m.msgId)).toEqual([3, 1, 4, 0, 2, 5]);
    expect(readBatch([0, 0, 0], 2, Infinity, tops, readLane).map((m) => m.msgId)).toEqual([3, 1]);
    expect(readBatch([4, 2, 1], 10, Infinity, tops, readLane).map((m) => m.msgId)).toEqual([4, 2, 5]);
  });

  it("stops at the byte budget but always takes the first message", () => {
    expect(readBatch([0, 0, 0], 10, 25, tops, readLane).map((m) => m.msgId)).toEqual([3, 1]);
    expect(readBatch([0, 0, 0], 10, 1, tops, readLane).map((m) => m.msgId)).toEqual([3]);
  });

  it("does not read a lane whose floor is above its highest stored msg_id", () => {
    reads.length = 0;
    expect(readBatch([4, 5, 0], 10, Infinity, tops, readLane).map((m) => m.msgId)).toEqual([0, 2, 5]);
    expect(reads).toEqual([2]);
  });
});
