import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DeclareFlags, ErrorCode, MAX_TOPIC_PAIRS } from "../../../wire/mortar";
import { registryStub } from "../../../objects/registry/stub";
import { tenantStub } from "../../../objects/tenants/stub";
import { UNLIMITED } from "../../../wire/admin/tenants";
import { partitionStub } from "../../../objects/partition/stub";
import type { TopicRegistry } from "../../../objects/registry/TopicRegistry";
import type { DeclareResult, LookupResult } from "../../../objects/registry/rpc";
import { PubBatchBuilder } from "../../../objects/partition/batch";
import { Op } from "../../../wire/mortar";

/** Retries `check` until it passes (up to ~2 s). */
async function eventually(check: () => Promise<void>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return await check();
    } catch (e) {
      if (i > 40) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Waits until the registry of `t` has told every partition of deleted topics (no alarm work left behind). */
async function drainPurges(t: string): Promise<void> {
  await eventually(() => runInDurableObject(registryStub(env, t), async (_r, ctx) => {
    expect(ctx.storage.sql.exec("SELECT count(*) AS n FROM purges").one().n).toBe(0);
  }));
}

/** The partition's leader epoch: how many times the object started (this call starts it if it was not running). */
const leaderEpoch = (stub: ReturnType<typeof partitionStub>) => runInDurableObject(stub, async (_p, ctx) =>
  ctx.storage.sql.exec<{ v: number }>("SELECT v FROM partition_meta WHERE k = 'leader_epoch'").one().v);

let n = 0;
/** A fresh tenant per test, so registries never share state. */
const tenant = () => `reg-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function declare(t: string, name: string | Uint8Array, partitions: number, flags = 0): Promise<DeclareResult> {
  return (await registryStub(env, t).declare(name, partitions, flags)) as DeclareResult;
}

describe("TopicRegistry DECLARE", () => {
  it("allocates odd/even pairs, answers CREATED then IDEMPOTENT_OK with the same id", async () => {
    const t = tenant();
    expect(await declare(t, "orders", 3)).toMatchObject({ ok: true, topicId: 1, partitionCount: 3, created: 0 });
    expect(await declare(t, "payments", 1)).toMatchObject({ ok: true, topicId: 3, created: 0 });
    expect(await declare(t, "orders", 3)).toMatchObject({ ok: true, topicId: 1, partitionCount: 3, created: 1 });
  });

  it("refuses another partition count for an existing topic (0x2003)", async () => {
    const t = tenant();
    await declare(t, "orders", 3);
    expect(await declare(t, "orders", 4)).toMatchObject({ ok: false, code: ErrorCode.PARTITION_COUNT_MISMATCH });
  });

  it("validates names, counts and flags", async () => {
    const t = tenant();
    expect(await declare(t, "", 1)).toMatchObject({ ok: false, code: ErrorCode.INVALID_TOPIC_NAME });
    expect(await declare(t, "x".repeat(256), 1)).toMatchObject({ ok: false, code: ErrorCode.INVALID_TOPIC_NAME });
    expect(await declare(t, Uint8Array.of(0x66, 0xff, 0x6f), 1)).toMatchObject({ ok: false, code: ErrorCode.INVALID_TOPIC_NAME });
    expect(await declare(t, "é".repeat(127), 1)).toMatchObject({ ok: true }); // 254 bytes of UTF-8
    expect(await declare(t, "zero", 0)).toMatchObject({ ok: false, code: ErrorCode.INVALID_PARTITION_COUNT });
    expect(await declare(t, "flags", 1, 0x0002)).toMatchObject({ ok: false, code: ErrorCode.INVALID_FLAGS }); // RETENTION without its settings
    expect(await declare(t, "flags", 1, 0x0004)).toMatchObject({ ok: false, code: ErrorCode.INVALID_FLAGS });
  });

  it("a registry of a release before retention tells its registered partitions their settings and topic name once", async () => {
    const t = tenant();
    const d = await declare(t, "legacy", 2);
    if (!d.ok) throw new Error("declare");
    const partOf = () => partitionStub(env, t, d.topic.incarnation, d.topicId, 1); // a fresh stub after each restart
    let part = partOf();
    const b = new PubBatchBuilder();
    b.add({ op: Op.PUB, topicId: d.topicId, partition: 1, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new Uint8Array(3) });
    await part.append(b.finish()); // registers: it is told at once
    await runInDurableObject(part, async (_p, ctx) => {
      ctx.storage.sql.exec("DROP TABLE retention_settings"); // as a partition of that release had it
    });
    await runInDurableObject(part, (_p, ctx) => ctx.abort("restart")).catch(() => {});
    part = partOf();
    expect((await part.info()).retention).toMatchObject({ version: -1, topic: "" });
    // The registry as that release left it: no retention tables, not yet pushed.
    await runInDurableObject(registryStub(env, t), async (_r, ctx) => {
      ctx.storage.sql.exec("DROP TABLE retention; DROP TABLE retention_push; DELETE FROM registry_meta WHERE k = 'retention_pushed'");
      ctx.storage.sql.exec("DELETE FROM schedule");
    });
    await runInDurableObject(registryStub(env, t), (_r, ctx) => ctx.abort("restart")).catch(() => {});
    const reg = registryStub(env, t);
    expect(await declare(t, "legacy", 2)).toMatchObject({ ok: true, created: 1 }); // starts it: the pushes are queued
    await eventually(async () => {
      expect((await part.info()).retention).toMatchObject({ version: 0, topic: "legacy", ms: 604_800_000, bytes: 8 * 1024 ** 3 });
    });
    await eventually(() => runInDurableObject(reg, async (_r, ctx) => {
      expect(ctx.storage.sql.exec("SELECT count(*) AS n FROM retention_push").one().n).toBe(0);
    }));
  });

  it("reserves .dlq names but answers the twin of an existing source", async () => {
    const t = tenant();
    expect(await declare(t, "nosuch.dlq", 1)).toMatchObject({ ok: false, code: ErrorCode.TOPIC_NAME_RESERVED });
    await declare(t, "a", 1);
    await declare(t, "orders", 2);
    expect(await declare(t, "orders.dlq", 2)).toMatchObject({ ok: true, topicId: 4, partitionCount: 2, created: 1 });
    expect(await declare(t, "orders.dlq", 5)).toMatchObject({ ok: false, code: ErrorCode.PARTITION_COUNT_MISMATCH });
    expect(await declare(t, "orders.dlq", 0, DeclareFlags.DELETE)).toMatchObject({ ok: false, code: ErrorCode.TOPIC_NAME_RESERVED });
    const twin = (await registryStub(env, t).lookup(4)) as LookupResult;
    expect(twin).toMatchObject({ ok: true, topic: { name: "orders.dlq", dlq: true, partitionCount: 2 } });
  });

  it("deletes a topic: lookups say TOPIC_DELETED, a new topic of the same name gets a new incarnation", async () => {
    const t = tenant();
    const first = await declare(t, "orders", 2);
    if (!first.ok) throw new Error("declare failed");
    expect(await declare(t, "nosuch", 0, DeclareFlags.DELETE)).toMatchObject({ ok: false, code: ErrorCode.UNKNOWN_TOPIC });
    expect(await declare(t, "orders", 0, DeclareFlags.DELETE)).toMatchObject({ ok: true, topicId: 1, partitionCount: 2 });
    expect(await registryStub(env, t).lookup(1)).toMatchObject({ ok: false, code: ErrorCode.TOPIC_DELETED });
    expect(await registryStub(env, t).lookup(2)).toMatchObject({ ok: false, code: ErrorCode.TOPIC_DELETED });
    expect(await registryStub(env, t).lookup(9)).toMatchObject({ ok: false, code: ErrorCode.UNKNOWN_TOPIC });
    const again = await declare(t, "orders", 5);
    expect(again).toMatchObject({ ok: true, created: 0, partitionCount: 5 });
    if (!again.ok) throw new Error("declare failed");
    expect(again.topic.incarnation).toBeGreaterThan(first.topic.incarnation);
    expect(again.topicId).toBe(3); // fresh pairs are used before freed ones
    await drainPurges(t);
  });

  it("purges the old incarnation's partitions through its alarm", async () => {
    const t = tenant();
    const d = await declare(t, "orders", 2);
    if (!d.ok) throw new Error("declare failed");
    const partOf = () => partitionStub(env, t, d.topic.incarnation, d.topicId, 1); // a fresh stub after each restart
    let part = partOf();
    const b = new PubBatchBuilder();
    b.add({ op: Op.PUB, topicId: 1, partition: 1, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new Uint8Array(10) });
    expect((await part.append(b.finish())).sequences[0]).toBe(1);
    await declare(t, "orders", 0, DeclareFlags.DELETE);
    await runDurableObjectAlarm(registryStub(env, t)); // (it may already have run by itself: it is due at once)
    await eventually(async () => expect((await part.append(b.finish())).error?.code).toBe(ErrorCode.TOPIC_DELETED));
    await runDurableObjectAlarm(part);
    await eventually(async () => expect(await part.info()).toMatchObject({ records: 0, deleted: true }));
    await drainPurges(t);
    // only the partition that stored something was told: the other one and the twin's were never started
    for (const [id, p] of [[d.topicId, 0], [d.topicId + 1, 0], [d.topicId + 1, 1]]) {
      expect(await leaderEpoch(partitionStub(env, t, d.topic.incarnation, id, p))).toBe(1); // 1 = this start
    }
  });

  it("a topic created before partitions registered themselves (an older release) is purged by full fan-out", async () => {
    const t = tenant();
    const d = await declare(t, "old", 66);
    if (!d.ok) throw new Error("declare");
    // The registry as an older release left it: this topic's incarnation is below written_from.
    await runInDurableObject(registryStub(env, t), async (_r, ctx) => {
      ctx.storage.sql.exec("UPDATE registry_meta SET v = ? WHERE k = 'written_from'", d.topic.incarnation + 1);
    });
    await declare(t, "old", 0, DeclareFlags.DELETE);
    // each alarm run tells up to 64 partitions (66 take two pages per topic id); run them here rather than wait
    const reg = registryStub(env, t);
    const left = () => runInDurableObject(reg, async (_r, ctx) => ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM purges").one().n);
    for (let i = 0; i < 20 && (await left()) > 0; i++) await runDurableObjectAlarm(reg);
    expect(await left()).toBe(0);
    // never written, yet told: source and twin, first and second page
    for (const [id, p] of [[d.topicId, 0], [d.topicId, 63], [d.topicId, 64], [d.topicId, 65], [d.topicId + 1, 0], [d.topicId + 1, 65]]) {
      expect(await partitionStub(env, t, d.topic.incarnation, id, p).info()).toMatchObject({ deleted: true, records: 0 });
    }
  }, 20_000);

  it("deleting a never-written topic does not start (and store) one Partition object per partition", async () => {
    const t = tenant();
    const d = await declare(t, "wide", 200);
    if (!d.ok) throw new Error("declare");
    await declare(t, "wide", 0, DeclareFlags.DELETE);
    await drainPurges(t);
    // never written by any client; had the purge started it, its leader epoch would already be 1 and this start makes it 2
    expect(await leaderEpoch(partitionStub(env, t, d.topic.incarnation, d.topicId + 1, 199))).toBe(1);
  });

  it("a partition that first writes after its topic was deleted (a stale PUB) refuses with TOPIC_DELETED and keeps nothing", async () => {
    const t = tenant();
    const d = await declare(t, "late", 2);
    if (!d.ok) throw new Error("declare");
    await declare(t, "late", 0, DeclareFlags.DELETE);
    await drainPurges(t);
    const b = new PubBatchBuilder();
    b.add({ op: Op.PUB, topicId: d.topicId, partition: 1, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: new Uint8Array(10) });
    const part = partitionStub(env, t, d.topic.incarnation, d.topicId, 1);
    expect((await part.append(b.finish())).error?.code).toBe(ErrorCode.TOPIC_DELETED);
    expect(await part.info()).toMatchObject({ records: 0, deleted: true });
  });

  it("caps partition_count of a new topic at 1024 by default (INVALID_PARTITION_COUNT); existing topics are unaffected", async () => {
    const t = tenant();
    expect(await declare(t, "big", 1024)).toMatchObject({ ok: true, partitionCount: 1024 });
    const r = await declare(t, "bigger", 1025);
    expect(r).toMatchObject({ ok: false, code: ErrorCode.INVALID_PARTITION_COUNT });
    expect((r as { message: string }).message).toMatch(/limit of 1024 partitions per topic \(MORTAR_MAX_PARTITIONS_PER_TOPIC\)/);
    expect(await declare(t, "big", 1024)).toMatchObject({ ok: true, created: 1 });
  });

  it("lists live topics with their twins", async () => {
    const t = tenant();
    await declare(t, "a", 1);
    await declare(t, "b", 2);
    await declare(t, "a", 0, DeclareFlags.DELETE);
    await drainPurges(t);
    const list = await registryStub(env, t).list();
    expect(list.map((x) => [x.topicId, x.name, x.partitionCount, x.dlq])).toEqual([[3, "b", 2, false], [4, "b.dlq", 2, true]]);
  });

  it("refuses a new topic once all 32767 pairs are in use, and reuses a freed pair", async () => {
    const t = tenant();
    // a partitions quota above the pairs (the default, 10,000 partitions, would refuse first)
    expect((await tenantStub(env, t).putQuotas({ ...UNLIMITED, partitions: MAX_TOPIC_PAIRS + 1 }, true)).ok).toBe(true);
    const stub = registryStub(env, t);
    await runInDurableObject(stub, async (reg: TopicRegistry) => {
      for (let i = 0; i < MAX_TOPIC_PAIRS; i++) {
        const r = await reg.declare(`t${i}`, 1);
        if (!r.ok) throw new Error(`declare ${i}: ${r.message}`);
      }
      expect(await reg.declare("one-too-many", 1)).toMatchObject({ ok: false, code: ErrorCode.MUTATION_NOT_PACKABLE });
      expect(await reg.declare("t99", 0, DeclareFlags.DELETE)).toMatchObject({ ok: true, topicId: 199 });
      expect(await reg.declare("reuse", 1)).toMatchObject({ ok: true, topicId: 199, created: 0 });
    });
    await drainPurges(t);
  }, 60_000);
});
