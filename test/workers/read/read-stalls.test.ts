/**
 * Read-path liveness: a push consumer with free credit must keep receiving
 * while records are deliverable, whatever it holds unsettled (docs/protocol.md
 * "Read path" → Delivery). Runs with the default ack wait (30 s), so no
 * deadline expiry can hide a stall within a test.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CreditMode, NackReason, Op, decodeCreditResult, type Frame } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { expectOk, pubFrame } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, text, type Sub } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function declare(p: Peer, partitions: number): Promise<TopicInfo> {
  const d = await p.c.declare(unique("st"), partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup");
  return r.topic;
}

async function setup(partitions: number, opts: Parameters<Peer["subscribe"]>[2] = {}): Promise<{ p: Peer; topic: TopicInfo; s: Sub }> {
  const p = await Peer.open();
  const topic = await declare(p, partitions);
  const s = await p.subscribe(topic.topicId, "g", opts);
  await p.confirm(await p.take(isAssign, partitions));
  return { p, topic, s };
}

const creditFrame = (s: Sub, mode: number, count: number, bytes: number): Frame => ({
  op: Op.CREDIT, subscriptionId: s.subscriptionId, membershipEpoch: s.membershipEpoch, ownershipEpoch: 0n, mode, creditCount: count, creditBytes: bytes, reserved: 0,
});

async function publishAll(p: Peer, topicId: number, records: [number, string][]): Promise<void> {
  p.send(records.map(([part, v]) => pubFrame(topicId, part, v)));
  for (const a of await p.answer(records.length)) expectOk(a, Op.PUB);
}

describe("free credit is always used while deliveries are outstanding", () => {
  it("credit_count=8, 8 held: one ACK brings the 9th record (no low-water stall)", async () => {
    const { p, topic } = await setup(1, { creditCount: 8 });
    await publishAll(p, topic.topicId, Array.from({ length: 10 }, (_, i) => [0, `m${i}`] as [number, string]));
    const held = await p.take(isMsg, 8);
    expectOk(await p.request(p.ackFrame(held[0]!)), Op.ACK);
    expect((await p.take(isMsg, 1, 2000)).map(text)).toEqual(["m8"]);
    expect(await p.peek(isMsg, 200)).toEqual([]); // 8 outstanding again: the window holds
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, "g"), [p]);
  });

  it("credit_count=8, 8 held: NACK RETRY of one brings its redelivery", async () => {
    const { p, topic } = await setup(1, { creditCount: 8 });
    await publishAll(p, topic.topicId, Array.from({ length: 8 }, (_, i) => [0, `m${i}`] as [number, string]));
    const held = await p.take(isMsg, 8);
    expectOk(await p.request(p.nackFrame(held[3]!, NackReason.RETRY)), Op.NACK);
    const [again] = await p.take(isMsg, 1, 2000);
    expect([text(again!), again!.attempt]).toEqual(["m3", 2]);
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, "g"), [p]);
  });

  it("a full window of 16, CREDIT ADD 1 delivers one more record", async () => {
    const { p, topic, s } = await setup(1, { creditCount: 16 });
    await publishAll(p, topic.topicId, Array.from({ length: 20 }, (_, i) => [0, `m${i}`] as [number, string]));
    await p.take(isMsg, 16);
    const ok = decodeCreditResult(expectOk(await p.request(creditFrame(s, CreditMode.ADD, 1, 0)), Op.CREDIT).result);
    expect(ok).toMatchObject({ grantedCount: 17, outstandingCount: 16 });
    expect((await p.take(isMsg, 1, 2000)).map(text)).toEqual(["m16"]);
    expect(await p.peek(isMsg, 200)).toEqual([]);
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, "g"), [p]);
  });

  it("several partitions: records that fit the free bytes flow although none fits an even share of them", async () => {
    // 3 partitions, byte window 100; a 10-byte record is held unsettled, then 40-byte records wait on every partition.
    const { p, topic, s } = await setup(3, { creditCount: 1, creditBytes: 100 });
    await publishAll(p, topic.topicId, [[0, "x".repeat(10)]]);
    const [held] = await p.take(isMsg);
    const big = (c: string) => c.repeat(40);
    await publishAll(p, topic.topicId, [[0, big("a")], [1, big("b")], [2, big("c")], [0, big("d")], [1, big("e")], [2, big("f")]]);
    expect(await p.peek(isMsg, 200)).toEqual([]); // the count window (1) is full
    // Open the count window; 90 bytes are free: two 40-byte records fit (an even share, 30 B, fits none).
    expectOk(await p.request(creditFrame(s, CreditMode.SET, 256, 100)), Op.CREDIT);
    const got = await p.take(isMsg, 2, 2000);
    expect(got.every((m) => m.value.length === 40)).toBe(true);
    expect(await p.peek(isMsg, 200)).toEqual([]); // 90 bytes outstanding: a third would exceed the window
    const c = decodeCreditResult(expectOk(await p.request(creditFrame(s, CreditMode.ADD, 0, 0)), Op.CREDIT).result);
    expect(c).toMatchObject({ outstandingCount: 3, outstandingBytes: 90 });
    expectOk(await p.request(p.ackFrame(held!)), Op.ACK);
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, "g"), [p]);
  });

  it("PULL: min_bytes is met from records that fit max_bytes together although none fits an even share", async () => {
    const p = await Peer.open();
    const d = await declare(p, 3);
    const s = await p.subscribe(d.topicId, "g", { pull: true });
    const assigned = await p.take(isAssign, 3);
    await p.confirm(assigned);
    await publishAll(p, d.topicId, [[0, "a".repeat(40)], [1, "b".repeat(40)], [2, "c".repeat(40)]]);
    const t = Date.now();
    // max_bytes 100 over 3 partitions: an even share is 33 B; two 40-byte records (80 = min_bytes) fit.
    const ok = await p.request({
      op: Op.PULL, subscriptionId: s.subscriptionId, memberId: s.memberId, membershipEpoch: s.membershipEpoch,
      assignmentEpoch: assigned[2]!.assignmentEpoch, ownershipEpochs: [1n, 1n, 1n], maxMsgs: 10, maxBytes: 100, waitMs: 20_000, minBytes: 80,
    }, 25_000);
    expectOk(ok, Op.PULL);
    expect(Date.now() - t).toBeLessThan(10_000); // answered at once, not at wait_ms
    expect(p.pushes.filter(isMsg).map((m) => m.value.length)).toEqual([40, 40]);
    await closeAndSettle(groupStub(env, "default", d.incarnation, d.topicId, "g"), [p]);
  }, 30_000);
});
