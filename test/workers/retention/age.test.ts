/**
 * Retention by age, with the default of this project (MORTAR_RETENTION_MS =
 * 600): the Partition's alarm deletes whole segments once they are 600 ms
 * old. Also: EARLIEST after retention, dedupe after deletion, and the
 * storage level falling in the tenant's usage.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Discard, Op, PubResultFlags, StartPolicy, type PubFrame } from "../../../wire/mortar";
import { PubBatchBuilder } from "../../../objects/partition/batch";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { AppendResult, PartitionInfo } from "../../../objects/partition/rpc";
import type { DeclareResult, TopicInfo } from "../../../objects/registry/rpc";
import { series } from "../../../objects/usage/catalog";
import { usageStub } from "../../../objects/usage/stub";
import { groupStub } from "../../../objects/group/stub";
import { expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, text } from "../helpers/peer";
import { until } from "../../fixtures/until";
import { declareRetention, infoOf, infoUntil, metric, statsOf, tail, topicOf, unique } from "./helpers";

/** Alters `name` to retention_ms 0 and waits until its partition 0 applies it: later steps then cannot race the 600 ms. */
async function keepForever(p: Peer, t: TopicInfo, name: string): Promise<void> {
  await declareRetention(p, name, 0, { ms: 0 });
  await infoUntil(t, (i) => i.retention.ms === 0);
}

describe("retention by age (default MORTAR_RETENTION_MS = 600 here)", () => {
  it("a topic that sets nothing follows the var: records older than 600 ms go, sequences go on, /stats shows the new log start", async () => {
    const p = await Peer.open();
    const name = unique("age");
    const d = await declareRetention(p, name, 1, {}); // no field set: create, and answer the settings in force
    expect(d.retention).toEqual({ retentionMs: 600n, retentionBytes: 8n * 1024n ** 3n, retentionMessages: 0n, discard: Discard.OLD });
    const deletedBefore = await metric("mortarmq_messages_retention_deleted_total");
    p.send([0, 1, 2, 3, 4].map((i) => pubFrame(d.topicId, 0, `v${i}`)));
    for (const a of await p.answer(5)) expectOk(a, Op.PUB);
    const t = await topicOf(d.topicId);
    const stored = await infoOf(t);
    if (stored.records > 0) expect(stored).toMatchObject({ firstSequence: 1, lastSequence: 5, records: 5, retainedBytes: 10 }); // (unless 600 ms passed already)

    const gone = await infoUntil(t, (i) => i.records === 0, 5000);
    expect(gone).toMatchObject({ firstSequence: 6, lastSequence: 5, retainedBytes: 0, retention: { ms: 600, bytes: 8 * 1024 ** 3, messages: 0, discard: "old" } });
    expect((await statsOf(name)).retention).toEqual({ retention_ms: 600, retention_bytes: 8 * 1024 ** 3, retention_messages: 0, discard: "old" });
    await keepForever(p, t, name); // what follows must not race the 600 ms on a loaded machine
    expect(pubResult(await p.publish(d.topicId, 0, "after")).sequence).toBe(6n); // the sequence survives an emptied log
    expect((await statsOf(name)).partitions[0]).toMatchObject({ first_sequence: 6, high_watermark: 6, size_bytes: 5 });
    await until(async () => (await metric("mortarmq_messages_retention_deleted_total")) >= deletedBefore + 5);
    p.close();
  });

  it("the sequence of an emptied log survives a restart of the partition", async () => {
    const p = await Peer.open();
    const d = await declareRetention(p, unique("age-restart"), 1, {});
    for (let i = 0; i < 3; i++) expectOk(await p.publish(d.topicId, 0, "x"), Op.PUB);
    const t = await topicOf(d.topicId);
    await infoUntil(t, (i) => i.records === 0);
    await runInDurableObject(partitionStub(env, "default", t.incarnation, t.topicId, 0), (_o, ctx) => ctx.abort("restart")).catch(() => {});
    expect(pubResult(await p.publish(d.topicId, 0, "y")).sequence).toBe(4n);
    p.close();
  });

  it("EARLIEST means the first retained sequence: a group created after retention starts there", async () => {
    const p = await Peer.open();
    const name = unique("earliest");
    const d = await declareRetention(p, name, 1, {});
    for (let i = 1; i <= 4; i++) expectOk(await p.publish(d.topicId, 0, `old${i}`), Op.PUB);
    const t = await topicOf(d.topicId);
    await infoUntil(t, (i) => i.records === 0);
    await keepForever(p, t, name);
    for (let i = 5; i <= 6; i++) expectOk(await p.publish(d.topicId, 0, `new${i}`), Op.PUB);
    await p.subscribe(d.topicId, "late", { startPolicy: StartPolicy.EARLIEST });
    await p.confirm(await p.take(isAssign));
    const msgs = await p.take(isMsg, 2);
    expect(msgs.map((m) => [m.sequence, text(m)])).toEqual([[5n, "new5"], [6n, "new6"]]);
    const cursor = (await infoOf(t)).groups.find((g) => g.group === "late")!;
    expect(cursor.retentionSkipped).toBe(0); // it started at the log start: it skipped nothing
    for (const m of msgs) expectOk(await p.request(p.ackFrame(m)), Op.ACK);
    await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "late"), [p]);
  });

  it("dedupe after deletion: a resent PUB of a deleted record is still a duplicate with its original sequence", async () => {
    const p = await Peer.open();
    const name = unique("dedupe");
    const d = await declareRetention(p, name, 1, {});
    const idem = (seq: bigint): PubFrame => pubFrame(d.topicId, 0, `p${seq}`, { producerId: 77n, producerSeq: seq });
    for (let s = 1n; s <= 5n; s++) expect(pubResult(await p.request(idem(s))).sequence).toBe(s);
    const t = await topicOf(d.topicId);
    await infoUntil(t, (i) => i.records === 0);
    await keepForever(p, t, name);
    const dup = pubResult(await p.request(idem(3n)));
    expect([dup.sequence, dup.resultFlags & PubResultFlags.DEDUPLICATED]).toEqual([3n, 1]);
    const next = pubResult(await p.request(idem(6n)));
    expect([next.sequence, next.resultFlags]).toEqual([6n, 0]);
    expect((await infoOf(t)).records).toBe(1); // nothing appended for the duplicate
    p.close();
  });

  it("storage_bytes falls in the tenant's usage when retention deletes (a tenant of its own)", async () => {
    const tenant = unique("ret-usage");
    const reg = registryStub(env, tenant);
    const d = (await reg.declare("t", 1, 2, tail({ ms: 0 }))) as DeclareResult; // flags bit1 RETENTION: kept until altered below
    if (!d.ok) throw new Error(d.message);
    const part = partitionStub(env, tenant, d.topic.incarnation, d.topicId, 0);
    const b = new PubBatchBuilder();
    for (let i = 0; i < 10; i++) b.add(pubFrame(d.topicId, 0, new Uint8Array(1000)));
    expect(((await part.append(b.finish())) as AppendResult).commitSeq).toBe(10);
    const STORED = series("mortarmq_stored_bytes", { system: "mortar" });
    const stored = async () => new Map((await usageStub(env, tenant).metrics()) as [string, number][]).get(STORED) ?? 0;
    await until(async () => (await stored()) === 10_000); // reported within the flush interval (100 ms here)
    await reg.declare("t", 0, 2, tail({ ms: 1 })); // alter: everything is older than 1 ms
    await until(async () => ((await part.info()) as PartitionInfo).records === 0);
    await until(async () => (await stored()) === 0);
  });
});
