import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  CreditMode, DeadLetterReason, ErrorCode, NackReason, Op, decodeCreditResult, decodeDeadLetter, utf8Bytes,
  type Frame, type MsgFrame,
} from "../../../wire/mortar";
import { partitionStub } from "../../../objects/partition/stub";
import { Partition } from "../../../objects/partition/Partition";
import { PubBatchBuilder } from "../../../objects/partition/batch";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { expectErr, expectOk, pubFrame } from "../helpers/mortar-ws";
import { Peer, isAssign, isMsg, text, type Sub } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function setup(partitions = 1, opts: Parameters<Peer["subscribe"]>[2] = {}, group = "g"): Promise<{ p: Peer; topic: TopicInfo; s: Sub }> {
  const p = await Peer.open();
  const d = await p.c.declare(unique("t"), partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup");
  const s = await p.subscribe(d.topicId, group, opts);
  await p.confirm(await p.take(isAssign, partitions));
  return { p, topic: r.topic, s };
}

const creditFrame = (s: Sub, mode: number, count: number, bytes: number, ownershipEpoch = 0n): Frame => ({
  op: Op.CREDIT, subscriptionId: s.subscriptionId, membershipEpoch: s.membershipEpoch, ownershipEpoch, mode, creditCount: count, creditBytes: bytes, reserved: 0,
});

describe("push delivery under credit", () => {
  it("credit_count=3: exactly 3 MSG until an ACK; CREDIT ADD/SET; over the limit is refused", async () => {
    const { p, topic, s } = await setup(1, { creditCount: 3 });
    p.send(Array.from({ length: 10 }, (_, i) => pubFrame(topic.topicId, 0, `m${i}`)));
    await p.answer(10);
    const first = await p.take(isMsg, 3);
    expect(first.map(text)).toEqual(["m0", "m1", "m2"]);
    expect(first.map((m) => [m.sequence, m.attempt, m.ownershipEpoch, m.subscriptionId, m.topicId])).toEqual(
      [1n, 2n, 3n].map((q) => [q, 1, 1n, s.subscriptionId, topic.topicId]));
    expect(new Set(first.map((m) => m.deliveryId)).size).toBe(3);
    expect(await p.peek(isMsg, 300)).toEqual([]);
    expectOk(await p.request(p.ackFrame(first[0]!)), Op.ACK);
    expect((await p.take(isMsg)).map(text)).toEqual(["m3"]);
    expect(await p.peek(isMsg, 200)).toEqual([]);
    // PROGRESS returns no credit.
    expectOk(await p.request(p.ackFrame(first[1]!, 1)), Op.ACK);
    expect(await p.peek(isMsg, 200)).toEqual([]);
    // CREDIT ADD 2 → two more; the result reports the window and what is outstanding.
    const ok = expectOk(await p.request(creditFrame(s, CreditMode.ADD, 2, 0)), Op.CREDIT);
    expect(decodeCreditResult(ok.result)).toEqual({ grantedCount: 5, grantedBytes: 2 * 1024 * 1024, outstandingCount: 3, outstandingBytes: 6, creditEpoch: 1n });
    expect((await p.take(isMsg, 2)).map(text)).toEqual(["m4", "m5"]);
    expectErr(await p.request(creditFrame(s, CreditMode.ADD, 65535, 0)), ErrorCode.CREDIT_LIMIT_EXCEEDED, Op.CREDIT);
    expectErr(await p.request(creditFrame(s, CreditMode.SET, 10, 64 * 1024 * 1024 + 1)), ErrorCode.CREDIT_LIMIT_EXCEEDED, Op.CREDIT);
    expectErr(await p.request(creditFrame({ ...s, membershipEpoch: 99 }, CreditMode.SET, 10, 0)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.CREDIT);
    expectErr(await p.request(creditFrame(s, CreditMode.SET, 10, 0, 7n)), ErrorCode.STALE_OWNERSHIP_EPOCH, Op.CREDIT);
    const set = decodeCreditResult(expectOk(await p.request(creditFrame(s, CreditMode.SET, 6, 0, 1n)), Op.CREDIT).result);
    expect(set).toMatchObject({ grantedCount: 6, outstandingCount: 5, creditEpoch: 2n });
    expect((await p.take(isMsg)).map(text)).toEqual(["m6"]);
    expect(await p.peek(isMsg, 200)).toEqual([]);
    p.close();
  });

  it("delivers one message larger than credit_bytes only when nothing is outstanding", async () => {
    const { p, topic } = await setup(1, { creditBytes: 10 });
    const big = "x".repeat(100);
    p.send([pubFrame(topic.topicId, 0, big), pubFrame(topic.topicId, 0, big), pubFrame(topic.topicId, 0, "small")]);
    await p.answer(3);
    const [m1] = await p.take(isMsg);
    expect(m1!.value.length).toBe(100);
    expect(await p.peek(isMsg, 300)).toEqual([]); // 100 B outstanding in a 10 B window
    expectOk(await p.request(p.ackFrame(m1!)), Op.ACK);
    const [m2] = await p.take(isMsg);
    expect([m2!.sequence, m2!.value.length]).toEqual([2n, 100]);
    expect(await p.peek(isMsg, 200)).toEqual([]);
    expectOk(await p.request(p.ackFrame(m2!)), Op.ACK);
    expect((await p.take(isMsg)).map(text)).toEqual(["small"]);
    p.close();
  });

  it("settles each delivery once: UNKNOWN_DELIVERY for a repeated or wrong delivery, NOT_OWNER for another topic; SLOW is unsupported", async () => {
    const { p, topic } = await setup();
    expectOk(await p.publish(topic.topicId, 0, "a"), Op.PUB);
    const [m] = await p.take(isMsg);
    expectErr(await p.request(p.ackFrame({ ...m!, deliveryId: m!.deliveryId + 1n })), ErrorCode.UNKNOWN_DELIVERY, Op.ACK);
    expectErr(await p.request(p.ackFrame({ ...m!, topicId: topic.topicId + 2 })), ErrorCode.NOT_OWNER, Op.ACK);
    expectErr(await p.request(p.ackFrame({ ...m!, partition: 5 })), ErrorCode.PARTITION_OUT_OF_RANGE, Op.ACK);
    expectErr(await p.request(p.ackFrame({ ...m!, subscriptionId: 9 })), ErrorCode.UNKNOWN_SUBSCRIPTION, Op.ACK);
    expectErr(await p.request(p.nackFrame(m!, NackReason.SLOW)), ErrorCode.UNSUPPORTED_NACK_REASON, Op.NACK);
    expectErr(await p.request(p.nackFrame(m!, 2)), ErrorCode.UNSUPPORTED_NACK_REASON, Op.NACK);
    expectOk(await p.request(p.ackFrame(m!)), Op.ACK);
    expectErr(await p.request(p.ackFrame(m!)), ErrorCode.UNKNOWN_DELIVERY, Op.ACK);
    p.close();
  });
});

describe("partition ledger", () => {
  it("keeps in-flight deliveries (ids, attempts, deadlines) and counters across a restart of the object", async () => {
    const t = `ledger-${unique("r")}`;
    await registryStub(env, t).declare("t", 1); // topic_id 1, incarnation 1: the partition registers with it
    const p = partitionStub(env, t, 1, 1, 0);
    const caller = { sessionId: env.SESSION.newUniqueId().toString(), subscriptionId: 4 };
    expect(await p.assign("g", 1, { ...caller, memberId: 9 }, 0)).toEqual({ ok: true, ownershipEpoch: 1 });
    const b = new PubBatchBuilder();
    for (let i = 0; i < 5; i++) b.add(pubFrame(1, 0, `v${i}`));
    await p.append(b.finish());
    const d = await p.deliver({ group: "g", ownershipEpoch: 1, caller, maxMsgs: 10, maxBytes: 1 << 20, allowOversize: false, holdMs: 0 });
    expect([...d.sequences]).toEqual([1, 2, 3, 4, 5]);
    const ack = (i: number[]) => ({ group: "g", caller, kinds: new Uint8Array(i.length), sequences: Float64Array.from(i, (x) => x + 1), deliveryIds: Float64Array.from(i, (x) => d.deliveryIds[x]!), ownershipEpochs: new Float64Array(i.length).fill(1) });
    expect([...(await p.settle(ack([1, 3]))).codes]).toEqual([0, 0]);
    await runInDurableObject(p, async (_inst, ctx) => {
      const again = new Partition(ctx, env); // what the runtime does when the object starts again
      expect(again.info().groups[0]).toMatchObject({ ackFloor: 1, nextSequence: 6, inFlight: 3, delivered: 5, acked: 2, ownershipEpoch: 1, ownerMemberId: 9 });
      expect([...(await again.settle(ack([0, 2, 4]))).codes]).toEqual([0, 0, 0]);
      expect([...(await again.settle(ack([0]))).codes]).toEqual([ErrorCode.UNKNOWN_DELIVERY]);
      expect(again.info().groups[0]).toMatchObject({ ackFloor: 6, inFlight: 0, acked: 5 });
      const next = await again.deliver({ group: "g", ownershipEpoch: 1, caller, maxMsgs: 10, maxBytes: 1 << 20, allowOversize: false, holdMs: 0 });
      expect(next.sequences.length).toBe(0);
      expect(next.deliveryIds.length).toBe(0);
    });
  });
});

describe("start policy", () => {
  it("EARLIEST starts at the oldest record, LATEST after the last one; a later SUB of the group resumes from its floor", async () => {
    const p = await Peer.open();
    const d = await p.c.declare(unique("start"), 1);
    p.send([0, 1, 2].map((i) => pubFrame(d.topicId, 0, `old${i}`)));
    await p.answer(3);
    await p.subscribe(d.topicId, "latest", { startPolicy: 1 });
    await p.confirm(await p.take(isAssign));
    await p.subscribe(d.topicId, "earliest", { startPolicy: 0 });
    await p.confirm(await p.take(isAssign));
    expectOk(await p.publish(d.topicId, 0, "new"), Op.PUB);
    const got = await p.take(isMsg, 5);
    const by = (sub: number) => got.filter((m) => m.subscriptionId === sub).map(text);
    expect(by(1)).toEqual(["new"]);
    expect(by(2)).toEqual(["old0", "old1", "old2", "new"]);
    for (const m of got.filter((x) => x.subscriptionId === 1)) expectOk(await p.request(p.ackFrame(m)), Op.ACK);
    p.close();
  });
});

describe("redelivery and dead-letter twins", () => {
  it("NACK RETRY redelivers with attempt+1; after max attempts the message is in the .dlq twin, readable there", async () => {
    const { p, topic } = await setup();
    p.send([pubFrame(topic.topicId, 0, "poison", { key: utf8Bytes("k1"), producerId: 42n, producerSeq: 7n }), pubFrame(topic.topicId, 0, "fine")]);
    await p.answer(2);
    let [m] = await p.take((f): f is MsgFrame => isMsg(f) && text(f) === "poison");
    const [fine] = await p.take(isMsg);
    expectOk(await p.request(p.ackFrame(fine!)), Op.ACK);
    const ids = new Set<bigint>();
    for (let attempt = 1; attempt <= 5; attempt++) {
      expect([m!.attempt, m!.sequence]).toEqual([attempt, 1n]);
      ids.add(m!.deliveryId);
      expectOk(await p.request(p.nackFrame(m!, NackReason.RETRY)), Op.NACK);
      if (attempt < 5) [m] = await p.take(isMsg);
    }
    expect(ids.size).toBe(5);
    expect(await p.peek(isMsg, 300)).toEqual([]);
    const part = partitionStub(env, "default", topic.incarnation, topic.topicId, 0);
    await waitFor(async () => (await part.info()).groups[0]!.deadLettered === 1);
    expect((await part.info()).groups[0]).toMatchObject({ ackFloor: 3, nextSequence: 3, inFlight: 0, pendingDeadLetter: 0, delivered: 6, acked: 1, redelivered: 4, deadLettered: 1 });

    // Read the twin like any topic.
    const twinId = topic.topicId + 1;
    const q = await Peer.open();
    await q.subscribe(twinId, "dlq-readers");
    await q.confirm(await q.take(isAssign));
    const [dl] = await q.take(isMsg);
    expect([dl!.topicId, dl!.partition, dl!.producerId, dl!.producerSeq, new TextDecoder().decode(dl!.key)]).toEqual([twinId, 0, 42n, 7n, "k1"]);
    const env1 = decodeDeadLetter(dl!.value)!;
    expect(env1.header).toMatchObject({ reason: DeadLetterReason.MAX_ATTEMPTS, topicId: topic.topicId, partition: 0, sequence: 1n, attempts: 5, group: "g" });
    expect(new TextDecoder().decode(env1.value)).toBe("poison");
    p.close();
    q.close();
  });

  it("NACK REJECT dead-letters at once and the floor moves past it", async () => {
    const { p, topic } = await setup(2);
    expectOk(await p.publish(topic.topicId, 1, "reject-me"), Op.PUB);
    const [m] = await p.take(isMsg);
    expectOk(await p.request(p.nackFrame(m!, NackReason.REJECT)), Op.NACK);
    const twin = partitionStub(env, "default", topic.incarnation, topic.topicId + 1, 1);
    await waitFor(async () => (await twin.info()).lastSequence === 1);
    const [rec] = await twin.read(1, 1);
    const e = decodeDeadLetter(rec!.value)!;
    expect(e.header).toMatchObject({ reason: DeadLetterReason.REJECTED, partition: 1, sequence: 1n, attempts: 1 });
    expect((await partitionStub(env, "default", topic.incarnation, topic.topicId, 1).info()).groups[0]).toMatchObject({ ackFloor: 2, deadLettered: 1 });
    p.close();
  });
});

describe("PULL", () => {
  const pullFrame = (s: Sub, epochs: bigint[], assignmentEpoch: number, o: { maxMsgs?: number; maxBytes?: number; waitMs?: number; minBytes?: number }): Frame => ({
    op: Op.PULL, subscriptionId: s.subscriptionId, memberId: s.memberId, membershipEpoch: s.membershipEpoch, assignmentEpoch,
    ownershipEpochs: epochs, maxMsgs: o.maxMsgs ?? 100, maxBytes: o.maxBytes ?? 0, waitMs: o.waitMs ?? 0, minBytes: o.minBytes ?? 0,
  });

  it("returns an empty OK after wait_ms, and returns early once min_bytes have arrived", async () => {
    const p = await Peer.open();
    const d = await p.c.declare(unique("pull"), 2);
    const s = await p.subscribe(d.topicId, "pullers", { pull: true });
    const assigned = await p.take(isAssign, 2);
    await p.confirm(assigned);
    const ae = assigned[1]!.assignmentEpoch;
    let t = Date.now();
    expectOk(await p.request(pullFrame(s, [1n, 1n], ae, { waitMs: 300 })), Op.PULL);
    expect(Date.now() - t).toBeGreaterThanOrEqual(280);
    expect(p.pushes).toEqual([]);

    // Long-poll: 5 bytes arrive (below min_bytes 8), then 4 more on the other partition → answered before wait_ms.
    const producer = await Peer.open();
    t = Date.now();
    p.send([pullFrame(s, [1n, 1n], ae, { waitMs: 10_000, minBytes: 8 })]);
    await new Promise((r) => setTimeout(r, 100));
    expectOk(await producer.publish(d.topicId, 0, "12345"), Op.PUB);
    await new Promise((r) => setTimeout(r, 200));
    expect(p.answers).toEqual([]);
    expectOk(await producer.publish(d.topicId, 1, "6789"), Op.PUB);
    const [ok] = await p.answer(1, 5000);
    expectOk(ok, Op.PULL);
    expect(Date.now() - t).toBeLessThan(5_000);
    const msgs = p.pushes.filter(isMsg);
    expect(msgs.map(text).sort()).toEqual(["12345", "6789"]);
    p.pushes.length = 0;
    // max_msgs bounds the answer; what is left comes with the next PULL, redeliveries first.
    producer.send([0, 1, 2].map((i) => pubFrame(d.topicId, 0, `r${i}`)));
    await producer.answer(3);
    expectOk(await p.request(pullFrame(s, [1n, 1n], ae, { maxMsgs: 2 })), Op.PULL);
    expect(p.pushes.filter(isMsg).map(text)).toEqual(["r0", "r1"]);
    const [r0] = p.pushes.filter(isMsg);
    p.pushes.length = 0;
    expectOk(await p.request(p.nackFrame(r0!, NackReason.RETRY)), Op.NACK);
    expectOk(await p.request(pullFrame(s, [1n, 1n], ae, { maxMsgs: 5, waitMs: 1000 })), Op.PULL);
    expect(p.pushes.filter(isMsg).map((m) => [text(m), m.attempt])).toEqual([["r0", 2], ["r2", 1]]);
    p.close();
    producer.close();
  });
});

async function waitFor(ok: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}
