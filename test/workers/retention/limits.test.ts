/**
 * Retention by size (per partition): retention_bytes and retention_messages
 * with discard = old (exactly the newest N records stay visible; the
 * oldest segments go once wholly below the log start, or while the rest
 * still holds retention_bytes) and discard =
 * new (PARTITION_FULL), and what consumer groups see: a group below the
 * first retained sequence continues there with the skip counted, deleted
 * in-flight deliveries give their credit back and their ACK answers
 * UNKNOWN_DELIVERY. Topics here set retention_ms 0 (no age limit).
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op, type Frame } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { expectErr, expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, text, type Sub } from "../helpers/peer";
import { until } from "../../fixtures/until";
import { declareRetention, infoOf, metric, partitionOf, statsOf, topicOf, unique } from "./helpers";

const FULL_TEXT = "the partition is at its topic's retention limit (retention_bytes or retention_messages) and the topic refuses new messages (discard new); nothing was appended: raise the limit or alter discard to old";
const value = (i: number) => `m${String(i).padStart(3, "0")}`.padEnd(100, "."); // 100 bytes

describe("retention by size, discard old", () => {
  it("retention_bytes: after each append the oldest segments go while the rest still holds the limit: retained bytes stay ≥ the limit and < the limit + one segment", async () => {
    const p = await Peer.open();
    const name = unique("bytes");
    const d = await declareRetention(p, name, 1, { ms: 0, bytes: 1000 });
    expect(d.retention).toMatchObject({ retentionMs: 0n, retentionBytes: 1000n });
    const t = await topicOf(d.topicId);
    let maxRetained = 0;
    for (let i = 1; i <= 30; i++) {
      // batches of 1..3 records (one segment each): every append past the limit deletes
      const n = (i % 3) + 1;
      p.send(Array.from({ length: n }, (_, k) => pubFrame(d.topicId, 0, value(i * 10 + k))));
      for (const a of await p.answer(n)) expectOk(a, Op.PUB);
      const info = await infoOf(t);
      maxRetained = Math.max(maxRetained, info.retainedBytes);
      expect(info.retainedBytes).toBeLessThan(1000 + 300); // over by less than one segment (≤ 3 records here)
      if (i >= 5) expect(info.retainedBytes).toBeGreaterThanOrEqual(1000); // never below the limit once written
    }
    const info = await infoOf(t);
    expect(info.retainedBytes).toBeGreaterThanOrEqual(1000);
    expect(info.firstSequence).toBe(info.lastSequence - info.records + 1);
    expect(info.firstSequence).toBeGreaterThan(40);
    const s = (await statsOf(name)).partitions[0]!;
    expect([s.first_sequence, s.high_watermark, s.size_bytes]).toEqual([info.firstSequence, info.lastSequence, info.retainedBytes]);
    // the oldest retained record is readable, the one before it is gone
    const [oldest] = await partitionOf(t).read(1, 1);
    expect(oldest!.sequence).toBe(info.firstSequence);
    p.close();
  });

  it("retention_messages: one-record segments, exactly the newest N are kept", async () => {
    const p = await Peer.open();
    const d = await declareRetention(p, unique("count"), 1, { ms: 0, messages: 10 });
    for (let i = 1; i <= 25; i++) expectOk(await p.publish(d.topicId, 0, `r${i}`), Op.PUB);
    const t = await topicOf(d.topicId);
    expect(await infoOf(t)).toMatchObject({ records: 10, firstSequence: 16, lastSequence: 25 });
    p.close();
  });

  it("a limit smaller than one batch keeps exactly the newest N of it: the log start moves inside the segment, reads and groups never see below it", async () => {
    const p = await Peer.open();
    const d = await declareRetention(p, unique("count-batch"), 1, { ms: 0, messages: 2 });
    p.send(Array.from({ length: 5 }, (_, i) => pubFrame(d.topicId, 0, `a${i}`)));
    await p.answer(5);
    const t = await topicOf(d.topicId);
    expect(await infoOf(t)).toMatchObject({ records: 2, firstSequence: 4, lastSequence: 5 });
    p.send(Array.from({ length: 4 }, (_, i) => pubFrame(d.topicId, 0, `b${i}`)));
    await p.answer(4);
    expect(await infoOf(t)).toMatchObject({ records: 2, firstSequence: 8, lastSequence: 9 });
    const read = await partitionOf(t).read(1, 10);
    expect(read.map((r) => [r.sequence, new TextDecoder().decode(r.value)])).toEqual([[8, "b2"], [9, "b3"]]);
    // a group created now starts at the log start (EARLIEST), not at the hidden records of the segment
    const c = await Peer.open();
    await c.subscribe(d.topicId, "late");
    const [asg] = await c.take(isAssign);
    await c.confirm([asg!]);
    await until(async () => c.pushes.filter(isMsg).length >= 2);
    expect(c.pushes.filter(isMsg).map((m) => [m.sequence, text(m)])).toEqual([[8n, "b2"], [9n, "b3"]]);
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "late"), [c, p]);
  });

  it("retention_messages 1000 after 5,000 PUBs in batches keeps exactly the newest 1000 (#28.10: whole segments left 847–992)", async () => {
    const p = await Peer.open();
    const name = unique("count-1000");
    const d = await declareRetention(p, name, 1, { ms: 0, messages: 1000 });
    const t = await topicOf(d.topicId);
    // batches of 97 (one segment each), so segment bounds never line up with the limit
    for (let sent = 0; sent < 5000;) {
      const n = Math.min(97, 5000 - sent);
      p.send(Array.from({ length: n }, (_, k) => pubFrame(d.topicId, 0, `v${sent + k + 1}`)));
      for (const a of await p.answer(n)) expectOk(a, Op.PUB);
      sent += n;
      expect((await infoOf(t)).records).toBe(Math.min(1000, sent));
    }
    expect(await infoOf(t)).toMatchObject({ records: 1000, firstSequence: 4001, lastSequence: 5000 });
    const s = (await statsOf(name)).partitions[0]!;
    expect([s.first_sequence, s.high_watermark]).toEqual([4001, 5000]);
    const [oldest] = await partitionOf(t).read(3990, 1);
    expect([oldest!.sequence, new TextDecoder().decode(oldest!.value)]).toEqual([4001, "v4001"]);
    p.close();
  });
});

describe("discard new", () => {
  it("refuses PUBs that would exceed the limit with PARTITION_FULL (0x4006), nothing appended; raising the limit admits again", async () => {
    const p = await Peer.open();
    const name = unique("full");
    const d = await declareRetention(p, name, 1, { ms: 0, messages: 3, discard: "new" });
    p.send([1, 2, 3, 4, 5].map((i) => pubFrame(d.topicId, 0, `f${i}`, { producerId: 5n, producerSeq: BigInt(i) })));
    const answers = await p.answer(5);
    expect(answers.slice(0, 3).map((a) => pubResult(a).sequence)).toEqual([1n, 2n, 3n]);
    for (const a of answers.slice(3)) {
      expect(new TextDecoder().decode(expectErr(a, ErrorCode.PARTITION_FULL, Op.PUB).message)).toBe(FULL_TEXT);
    }
    const t = await topicOf(d.topicId);
    expect(await infoOf(t)).toMatchObject({ records: 3, lastSequence: 3 });
    // the console's test publish: 409 with the same reason (not a 503 "retry": it fails until the limit changes)
    const http = await SELF.fetch(`http://broker/v0/topics/${name}/partitions/0/records`, { method: "POST", body: JSON.stringify({ value: "f9" }) });
    expect([http.status, await http.json()]).toEqual([409, { error: FULL_TEXT, code: ErrorCode.PARTITION_FULL }]);
    expect(await infoOf(t)).toMatchObject({ records: 3, lastSequence: 3 });
    // bytes too: a value that would take it past retention_bytes
    const b = await declareRetention(p, unique("full-bytes"), 1, { ms: 0, bytes: 250, discard: "new" });
    expectOk(await p.publish(b.topicId, 0, "x".repeat(200)), Op.PUB);
    expectErr(await p.publish(b.topicId, 0, "x".repeat(60)), ErrorCode.PARTITION_FULL, Op.PUB);
    expectOk(await p.publish(b.topicId, 0, "x".repeat(50)), Op.PUB); // one that fits is taken

    // Alter: 5 messages. The refused producer_seqs 4 and 5 are appended now (nothing was recorded for them).
    const altered = await declareRetention(p, name, 0, { messages: 5 });
    expect(altered.retention).toMatchObject({ retentionMessages: 5n, discard: 1 });
    await until(async () => (await infoOf(t)).retention.messages === 5);
    const retry = [4, 5].map((i) => pubFrame(d.topicId, 0, `f${i}`, { producerId: 5n, producerSeq: BigInt(i) }));
    p.send(retry);
    expect((await p.answer(2)).map((a) => pubResult(a).sequence)).toEqual([4n, 5n]);
    expectErr(await p.request(pubFrame(d.topicId, 0, "f6", { producerId: 5n, producerSeq: 6n })), ErrorCode.PARTITION_FULL, Op.PUB);
    // discard old from now on: the next PUB is appended and the oldest record is hidden — exactly 5 stay
    await declareRetention(p, name, 0, { discard: "old" });
    await until(async () => (await infoOf(t)).retention.discard === "old");
    expect(pubResult(await p.request(pubFrame(d.topicId, 0, "f6", { producerId: 5n, producerSeq: 6n }))).sequence).toBe(6n);
    expect(await infoOf(t)).toMatchObject({ records: 5, firstSequence: 2, lastSequence: 6 });
    p.close();
  });
});

describe("consumer groups and retention", () => {
  const pullFrame = (s: Sub, epoch: bigint, assignmentEpoch: number, maxMsgs: number): Frame => ({
    op: Op.PULL, subscriptionId: s.subscriptionId, memberId: s.memberId, membershipEpoch: s.membershipEpoch, assignmentEpoch,
    ownershipEpochs: [epoch], maxMsgs, maxBytes: 0, waitMs: 0, minBytes: 0,
  });

  it("a group below the first retained sequence continues there; the skip is counted in /stats and /metrics; an ACK of a deleted delivery is UNKNOWN_DELIVERY", async () => {
    const c = await Peer.open();
    const p = await Peer.open();
    const name = unique("skip");
    const d = await declareRetention(p, name, 1, { ms: 0, messages: 5 });
    const t = await topicOf(d.topicId);
    const s = await c.subscribe(d.topicId, "slow", { pull: true });
    const [asg] = await c.take(isAssign);
    await c.confirm([asg!]);
    for (let i = 1; i <= 2; i++) expectOk(await p.publish(d.topicId, 0, `r${i}`), Op.PUB);
    expectOk(await c.request(pullFrame(s, asg!.ownershipEpoch, asg!.assignmentEpoch, 2)), Op.PULL);
    const [m1, m2] = c.pushes.filter(isMsg);
    c.pushes.length = 0;
    expect([m1!.sequence, m2!.sequence]).toEqual([1n, 2n]); // in flight, not acked

    for (let i = 3; i <= 12; i++) expectOk(await p.publish(d.topicId, 0, `r${i}`), Op.PUB); // the log keeps 8..12
    expect(await infoOf(t)).toMatchObject({ firstSequence: 8, lastSequence: 12 });
    const cursor = (await infoOf(t)).groups.find((g) => g.group === "slow")!;
    expect(cursor).toMatchObject({ nextSequence: 8, ackFloor: 8, inFlight: 0, retentionSkipped: 7 }); // 3..7 never delivered + 1, 2 in flight

    expectErr(await c.request(c.ackFrame(m1!)), ErrorCode.UNKNOWN_DELIVERY, Op.ACK);
    expectOk(await c.request(pullFrame(s, asg!.ownershipEpoch, asg!.assignmentEpoch, 10)), Op.PULL);
    const next = c.pushes.filter(isMsg);
    c.pushes.length = 0;
    expect(next.map((m) => [m.sequence, text(m)])).toEqual([8, 9, 10, 11, 12].map((q) => [BigInt(q), `r${q}`]));

    const g = (await statsOf(name)).partitions[0]!.groups.find((x) => x.group === "slow")!;
    expect(g).toMatchObject({ committed_floor: 7, lag: 5, in_flight: 5, retention_skipped: 7 });
    await until(async () => (await metric("mortarmq_messages_retention_skipped_total", { topic: name, group: "slow" })) === 7);
    for (const m of next) expectOk(await c.request(c.ackFrame(m)), Op.ACK);
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "slow"), [c, p]);
  });

  it("a deleted in-flight delivery gives its credit back: the next record is pushed without an ACK", async () => {
    const c = await Peer.open();
    const p = await Peer.open();
    const d = await declareRetention(p, unique("credit"), 1, { ms: 0, messages: 2 });
    const t = await topicOf(d.topicId);
    await c.subscribe(d.topicId, "one-at-a-time", { creditCount: 1 });
    await c.confirm(await c.take(isAssign));
    expectOk(await p.publish(d.topicId, 0, "first"), Op.PUB);
    const [m1] = await c.take(isMsg);
    expect(text(m1!)).toBe("first");
    expectOk(await p.publish(d.topicId, 0, "second"), Op.PUB);
    expect(await c.peek(isMsg, 200)).toEqual([]); // the window (1 message) is full
    expectOk(await p.publish(d.topicId, 0, "third"), Op.PUB); // 3 > 2 records: "first" is deleted
    const [m2] = await c.take(isMsg);
    expect([m2!.sequence, text(m2!)]).toEqual([2n, "second"]);
    expectErr(await c.request(c.ackFrame(m1!)), ErrorCode.UNKNOWN_DELIVERY, Op.ACK);
    expectOk(await c.request(c.ackFrame(m2!)), Op.ACK);
    const [m3] = await c.take(isMsg);
    expectOk(await c.request(c.ackFrame(m3!)), Op.ACK);
    expect((await infoOf(t)).groups[0]).toMatchObject({ ackFloor: 4, retentionSkipped: 1 });
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "one-at-a-time"), [c, p]);
  });
});
