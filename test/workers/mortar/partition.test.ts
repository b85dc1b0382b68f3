import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Durability, ErrorCode, MAX_VALUE_LEN, Op, type PubFrame } from "../../../wire/mortar";
import { PubBatchBuilder } from "../../../objects/partition/batch";
import { Partition } from "../../../objects/partition/Partition";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import { AppendStatus, type AppendResult } from "../../../objects/partition/rpc";
import { sameBytes } from "../helpers/mortar-ws";

let n = 0;
/** Declares topic_id 1 (incarnation 1, 8 partitions) in a fresh tenant: a Partition registers with its topic before it first writes. */
async function tenantWithTopic(): Promise<string> {
  const t = `part-${++n}-${Math.random().toString(36).slice(2, 8)}`;
  const d = await registryStub(env, t).declare("t", 8);
  if (!d.ok || d.topicId !== 1 || d.topic.incarnation !== 1) throw new Error("declare");
  return t;
}
const fresh = async () => partitionStub(env, await tenantWithTopic(), 1, 1, 0);
const enc = new TextEncoder();

function pub(value: string | Uint8Array, producerId = 0n, producerSeq = 0n, key = ""): PubFrame {
  return {
    op: Op.PUB, topicId: 1, partition: 0, producerId, producerSeq, flags: 0,
    key: enc.encode(key), value: typeof value === "string" ? enc.encode(value) : value,
  };
}

function batch(...frames: PubFrame[]): Uint8Array {
  const b = new PubBatchBuilder();
  for (const f of frames) b.add(f);
  return b.finish();
}

const summary = (r: AppendResult) => [...r.status].map((s, i) => (s === AppendStatus.REJECTED ? `E${r.codes[i].toString(16)}` : `${s === AppendStatus.DUPLICATE ? "D" : "A"}${r.sequences[i]}`));

describe("Partition.append", () => {
  it("numbers records from 1, commits a batch as one segment, reports local durability", async () => {
    const p = await fresh();
    const r = await p.append(batch(pub("a", 0n, 0n, "k1"), pub("b"), pub("c")));
    expect(summary(r)).toEqual(["A1", "A2", "A3"]);
    expect(r).toMatchObject({ commitSeq: 3, durability: Durability.LOCAL, leaderEpoch: 1 });
    expect(summary(await p.append(batch(pub("d"))))).toEqual(["A4"]);
    const recs = await p.read(1, 10);
    expect(recs.map((x) => [x.sequence, new TextDecoder().decode(x.value), new TextDecoder().decode(x.key)])).toEqual([
      [1, "a", "k1"], [2, "b", ""], [3, "c", ""], [4, "d", ""],
    ]);
    await runInDurableObject(p, async (_i, ctx) => {
      expect(ctx.storage.sql.exec("SELECT count(*) AS n FROM log").one().n).toBe(2); // two batches → two rows
    });
    expect(await p.info()).toMatchObject({ records: 4, firstSequence: 1, lastSequence: 4, nonIdempotentPublishes: 4 });
  });

  it("deduplicates retries with their ORIGINAL sequence and rejects producer_id 0 with a seq", async () => {
    const p = await fresh();
    expect(summary(await p.append(batch(pub("a", 7n, 1n), pub("b", 7n, 2n), pub("x", 0n, 5n))))).toEqual(["A1", "A2", "E13"]);
    expect(summary(await p.append(batch(pub("b again", 7n, 2n), pub("c", 7n, 3n), pub("a again", 7n, 1n))))).toEqual(["D2", "A3", "D1"]);
    expect(summary(await p.append(batch(pub("other producer", 8n, 1n))))).toEqual(["A4"]);
    expect((await p.read(1, 10)).map((x) => [x.sequence, x.producerId, x.producerSeq])).toEqual([
      [1, 7n, 1n], [2, 7n, 2n], [3, 7n, 3n], [4, 8n, 1n],
    ]);
    expect((await p.info()).nonIdempotentPublishes).toBe(0);
  });

  it("accepts a gap and fills skipped values inside the window; only a seq ≤ highest − 1024 is PRODUCER_SEQ_OUT_OF_WINDOW (0x0014)", async () => {
    const p = await fresh();
    const frames = Array.from({ length: 1100 }, (_, i) => pub(`m${i}`, 3n, BigInt(i + 1)));
    const r = await p.append(batch(...frames));
    expect(r.commitSeq).toBe(1100);
    expect(summary(await p.append(batch(pub("gap", 3n, 2000n))))).toEqual(["A1101"]);
    // window = the values 977..2000: 1101..1999 were never appended (gap fill), 977..1100 and 2000 were
    expect(summary(await p.append(batch(pub("", 3n, 1500n), pub("", 3n, 976n), pub("", 3n, 977n), pub("", 3n, 2000n), pub("", 3n, 1500n))))).toEqual([
      "A1102", "E14", "D977", "D1101", "D1102",
    ]);
    expect(summary(await p.append(batch(pub("", 3n, 1101n), pub("", 3n, 77n))))).toEqual(["A1103", "E14"]);
    expect((await p.info()).lastSequence).toBe(1103);
  });

  it("prunes stored appends that left the window and still answers duplicates inside it", async () => {
    const p = await fresh();
    for (let b = 0; b < 5; b++) {
      await p.append(batch(...Array.from({ length: 1000 }, (_, i) => pub("", 4n, BigInt(b * 1000 + i + 1)))));
    }
    expect(summary(await p.append(batch(pub("", 4n, 3977n), pub("", 4n, 3976n), pub("", 4n, 4500n))))).toEqual(["D3977", "E14", "D4500"]);
    await runInDurableObject(p, async (_i, ctx) => {
      // rows whose largest producer_seq ≤ highest − 1024 were deleted when highest crossed 4096
      expect(ctx.storage.sql.exec("SELECT count(*) AS n FROM producer_appends").one().n).toBeLessThanOrEqual(2);
    });
  });

  it("migrates the pre-bitmap producer tables (window of the last 1024 appends) at start", async () => {
    const p = await fresh();
    await runInDurableObject(p, async (_inst, ctx) => {
      const sql = ctx.storage.sql;
      sql.exec("DROP TABLE producer_window; DROP TABLE producer_appends;");
      sql.exec("CREATE TABLE producers(pid BLOB PRIMARY KEY, highest BLOB NOT NULL, ordinal INTEGER NOT NULL) WITHOUT ROWID");
      sql.exec(`CREATE TABLE producer_runs(pid BLOB NOT NULL, first_pseq BLOB NOT NULL, last_pseq BLOB NOT NULL, first_ordinal INTEGER NOT NULL,
        count INTEGER NOT NULL, entries BLOB NOT NULL, PRIMARY KEY(pid, first_pseq)) WITHOUT ROWID`);
      // producer 6 appended seqs 10 and 12 (sequences 1 and 2) in one batch
      const u64 = (v: bigint) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, v); return b; };
      const entries = new Uint8Array(32);
      const dv = new DataView(entries.buffer);
      dv.setBigUint64(0, 10n); dv.setBigUint64(8, 1n); dv.setBigUint64(16, 12n); dv.setBigUint64(24, 2n);
      sql.exec("INSERT INTO producers VALUES (?,?,?)", u64(6n), u64(12n), 2);
      sql.exec("INSERT INTO producer_runs VALUES (?,?,?,?,?,?)", u64(6n), u64(10n), u64(12n), 1, 2, entries);
      sql.exec("INSERT OR REPLACE INTO partition_meta(k, v) VALUES ('last_seq', 2)");
      const restarted = new Partition(ctx, env);
      expect(summary(await restarted.append(batch(pub("", 6n, 12n), pub("", 6n, 11n), pub("", 6n, 10n), pub("", 6n, 13n))))).toEqual(["D2", "A3", "D1", "A4"]);
      expect(sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('producers', 'producer_runs')").one().n).toBe(0);
    });
  });

  it("starts on the layout of a release before retention: sums the log totals once, adds the groups' retention_skipped column", async () => {
    const p = await fresh();
    await p.append(batch(pub("abc"), pub("de", 0n, 0n, "k")));
    await p.append(batch(pub("fghij")));
    await p.assign("g", 1, null, 0);
    await runInDurableObject(p, async (_inst, ctx) => {
      const sql = ctx.storage.sql;
      sql.exec("DELETE FROM partition_meta WHERE k IN ('log_count', 'log_bytes')");
      sql.exec(`CREATE TABLE old_groups(gid INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
        next INTEGER NOT NULL, epoch INTEGER NOT NULL, owner TEXT, delivered INTEGER NOT NULL DEFAULT 0, acked INTEGER NOT NULL DEFAULT 0,
        redelivered INTEGER NOT NULL DEFAULT 0, dead_lettered INTEGER NOT NULL DEFAULT 0)`);
      sql.exec("INSERT INTO old_groups(gid, name, next, epoch, owner) SELECT gid, name, next, epoch, owner FROM consumer_groups");
      sql.exec("DROP TABLE consumer_groups; ALTER TABLE old_groups RENAME TO consumer_groups");
      const restarted = new Partition(ctx, env);
      expect(await restarted.info()).toMatchObject({ records: 3, retainedBytes: 11, firstSequence: 1, lastSequence: 3 });
      expect((await restarted.info()).groups).toMatchObject([{ group: "g", nextSequence: 1, retentionSkipped: 0 }]);
      expect(sql.exec("SELECT v FROM partition_meta WHERE k = 'log_count'").one().v).toBe(3);
      expect(summary(await restarted.append(batch(pub("k")))).at(0)).toBe("A4");
      expect((await restarted.info()).retainedBytes).toBe(12);
    });
  });

  it("stores the log totals every 256 segments, not per append; a restart sums the segments after them", async () => {
    const p = await fresh();
    for (let i = 0; i < 3; i++) await p.append(batch(pub("ab"), pub("c", 9n, BigInt(i + 1))));
    const meta = (sql: SqlStorage) => Object.fromEntries(sql.exec<{ k: string; v: number }>("SELECT k, v FROM partition_meta WHERE k IN ('log_count', 'log_through', 'non_idempotent')").toArray().map((r) => [r.k, r.v]));
    await runInDurableObject(p, async (_inst, ctx) => {
      expect(meta(ctx.storage.sql)).toEqual({}); // nothing stored yet: fewer than 256 segments
      const restarted = new Partition(ctx, env);
      expect(await restarted.info()).toMatchObject({ records: 6, retainedBytes: 9, nonIdempotentPublishes: 3 });
      for (let i = 0; i < 256; i++) await restarted.append(batch(pub("x")));
      expect(meta(ctx.storage.sql)).toEqual({ log_count: 262, log_through: 262, non_idempotent: 259 });
      await restarted.append(batch(pub("yz"), pub("w")));
      const again = new Partition(ctx, env);
      expect(await again.info()).toMatchObject({ records: 264, retainedBytes: 268, lastSequence: 264, nonIdempotentPublishes: 261 });
    });
  });

  it("keeps producer state and sequences across a restart; the leader epoch goes up each start", async () => {
    const p = await fresh();
    await p.append(batch(pub("a", 5n, 10n)));
    await runInDurableObject(p, async (_inst, ctx) => {
      const restarted = new Partition(ctx, env); // what the runtime does when the object starts again
      const r = await restarted.append(batch(pub("a", 5n, 10n), pub("b", 5n, 11n)));
      expect(summary(r)).toEqual(["D1", "A2"]);
      expect(r.leaderEpoch).toBe(2);
      expect(ctx.storage.sql.exec("SELECT v FROM partition_meta WHERE k = 'leader_epoch'").one().v).toBe(2);
    });
  });

  it("still reports LOCAL durability after the object restarts on stored data (local workerd)", async () => {
    const name = await tenantWithTopic();
    const p = partitionStub(env, name, 1, 1, 0);
    expect((await p.append(batch(pub("a")))).durability).toBe(Durability.LOCAL);
    await runInDurableObject(p, (_inst, ctx) => ctx.abort("restart")).catch(() => {}); // the runtime restarts the object
    const r = await partitionStub(env, name, 1, 1, 0).append(batch(pub("b")));
    expect([r.leaderEpoch, r.commitSeq]).toEqual([2, 2]);
    expect(r.durability).toBe(Durability.LOCAL);
  });

  it("a failed append reserves nothing: the retry is appended, not answered as a duplicate", async () => {
    const p = await fresh();
    await runInDurableObject(p, async (inst: Partition) => {
      const log = (inst as unknown as { log: { appendSegments: (...a: unknown[]) => void } }).log;
      const real = log.appendSegments.bind(log);
      log.appendSegments = () => {
        throw new Error("injected storage failure");
      };
      const failed = await inst.append(batch(pub("a", 4n, 1n), pub("b", 4n, 2n)));
      expect(failed.error?.code).toBe(ErrorCode.STORAGE_UNAVAILABLE);
      expect(summary(failed)).toEqual(Array(2).fill(`E${ErrorCode.STORAGE_UNAVAILABLE.toString(16)}`));
      log.appendSegments = real;
      expect(summary(await inst.append(batch(pub("a", 4n, 1n), pub("b", 4n, 2n))))).toEqual(["A1", "A2"]);
      expect(summary(await inst.append(batch(pub("a", 4n, 1n))))).toEqual(["D1"]);
    });
  });

  it("stores a MAX_VALUE_LEN (16 MiB − 1 KiB) value intact across chunk rows", async () => {
    const p = await fresh();
    const value = new Uint8Array(MAX_VALUE_LEN);
    for (let i = 0; i < value.length; i += 4096) value[i] = (i / 4096) & 0xff;
    value[value.length - 1] = 0xab;
    expect(summary(await p.append(batch(pub("small"), pub(value, 1n, 1n, "big"), pub("after"))))).toEqual(["A1", "A2", "A3"]);
    const [rec] = await p.read(2, 1, 1);
    expect(rec.sequence).toBe(2);
    expect(rec.value.length).toBe(MAX_VALUE_LEN);
    expect(sameBytes(rec.value, value)).toBe(true);
    await runInDurableObject(p, async (_i, ctx) => {
      const rows = ctx.storage.sql.exec<{ n: number; m: number }>("SELECT count(*) AS n, max(length(data)) AS m FROM log_chunk").one();
      expect(rows.n).toBeGreaterThanOrEqual(15);
      expect(rows.m).toBeLessThanOrEqual(1024 * 1024);
    });
    // the record after the big one is still readable, and maxBytes stops before the big value
    expect((await p.read(1, 10, 1000)).map((r) => r.sequence)).toEqual([1]);
    expect((await p.read(3, 10)).map((r) => new TextDecoder().decode(r.value))).toEqual(["after"]);
  });

  it("refuses appends after markDeleted and purges its records", async () => {
    const p = await fresh();
    await p.append(batch(pub("a"), pub("b")));
    await p.markDeleted();
    expect((await p.append(batch(pub("c")))).error?.code).toBe(ErrorCode.TOPIC_DELETED);
    for (let i = 0; i < 40 && (await p.info()).records > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await p.info()).toMatchObject({ records: 0, deleted: true });
  });
});

