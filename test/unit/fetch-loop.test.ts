import { describe, expect, it } from "vitest";
import { FetchLoop } from "../../objects/session/fetch-loop";
import { Subscription } from "../../objects/session/subscription";
import type { DeliverResult } from "../../objects/partition/rpc";

const topic = { topicId: 1, name: "t", partitionCount: 2, incarnation: 1, dlq: false, createdAt: 0 };
const tick = () => new Promise((r) => setTimeout(r, 0));

/** A FetchLoop whose deliver calls wait until the test answers them. */
function harness(sub: Subscription) {
  const calls: { partition: number; epoch: number; answer: (r: DeliverResult) => void }[] = [];
  const pushed: Uint8Array[] = [];
  const loop = new FetchLoop({
    deliver: (_s, partition, req) => new Promise((answer) => calls.push({ partition, epoch: req.ownershipEpoch, answer })),
    push: (_s, frames) => pushed.push(frames),
    answerPull: () => {},
    open: () => true,
  });
  return { loop, calls, pushed };
}

const records = (seqs: number[], size: number): DeliverResult => ({
  code: 0, frames: Uint8Array.of(1), sequences: Float64Array.from(seqs), deliveryIds: Float64Array.from(seqs, (s) => 1000 + s),
  sizes: Uint32Array.from(seqs, () => size), blockedBytes: 0,
});

describe("FetchLoop", () => {
  it("records answered after the partition was released are neither pushed nor counted against the window", async () => {
    const sub = new Subscription(1, "g", topic, false, 1, 0);
    const { loop, calls, pushed } = harness(sub);
    sub.assign(0, 1);
    loop.schedule(sub);
    await tick();
    expect(calls.map((c) => [c.partition, c.epoch])).toEqual([[0, 1]]);
    // REVOKE, and its CONTROL_ACK completes before the deliver call answers.
    sub.revoke(0, 1);
    sub.release(0, 1);
    calls[0]!.answer(records([1], 10));
    await tick();
    expect(pushed).toEqual([]);
    expect(sub.credit.outstanding).toEqual({ count: 0, bytes: 0 });
    // Assigned again (newer epoch): the whole window (1) is there for it.
    sub.assign(0, 3);
    loop.schedule(sub);
    await tick();
    expect(calls.slice(1).map((c) => [c.partition, c.epoch])).toEqual([[0, 3]]);
  });

  it("records of an older ownership epoch answered after a newer ASSIGN are not pushed", async () => {
    const sub = new Subscription(1, "g", topic, false, 0, 0);
    const { loop, calls, pushed } = harness(sub);
    sub.assign(0, 1);
    loop.schedule(sub);
    await tick();
    sub.assign(0, 2); // forced revoke, then the same member got the partition back
    calls[0]!.answer(records([1, 2], 10));
    await tick();
    expect(pushed).toEqual([]);
    expect(sub.credit.outstanding).toEqual({ count: 0, bytes: 0 });
    expect(calls.slice(1).map((c) => [c.partition, c.epoch])).toEqual([[0, 2]]);
  });

  it("carried deliveries are taken whole when the window has room and the epoch holds; else none, and the partition is asked again", async () => {
    const sub = new Subscription(1, "g", topic, false, 3, 0);
    const { loop, calls, pushed } = harness(sub);
    sub.assign(0, 1);
    loop.schedule(sub);
    await tick();
    calls[0]!.answer({ ...records([1], 10), drained: true }); // all there was: parked, nothing asked again
    await tick();
    expect([calls.length, pushed.length]).toEqual([1, 1]);
    expect(loop.carried(sub, 0, 1, { ...records([2], 10), drained: true })).toBe(true);
    await tick();
    expect([calls.length, pushed.length, sub.credit.outstanding.count]).toEqual([1, 2, 2]);
    // Two more do not fit a window of 3 with 2 outstanding: none is taken, the partition is asked with what is free.
    expect(loop.carried(sub, 0, 1, records([3, 4], 10))).toBe(false);
    await tick();
    expect([pushed.length, sub.credit.outstanding.count]).toEqual([2, 2]);
    expect(calls.slice(1).map((c) => [c.partition, c.epoch])).toEqual([[0, 1]]);
    // An older epoch's are never taken.
    expect(loop.carried(sub, 0, 0, records([3], 10))).toBe(false);
  });
});
