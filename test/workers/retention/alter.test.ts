/**
 * Retention settings through DECLARE (docs/protocol.md "Topic retention"):
 * the RETENTION flag and tail, the OK tail with the settings in force,
 * alters (created 2), the CONNECT features answer — and a v0 peer, which
 * sends no tail and gets exactly the v0 answers. Also the push of a change
 * to the partitions, the `.dlq` twin's own settings, and the errors.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  ConnectClientFlags, DeclareCreated, DeclareFlags, Discard, ErrorCode, Op, RetentionFields, ServerFeatures, WIRE_VERSION,
  decodeConnectFeatures, decodeDeclareResult, utf8Bytes, type Frame, type OkFrame,
} from "../../../wire/mortar";
import { registryStub } from "../../../objects/registry/stub";
import type { RegisterResult } from "../../../objects/registry/rpc";
import { WsConn, expectErr, expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";
import { until } from "../../fixtures/until";
import { declareFrame, infoOf, statsOf, tail, topicOf, unique } from "./helpers";

/** A raw connection that CONNECTs with `clientFlags`; returns it and the CONNECT OK. */
async function open(clientFlags: number): Promise<{ c: WsConn; ok: OkFrame }> {
  const c = await WsConn.open();
  c.send([{ op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags, token: new Uint8Array(0), reserved: 0 }]);
  return { c, ok: expectOk((await c.take(1))[0], Op.CONNECT) };
}

async function ask(c: WsConn, f: Frame): Promise<Frame> {
  c.send([f]);
  return (await c.take(1))[0]!;
}

const v0Declare = (name: string, partitions: number): Frame => ({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: partitions, flags: 0 });

describe("DECLARE with the RETENTION flag", () => {
  it("creates and alters; the OK carries the settings in force; a v0 peer sends no tail and gets the v0 answers, unaffected", async () => {
    const { c: cur, ok: curOk } = await open(ConnectClientFlags.FEATURES);
    expect(curOk.result.length).toBe(4);
    expect(decodeConnectFeatures(curOk.result)).toBe(ServerFeatures.RETENTION);
    const { c: old, ok: oldOk } = await open(0);
    expect(oldOk.result.length).toBe(0); // a v0 CONNECT gets the empty v0 result

    const name = unique("alter");
    const created = expectOk(await ask(cur, declareFrame(name, 2, { ms: 3_600_000, discard: "new" })), Op.DECLARE);
    expect(created.result.length).toBe(30);
    expect(decodeDeclareResult(created.result)).toEqual({
      topicId: expect.any(Number), partitionCount: 2, created: DeclareCreated.CREATED,
      retention: { retentionMs: 3_600_000n, retentionBytes: 8n * 1024n ** 3n, retentionMessages: 0n, discard: Discard.NEW },
    });
    const topicId = decodeDeclareResult(created.result).topicId;

    const v0 = expectOk(await ask(old, v0Declare(name, 2)), Op.DECLARE);
    expect(v0.result.length).toBe(5);
    expect(decodeDeclareResult(v0.result)).toEqual({ topicId, partitionCount: 2, created: DeclareCreated.IDEMPOTENT_OK });
    expect(pubResult(await ask(old, pubFrame(topicId, 0, "from v0"))).sequence).toBe(1n);

    // alter: partition_count 0 = the topic's count; only the fields set change
    const altered = decodeDeclareResult(expectOk(await ask(cur, declareFrame(name, 0, { bytes: 4096 })), Op.DECLARE).result);
    expect(altered).toEqual({
      topicId, partitionCount: 2, created: DeclareCreated.ALTERED,
      retention: { retentionMs: 3_600_000n, retentionBytes: 4096n, retentionMessages: 0n, discard: Discard.NEW },
    });
    const again = decodeDeclareResult(expectOk(await ask(cur, declareFrame(name, 2, { bytes: 4096 })), Op.DECLARE).result);
    expect(again.created).toBe(DeclareCreated.IDEMPOTENT_OK); // nothing changed
    const read = decodeDeclareResult(expectOk(await ask(cur, declareFrame(name, 0, {})), Op.DECLARE).result); // no field: a read
    expect([read.created, read.retention]).toEqual([DeclareCreated.IDEMPOTENT_OK, altered.retention]);

    // the v0 peer still gets 5-byte answers and its v0 rules (count 0 without DELETE is refused)
    expect(expectOk(await ask(old, v0Declare(name, 2)), Op.DECLARE).result.length).toBe(5);
    expectErr(await ask(old, v0Declare(name, 0)), ErrorCode.INVALID_PARTITION_COUNT, Op.DECLARE);
    expect(pubResult(await ask(old, pubFrame(topicId, 0, "still fine"))).sequence).toBe(2n);

    // the registered partition was told (the registry's push), and /stats shows the settings
    const t = await topicOf(topicId);
    await until(async () => (await infoOf(t)).retention.bytes === 4096);
    expect((await infoOf(t)).retention).toEqual({ ms: 3_600_000, bytes: 4096, messages: 0, discard: "new", version: 1, topic: name }); // one change since creation
    expect((await statsOf(name)).retention).toEqual({ retention_ms: 3_600_000, retention_bytes: 4096, retention_messages: 0, discard: "new" });
    cur.close();
    old.close();
  });

  it("a lowered limit deletes stored records at once on every written partition; one written later gets the settings when it registers", async () => {
    const { c } = await open(ConnectClientFlags.FEATURES);
    const name = unique("lower");
    const d = decodeDeclareResult(expectOk(await ask(c, declareFrame(name, 3, { ms: 0 })), Op.DECLARE).result);
    for (const part of [0, 1]) {
      for (let i = 0; i < 10; i++) pubResult(await ask(c, pubFrame(d.topicId, part, `p${part}-${i}`)));
    }
    const t = await topicOf(d.topicId);
    expect((await infoOf(t, 0)).records).toBe(10);
    expectOk(await ask(c, declareFrame(name, 0, { messages: 3 })), Op.DECLARE);
    for (const part of [0, 1]) {
      await until(async () => (await infoOf(t, part)).records === 3);
      expect(await infoOf(t, part)).toMatchObject({ firstSequence: 8, lastSequence: 10 });
    }
    for (let i = 0; i < 5; i++) pubResult(await ask(c, pubFrame(d.topicId, 2, `p2-${i}`)));
    expect(await infoOf(t, 2)).toMatchObject({ records: 3, firstSequence: 3, retention: { messages: 3 } });
    c.close();
  });

  it("the .dlq twin has its own settings: by default its source's (following later changes), until it sets a field", async () => {
    const { c } = await open(ConnectClientFlags.FEATURES);
    const name = unique("twin");
    const src = decodeDeclareResult(expectOk(await ask(c, declareFrame(name, 1, { ms: 60_000 })), Op.DECLARE).result);
    const twinOf = async () => decodeDeclareResult(expectOk(await ask(c, declareFrame(`${name}.dlq`, 0, {})), Op.DECLARE).result);
    const twin = await twinOf();
    expect([twin.topicId, twin.retention]).toEqual([src.topicId + 1, src.retention]);
    expectOk(await ask(c, declareFrame(name, 0, { ms: 120_000 })), Op.DECLARE);
    expect((await twinOf()).retention?.retentionMs).toBe(120_000n); // follows its source
    const own = decodeDeclareResult(expectOk(await ask(c, declareFrame(`${name}.dlq`, 1, { messages: 7 })), Op.DECLARE).result);
    expect([own.created, own.retention?.retentionMessages, own.retention?.retentionMs]).toEqual([DeclareCreated.ALTERED, 7n, 120_000n]);
    const srcNow = decodeDeclareResult(expectOk(await ask(c, declareFrame(name, 0, { messages: 9 })), Op.DECLARE).result);
    expect(srcNow.retention?.retentionMessages).toBe(9n); // the source's own value…
    expect((await twinOf()).retention?.retentionMessages).toBe(7n); // …and the twin keeps the one it set
    // what a twin partition is told when it registers (its first dead letter)
    const t = await topicOf(src.topicId);
    const reg = (await registryStub(env, "default").registerPartition(t.incarnation, src.topicId + 1, 0)) as RegisterResult;
    expect(reg).toMatchObject({ live: true, retention: { topic: `${name}.dlq`, overrides: { ms: 120_000, messages: 7, bytes: null, discard: null } } });
    c.close();
  });

  it("bad retention requests get an ERR and the connection stays open", async () => {
    const { c } = await open(ConnectClientFlags.FEATURES);
    const name = unique("bad");
    expectOk(await ask(c, declareFrame(name, 1, {})), Op.DECLARE);
    const withTail = (flags: number, fields: number, discard = 0): Frame => ({
      op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: 1, flags,
      retention: { ...tail({}), fields, discard },
    });
    expectErr(await ask(c, withTail(DeclareFlags.RETENTION | DeclareFlags.DELETE, 0)), ErrorCode.INVALID_FLAGS, Op.DECLARE);
    expectErr(await ask(c, withTail(DeclareFlags.RETENTION, 0x10)), ErrorCode.INVALID_FLAGS, Op.DECLARE);
    expectErr(await ask(c, withTail(DeclareFlags.RETENTION, RetentionFields.DISCARD, 2)), ErrorCode.INVALID_FLAGS, Op.DECLARE);
    expectErr(await ask(c, declareFrame(unique("missing"), 0, { ms: 1 })), ErrorCode.UNKNOWN_TOPIC, Op.DECLARE);
    expectErr(await ask(c, declareFrame(name, 3, { ms: 1 })), ErrorCode.PARTITION_COUNT_MISMATCH, Op.DECLARE);
    expectErr(await ask(c, declareFrame(`${unique("orphan")}.dlq`, 1, { ms: 1 })), ErrorCode.TOPIC_NAME_RESERVED, Op.DECLARE);
    const stillOpen = decodeDeclareResult(expectOk(await ask(c, declareFrame(name, 0, {})), Op.DECLARE).result);
    expect(stillOpen.retention?.retentionMs).toBe(600n); // nothing was changed by the refused requests
    c.close();
  });
});
