/**
 * MortarSession in the Workers runtime: what only the runtime shows — real
 * WebSocket messages and close codes, streams cut across messages, one
 * connection's errors not touching another, the real Registry and
 * Partition behind PUB (codes, dedupe, stored bytes, topic delete), storage
 * cleanup and the alarm. The protocol rules of one connection (what is
 * allowed before CONNECT, pipelining order, framing errors, backpressure
 * bounds) are shown frame by frame in Node: test/unit/mortar-session.test.ts.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  DeclareFlags, ErrorCode, MAX_VALUE_LEN, Op, PubResultFlags, SUB_PARTITION_ANY, encodeFrame, encodeFrames, utf8Bytes,
  type Frame,
} from "../../../wire/mortar";
import { MortarSession as MortarSessionObject, type MortarSession } from "../../../objects/session/MortarSession";
import type { Connection } from "../../../objects/session/connection";
import type { Deadlines } from "../../../objects/session-base/deadlines";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import { OPEN_TENANT } from "../../../objects/tenants/auth";
import type { LookupResult } from "../../../objects/registry/rpc";
import { WsConn, connectFrame, expectErr, expectOk, pubFrame, pubResult, sameBytes } from "../helpers/mortar-ws";
import { cut, deliverInOrder } from "../helpers/deliver";
import { newSessionStub } from "../../../objects/session/stub";

let n = 0;
/** A topic name unique to this test run (all tests share the open tenant's registry). */
const topicName = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function connected(): Promise<WsConn> {
  const c = await WsConn.open();
  await c.connect();
  return c;
}

/** A session opened straight on its stub, so a test can reach into it and run its alarm. */
async function directSession() {
  const stub = newSessionStub(env);
  const c = await WsConn.open(stub);
  return { stub, c };
}

const errText = (f: Frame | undefined) => (f && f.op === Op.ERR ? new TextDecoder().decode(f.message) : "");

describe("session rules", () => {
  it("reassembles frames that arrive one byte per message", async () => {
    const { stub, c } = await directSession();
    const bytes = encodeFrames([connectFrame(), { op: Op.PING }, { op: Op.PING }]);
    await deliverInOrder(stub, cut(bytes, 1));
    const out = await c.take(3);
    expectOk(out[0], Op.CONNECT);
    expectOk(out[1], Op.PING);
    expectOk(out[2], Op.PING);
    c.close();
  });

  it("stores PUBs cut one byte per message exactly as sent, in order", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    const { topicId } = await c.declare(topicName("bytewise"), 1);
    const values = Array.from({ length: 40 }, (_, i) => `value ${i} ${"#".repeat(i % 7)}`);
    await deliverInOrder(stub, cut(encodeFrames(values.map((v) => pubFrame(topicId, 0, v))), 1));
    const seqs = (await c.take(values.length)).map((f) => Number(pubResult(f).sequence));
    expect(seqs).toEqual(values.map((_, i) => i + 1));
    const look = (await registryStub(env, OPEN_TENANT).lookup(topicId)) as LookupResult;
    if (!look.ok) throw new Error(look.message);
    const stored = await partitionStub(env, OPEN_TENANT, look.topic.incarnation, topicId, 0).read(1, values.length);
    expect(stored.map((r) => new TextDecoder().decode(r.value))).toEqual(values);
    c.close();
  });

  it("a DECLARE in the message right after CONNECT's runs after the CONNECT (messages delivered back to back)", async () => {
    const { stub, c } = await directSession();
    const declare: Frame = { op: Op.DECLARE, topic: utf8Bytes(topicName("after-connect")), partitionCount: 1, flags: 0 };
    await deliverInOrder(stub, [encodeFrame(connectFrame()), encodeFrame(declare)]);
    const [conn, decl] = await c.take(2);
    expectOk(conn, Op.CONNECT);
    expectOk(decl, Op.DECLARE); // not NOT_CONNECTED
    c.close();
  });
});

describe("framing errors close only their own connection", () => {
  it.each([
    ["length 0", Uint8Array.of(0, 0, 0, 0), ErrorCode.FRAME_LENGTH_INVALID],
    ["length above MAX_FRAME_LEN", Uint8Array.of(0x01, 0, 0, 1, 7), ErrorCode.FRAME_LENGTH_INVALID],
    ["op 0x00", Uint8Array.of(0, 0, 0, 1, 0), ErrorCode.ILLEGAL_OP],
    ["reserved op 0x42", Uint8Array.of(0, 0, 0, 1, 0x42), ErrorCode.UNKNOWN_OP],
    ["PING with a trailing byte", Uint8Array.of(0, 0, 0, 2, Op.PING, 9), ErrorCode.MALFORMED_PAYLOAD],
  ])("%s → ERR then close", async (_name, bytes, code) => {
    const victim = await connected();
    const bystander = await connected();
    victim.send(bytes);
    expectErr((await victim.take(1))[0], code);
    expect((await victim.waitClosed()).code).toBe(1002);
    bystander.send([{ op: Op.PING }]);
    expectOk((await bystander.take(1))[0], Op.PING);
    bystander.close();
  });

  it("a text message is refused", async () => {
    const c = await connected();
    c.ws.send("PING");
    expectErr((await c.take(1))[0], ErrorCode.MALFORMED_PAYLOAD);
    await c.waitClosed();
  });
});

describe("PUB input checks", () => {
  it("answers each bad PUB with its code and keeps the connection", async () => {
    const c = await connected();
    const { topicId } = await c.declare(topicName("bad"), 2);
    c.send([
      pubFrame(60001, 0, "x"),
      pubFrame(topicId, 2, "x"),
      pubFrame(topicId, 0, "x", { key: new Uint8Array(256) }),
      pubFrame(topicId, 0, new Uint8Array(MAX_VALUE_LEN + 1)),
      pubFrame(topicId, 0, "x", { producerId: 0n, producerSeq: 5n }),
      pubFrame(topicId, 0, "x", { flags: 0x8000 }),
      pubFrame(topicId, 1, "fine", { key: new Uint8Array(255) }),
    ]);
    const out = await c.take(7, 20_000);
    expectErr(out[0], ErrorCode.UNKNOWN_TOPIC, Op.PUB);
    expectErr(out[1], ErrorCode.PARTITION_OUT_OF_RANGE, Op.PUB);
    expectErr(out[2], ErrorCode.KEY_TOO_LONG, Op.PUB);
    expectErr(out[3], ErrorCode.VALUE_TOO_LONG, Op.PUB);
    expectErr(out[4], ErrorCode.INVALID_PRODUCER_FIELDS, Op.PUB);
    expectErr(out[5], ErrorCode.INVALID_FLAGS, Op.PUB);
    expect(pubResult(out[6]).sequence).toBe(1n);
    c.close();
  }, 30_000);

  it("inner lengths that disagree with the frame are MALFORMED_PAYLOAD and close", async () => {
    const c = await connected();
    const { topicId } = await c.declare(topicName("malformed"), 1);
    const frame = encodeFrame(pubFrame(topicId, 0, "hello"));
    const v = new DataView(frame.buffer);
    v.setUint32(frame.length - 9, 6); // value_len says 6, the frame carries 5
    c.send(frame);
    expectErr((await c.take(1))[0], ErrorCode.MALFORMED_PAYLOAD, Op.PUB);
    await c.waitClosed();
  });

  it("deduplicates an idempotent retry with the original sequence", async () => {
    const c = await connected();
    const { topicId } = await c.declare(topicName("idem"), 1);
    const p = (seq: bigint, v: string) => pubFrame(topicId, 0, v, { producerId: 77n, producerSeq: seq });
    c.send([p(1n, "a"), p(2n, "b"), p(1n, "a"), p(3n, "c"), p(2n, "b")]);
    const r = (await c.take(5)).map(pubResult);
    expect(r.map((x) => [x.sequence, x.resultFlags])).toEqual([
      [1n, 0], [2n, 0], [1n, PubResultFlags.DEDUPLICATED], [3n, 0], [2n, PubResultFlags.DEDUPLICATED],
    ]);
    expect(r[4].commitSeq).toBe(3n);
    expect(r[0].durability).toBe(1);
    c.close();
  });

  it("a 16 MiB − 1 KiB value is committed and stored intact", async () => {
    const c = await connected();
    const name = topicName("big");
    const { topicId } = await c.declare(name, 1);
    const value = new Uint8Array(MAX_VALUE_LEN);
    for (let i = 0; i < value.length; i++) value[i] = (i * 31 + (i >> 12)) & 0xff;
    c.send([pubFrame(topicId, 0, value, { key: utf8Bytes("k") }), pubFrame(topicId, 0, "next")]);
    const [big, next] = await c.take(2, 30_000);
    expect(pubResult(big).sequence).toBe(1n);
    expect(pubResult(next).sequence).toBe(2n);
    const look = (await registryStub(env, OPEN_TENANT).lookup(topicId)) as LookupResult;
    if (!look.ok) throw new Error(look.message);
    const [stored] = await partitionStub(env, OPEN_TENANT, look.topic.incarnation, topicId, 0).read(1, 1);
    expect(stored.value.length).toBe(MAX_VALUE_LEN);
    expect(sameBytes(stored.value, value)).toBe(true);
    expect(new TextDecoder().decode(stored.key)).toBe("k");
    c.close();
  }, 60_000);
});

describe("topic delete", () => {
  it("stops PUBs at once on the deleting connection; a recreated topic starts empty", async () => {
    const c = await connected();
    const name = topicName("del");
    const { topicId } = await c.declare(name, 1);
    c.send([pubFrame(topicId, 0, "old 1"), pubFrame(topicId, 0, "old 2")]);
    await c.take(2);
    c.send([
      { op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: 0, flags: DeclareFlags.DELETE },
      pubFrame(topicId, 0, "after delete"),
    ]);
    const [del, pub] = await c.take(2);
    expectOk(del, Op.DECLARE);
    expectErr(pub, ErrorCode.TOPIC_DELETED, Op.PUB);
    const again = await c.declare(name, 1);
    expect(again.created).toBe(0);
    c.send([pubFrame(again.topicId, 0, "new 1")]);
    expect(pubResult((await c.take(1))[0]).sequence).toBe(1n);
    c.close();
  });
});

describe("backpressure", () => {
  it("an idempotent PUB refused with BACKPRESSURE is appended when resent after later PUBs (gap fill), exactly once", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    await runInDurableObject(stub, async (s: MortarSession) => {
      (s as unknown as { conn: Connection }).conn.maxPendingBytes = 1000;
    });
    const name = topicName("bp-idem");
    const { topicId: id } = await c.declare(name, 1);
    const p = (seq: bigint) => pubFrame(id, 0, new Uint8Array(400), { producerId: 7n, producerSeq: seq });
    // The DECLARE is a barrier: the PUBs behind it wait, counted as unanswered bytes; the third is refused.
    c.send([{ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: 1, flags: 0 }, p(1n), p(2n), p(3n)]);
    const out = await c.take(4);
    expectOk(out[0], Op.DECLARE);
    expect(pubResult(out[1]).sequence).toBe(1n);
    expect(pubResult(out[2]).sequence).toBe(2n);
    expectErr(out[3], ErrorCode.BACKPRESSURE, Op.PUB);
    c.send([p(4n)]);
    expect(pubResult((await c.take(1))[0]).sequence).toBe(3n);
    c.send([p(3n)]); // the client's retry of the refused PUB, after seq 4 was appended
    const filled = pubResult((await c.take(1))[0]);
    expect([filled.sequence, filled.resultFlags]).toEqual([4n, 0]);
    c.send([p(3n), p(4n)]); // and again: now duplicates with their original sequences
    const [d3, d4] = (await c.take(2)).map(pubResult);
    expect([d3.sequence, d3.resultFlags, d4.sequence, d4.resultFlags]).toEqual([4n, PubResultFlags.DEDUPLICATED, 3n, PubResultFlags.DEDUPLICATED]);
    c.close();
  });
});

describe("session storage", () => {
  const tables = (stub: DurableObjectStub<MortarSession>) => runInDurableObject(stub, async (_s, ctx) => ({
    tables: ctx.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'").toArray().map((r) => r.name),
    alarm: await ctx.storage.getAlarm(),
  }));

  it("is deleted when the client closes the connection (no SQLite rows or alarm left behind)", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    expect(await tables(stub)).toMatchObject({ tables: [] }); // `subs` comes with the first group membership (#28 item 2)
    expect((await tables(stub)).alarm).not.toBeNull();
    c.close();
    // the final report reaches the aggregator first (slower on a loaded machine), then the storage goes
    for (let i = 0; i < 200 && JSON.stringify(await tables(stub)) !== JSON.stringify({ tables: [], alarm: null }); i++) await new Promise((r) => setTimeout(r, 25));
    expect(await tables(stub)).toEqual({ tables: [], alarm: null });
  });

  it("records its subscriptions' snapshot in `consumer`, created by the first one (a session without groups writes no table)", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    const { topicId } = await c.declare(`subs-${Date.now().toString(36)}`, 1);
    c.send([{ op: Op.SUB, group: utf8Bytes("g"), topicId, partition: SUB_PARTITION_ANY, startPolicy: 0, creditCount: 1, creditBytes: 0, flags: 0 }]);
    const rows = () => runInDurableObject(stub, async (_s, ctx) =>
      ctx.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'consumer'").toArray().length > 0
        ? ctx.storage.sql.exec<{ state: string }>("SELECT state FROM consumer").toArray()
          .flatMap((r) => (JSON.parse(r.state) as { subs: { group: string; memberId: number }[] }).subs.filter((x) => x.memberId > 0).map((x) => x.group)) : null);
    for (let i = 0; i < 80 && !(await rows())?.length; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await rows()).toEqual(["g"]);
    c.close();
  });

  it("rebuilt with subscriptions it cannot resume (an earlier version's `subs` rows): closes 1011 and forgets them", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    await runInDurableObject(stub, (_s, ctx) => {
      ctx.storage.sql.exec(`CREATE TABLE subs(sub_id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, incarnation INTEGER NOT NULL,
        topic_id INTEGER NOT NULL, grp TEXT NOT NULL, member_id INTEGER NOT NULL, membership_epoch INTEGER NOT NULL)`);
      ctx.storage.sql.exec("INSERT INTO subs VALUES (1, 'default', 1, 999, 'g', 7, 1)");
      new MortarSessionObject(ctx, env); // what the runtime does when the object starts again
    });
    expect((await c.waitClosed()).code).toBe(1011);
    expect(await runInDurableObject(stub, (_s, ctx) => ctx.storage.sql.exec("SELECT * FROM subs").toArray().length)).toBe(0);
  });

  it("is deleted when the broker closes the connection (after a closing ERR)", async () => {
    const { stub, c } = await directSession();
    c.send([pubFrame(1, 0, "before CONNECT")]);
    expectErr((await c.take(1))[0], ErrorCode.NOT_CONNECTED, Op.PUB);
    await c.waitClosed();
    for (let i = 0; i < 40 && (await tables(stub)).tables.length > 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await tables(stub)).toEqual({ tables: [], alarm: null });
  });
});

/** The session's deadlines (objects/session-base/deadlines.ts), reached into so a test need not wait for them. */
type WithDeadlines = { deadlines: Deadlines };

describe("timers (deadlines: one storage alarm for the keepalive, a resident timer for a partial frame)", () => {
  it("closes a connection that sends no CONNECT within 10 s (CONNECTION_TIMEOUT, close 1008); PINGs do not extend it", async () => {
    const opened = Date.now();
    const { stub, c } = await directSession();
    const connectBy = () => runInDurableObject(stub, async (s: MortarSession) => (s as unknown as WithDeadlines).deadlines.get("connect"));
    const before = await connectBy();
    expect(before).toBeGreaterThanOrEqual(opened + 10_000);
    expect(before).toBeLessThan(Date.now() + 10_000 + 1);
    c.send([{ op: Op.PING }]);
    expectOk((await c.take(1))[0], Op.PING);
    expect(await connectBy()).toBe(before); // a frame before CONNECT does not move it
    await runInDurableObject(stub, async (s: MortarSession) => {
      const d = (s as unknown as WithDeadlines).deadlines;
      d.set("connect", d.get("connect")! - 10_001, "resident"); // the deadline passed; the PING just now is a recent frame
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const [err] = await c.take(1);
    expectErr(err, ErrorCode.CONNECTION_TIMEOUT, 0);
    expect(errText(err)).toMatch(/^no CONNECT within 10 s of opening the connection$/);
    expect((await c.waitClosed()).code).toBe(1008);
    expect(c.frames).toEqual([]);
  });

  it("a CONNECT before the deadline lifts it", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    expect(await runInDurableObject(stub, async (s: MortarSession) => (s as unknown as WithDeadlines).deadlines.has("connect"))).toBe(false);
    c.send([{ op: Op.PING }]);
    expectOk((await c.take(1))[0], Op.PING);
    expect(c.closed).toBeNull();
    c.close();
  });

  it("closes with CONNECTION_TIMEOUT after 45 s without a complete frame", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    await runInDurableObject(stub, async (s: MortarSession) => {
      const d = (s as unknown as WithDeadlines).deadlines;
      d.set("keepalive", d.get("keepalive")! - 46_000);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const [err] = await c.take(1);
    expectErr(err, ErrorCode.CONNECTION_TIMEOUT);
    expect(errText(err)).toMatch(/45 s/);
    await c.waitClosed();
  });

  it("a recent frame re-arms instead of closing", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    c.send([{ op: Op.PING }]);
    expectOk((await c.take(1))[0], Op.PING);
    expect(c.closed).toBeNull();
    c.close();
  });

  it("closes with CONNECTION_TIMEOUT when a partial frame stays buffered for 10 s", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    await deliverInOrder(stub, [Uint8Array.of(0, 0, 0, 9, Op.PUB, 0)]); // 6 of 13 bytes
    await runInDurableObject(stub, async (s: MortarSession) => {
      const d = (s as unknown as WithDeadlines).deadlines;
      expect(d.get("partial")).toBeGreaterThan(Date.now() + 9_000); // 10 s after the partial frame began
      d.set("partial", d.get("partial")! - 10_001, "resident");
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const [err] = await c.take(1);
    expectErr(err, ErrorCode.CONNECTION_TIMEOUT);
    expect(errText(err)).toMatch(/partial frame/);
    await c.waitClosed();
  });

  it("after a rebuild (hibernation), a frame moving the keepalive does not push the alarm past the token re-check", async () => {
    const { stub, c } = await directSession();
    await c.connect();
    const alarmAndRecheck = () => runInDurableObject(stub, async (s: MortarSession, ctx) => ({
      alarm: await ctx.storage.getAlarm(), recheck: (s as unknown as WithDeadlines).deadlines.get("tenant-recheck")!,
    }));
    const before = await alarmAndRecheck();
    expect(before.alarm).toBeLessThanOrEqual(before.recheck); // the re-check (30 s) comes before the keepalive (45 s)
    // what hibernation drops: the instance's memory; the socket, its attachment and the alarm stay
    await runInDurableObject(stub, async (s: MortarSession) => {
      Object.assign(s as unknown as Record<string, unknown>, { conn: null, socket: null, resumed: false, armedAt: Infinity, armedKnown: false });
    });
    c.send([{ op: Op.PING }]);
    expectOk((await c.take(1))[0], Op.PING);
    const after = await alarmAndRecheck();
    expect(after.recheck).toBeGreaterThanOrEqual(before.recheck); // restored with its slack
    expect(after.alarm).toBeLessThanOrEqual(after.recheck);
    c.close();
  });
});
