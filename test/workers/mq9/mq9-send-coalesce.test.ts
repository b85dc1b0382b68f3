/**
 * SENDs a NATS connection pipelines to one mailbox share one Mailbox RPC
 * (MailboxLanes → Mailbox.sendMany): every SEND still gets its own reply,
 * msg_ids follow submission order, and errors stay per SEND.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Mailbox } from "../../../objects/mailbox/Mailbox";
import { parseFetchRequest, parseMq9Headers, parseQueryRequest } from "../../../wire/mq9";
import { objectName } from "../../../objects/shared/names";
import { CREATE_ADMITTED_NOW } from "../../../objects/tenants/connection-auth";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import { replyJson } from "../../../objects/mq9/reply";
import { mailboxStub } from "../../../objects/mailbox/stub";
import type { Env } from "../../../objects/env";
import { MailboxLanes } from "../../../objects/mq9/sendbatch";
import { MailboxStubs } from "../../../objects/mq9/stubs";
import { createMailbox, freshAddress, query, text } from "../helpers/mq9";
import { messageRows, messageTableRows } from "../helpers/mailbox-rows";
import { testEnv as env } from "../helpers/nats-ws";

const enc = new TextEncoder();

function send(sends: MailboxLanes, address: string, payload: string, headers: Record<string, string> = {}) {
  return handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${address}`, headers: new Map(Object.entries(headers)), payload: enc.encode(payload) }, { sends });
}

describe("SEND coalescing", () => {
  it("answers each pipelined SEND with its own msg_id, in order, stored with its own payload and headers", async () => {
    const a = await createMailbox();
    const b = await createMailbox();
    const sends = new MailboxLanes();
    const replies = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => send(sends, a, `m${i}`, i === 3 ? { "mq9-priority": "urgent" } : {})),
      send(sends, b, "other mailbox"),
      send(sends, a, "bad header", { "mq9-priority": "high" }),
      send(sends, freshAddress("missing"), "nowhere"),
    ]);
    expect(replies.slice(0, 20).map((r) => r.body)).toEqual(Array.from({ length: 20 }, (_, i) => ({ error: "", msg_id: i })));
    expect(replies[20].body).toEqual({ error: "", msg_id: 0 });
    expect(replies[21].status).toBe(400);
    expect(replies[22].status).toBe(404);
    for (const r of replies) expect(replyJson(r)).toBe(JSON.stringify(r.body)); // the reply text SENDs write directly is the body's JSON
    const stored = await query(a);
    expect(stored.map(text)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(stored[3].priority).toBe("urgent");
    // later SENDs (another run) keep counting
    expect((await send(sends, a, "later")).body).toEqual({ error: "", msg_id: 20 });
  });
});

describe("SENDs of one group stored together (Mailbox.appendPlain: one segment row per commit)", () => {
  it("a pipelined run of 25 SENDs (13 plain ones in a row) with TTLs, tags, reply-to and a keyed and a delayed SEND among them: ids, rows and TTL schedule as one at a time", async () => {
    const a = await createMailbox();
    const sends = new MailboxLanes();
    const headers = (i: number): Record<string, string> =>
      i === 13 ? { "mq9-key": "k" } : i === 20 ? { "mq9-delay": "30" } : i % 3 === 0 ? { "mq9-ttl": "60", "mq9-tags": "x,y" } : i % 5 === 0 ? { "mq9-reply-to": "back.box", "mq9-correlation-id": `c${i}` } : {};
    const replies = await Promise.all(Array.from({ length: 25 }, (_, i) => send(sends, a, `m${i}`, headers(i))));
    // the delayed SEND answers -1 and takes no id; the rest count up in order
    const ids = replies.map((r) => r.body.msg_id);
    expect(ids).toEqual([...Array.from({ length: 20 }, (_, i) => i), -1, ...Array.from({ length: 4 }, (_, i) => 20 + i)]);
    const stub = mailboxStub(env as unknown as Env, "default", a);
    const { messages, schedule, segments, rows } = await runInDurableObject(stub, (_o: Mailbox, state) => ({
      messages: messageRows(state.storage.sql).map((r) => ({
        msg_id: r.msg_id, key: r.key, tags: r.tags, size: r.size, ttl_ms: r.expires_ms === null ? null : r.expires_ms - r.create_ms,
        reply_to: r.reply_to, correlation_id: r.correlation_id,
      })),
      schedule: state.storage.sql.exec("SELECT kind, ref, due_ms FROM schedule ORDER BY kind, ref").toArray(),
      segments: state.storage.sql.exec("SELECT seg_id, last_id, min_exp FROM segments ORDER BY seg_id").toArray(),
      rows: messageTableRows(state.storage.sql),
    }));
    const sent = Array.from({ length: 25 }, (_, i) => i).filter((i) => i !== 20);
    expect(messages).toEqual(sent.map((i, n) => ({
      msg_id: n, key: i === 13 ? "k" : null, tags: i % 3 === 0 ? ",x,y," : null, size: `m${i}`.length,
      ttl_ms: i % 3 === 0 ? 60_000 : null,
      reply_to: i % 3 !== 0 && i % 5 === 0 ? "back.box" : null, correlation_id: i % 3 !== 0 && i % 5 === 0 ? `c${i}` : null,
    })));
    expect(schedule.filter((r) => r.kind === "deliver").length).toBe(1); // the delayed one
    // one TTL schedule row per segment holding messages with a TTL, due at its earliest expiry
    const expiring = segments.filter((g) => sent.some((i, n) => i % 3 === 0 && n >= (g.seg_id as number) && n <= (g.last_id as number)));
    expect(schedule.filter((r) => r.kind === "expire").map((r) => [r.ref, r.due_ms])).toEqual(expiring.map((g) => [g.seg_id, g.min_exp]));
    expect(rows.segments).toBeLessThan(messages.length); // SENDs sharing a commit share a segment row
    expect(rows.keys).toBe(1);
    expect((await query(a)).map(text)).toEqual(sent.map((i) => `m${i}`));
  });
});

describe("MailboxStubs (per-connection stub cache)", () => {
  it("reuses a stub per mailbox, drops the least recently used beyond its size, and forgets evicted ones", async () => {
    const stubs = new MailboxStubs(env, 2);
    const a = stubs.get("default", "a.box");
    expect(a.key).toBe("default/a.box");
    expect(stubs.get("default", "a.box").stub).toBe(a.stub);
    const b = stubs.get("default", "b.box");
    stubs.get("default", "a.box"); // a most recently used
    stubs.get("default", "c.box"); // evicts b
    expect(stubs.get("default", "a.box").stub).toBe(a.stub);
    expect(stubs.get("default", "b.box").stub).not.toBe(b.stub);
    stubs.evict("default/a.box");
    expect(stubs.get("default", "a.box").stub).not.toBe(a.stub);
    expect(stubs.get("other", "a.box").key).toBe("other/a.box");
    const again = stubs.get("other", "a.box"); // the one handed out last
    expect(again.stub).toBe(stubs.get("other", "a.box").stub);
    stubs.evict("other/a.box");
    expect(stubs.get("other", "a.box").stub).not.toBe(again.stub); // evicting it forgets it too
    // a cached stub works like a fresh one
    const box = await createMailbox();
    expect((await handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${box}`, headers: new Map(), payload: enc.encode("x") }, { stubs })).body).toEqual({ error: "", msg_id: 0 });
    expect((await handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${box}`, headers: new Map(), payload: enc.encode("y") }, { stubs })).body).toEqual({ error: "", msg_id: 1 });
  });
});

describe("order of pipelined requests on one connection", () => {
  /** A Mailbox stub that records the order in which RPCs are issued to it. */
  function recordingStubs(calls: string[]): MailboxStubs {
    const ok = { ok: true, msgId: 0, messages: [] };
    const stub = {
      send: () => (calls.push("send"), ok),
      sendMany: (_a: string, _opts: unknown[], payloads: unknown[]) => (calls.push(`sendMany(${payloads.length})`), payloads.map(() => 0)),
      query: () => (calls.push("query"), ok),
      fetchMessages: () => (calls.push("fetch"), ok),
      ack: () => (calls.push("ack"), ok),
      deleteMessage: () => (calls.push("delete"), ok),
      create: () => (calls.push("create"), ok),
    };
    return { get: (tenant: string, address: string) => ({ key: `${tenant}/${address}`, stub }), evict: () => {} } as unknown as MailboxStubs;
  }

  it("a QUERY, FETCH, ACK or DELETE issued after SENDs to the same mailbox reaches the Mailbox after them", async () => {
    for (const [verb, body, rpc] of [
      ["QUERY", "{}", "query"],
      ["FETCH", '{"config":{"max_wait_ms":0}}', "fetch"],
      ["ACK", '{"group_name":"g","mail_address":"order.box","msg_id":0}', "ack"],
      ["DELETE", "", "delete"],
    ] as const) {
      const calls: string[] = [];
      const ctx = { sends: new MailboxLanes(), stubs: recordingStubs(calls) };
      const req = (subject: string, payload: string) =>
        handleMq9Request(env, "default", { subject, headers: new Map(), payload: enc.encode(payload) }, ctx);
      // as a NatsSession runs the requests of one WebSocket message: started back to back, in order
      const done = [
        req("$mq9.AI.MSG.SEND.order.box", "a"),
        req("$mq9.AI.MSG.SEND.order.box", "b"),
        req(`$mq9.AI.MSG.${verb}.order.box${verb === "DELETE" ? ".0" : ""}`, body),
      ];
      await Promise.all(done);
      expect(calls, verb).toEqual(["sendMany(2)", rpc]);
    }
  });

  it("a SEND waiting for a publish-rate lease keeps its place: later requests to that mailbox reach it after the SEND", async () => {
    const calls: string[] = [];
    let grant!: () => void;
    const lease = new Promise<null>((resolve) => (grant = () => resolve(null)));
    let first = true;
    // the first SEND must wait for a lease (as PublishGate.admitAsync answers then); the rest are admitted at once
    const quota = { admitSend: () => (first ? ((first = false), lease) : Promise.resolve(null)), admitCreate: () => CREATE_ADMITTED_NOW };
    const ctx = { sends: new MailboxLanes(), stubs: recordingStubs(calls), quota };
    const req = (subject: string, payload: string) =>
      handleMq9Request(env, "default", { subject, headers: new Map(), payload: enc.encode(payload) }, ctx);
    const done = [
      req("$mq9.AI.MSG.SEND.order.box", "a"),
      req("$mq9.AI.MSG.QUERY.order.box", "{}"),
      req("$mq9.AI.MSG.SEND.order.box", "b"),
      req("$mq9.AI.MSG.SEND.other.box", "c"), // another mailbox does not wait
    ];
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual(["send"]);
    grant();
    const replies = await Promise.all(done);
    expect(calls).toEqual(["send", "send", "query", "send"]);
    expect(replies.map((r) => r.body.error)).toEqual(["", "", "", ""]);
  });

  it("a SEND refused by a rate lease after waiting is not issued, and does not hold up the requests behind it", async () => {
    const calls: string[] = [];
    const refusal = { kind: "rate" as const, message: "publish rate limit exceeded (1 msg/s)", retryAfterMs: 1500 };
    let first = true;
    const quota = { admitSend: () => (first ? ((first = false), Promise.resolve(refusal)) : Promise.resolve(null)), admitCreate: () => CREATE_ADMITTED_NOW };
    const ctx = { sends: new MailboxLanes(), stubs: recordingStubs(calls), quota };
    const req = (subject: string, payload: string) =>
      handleMq9Request(env, "default", { subject, headers: new Map(), payload: enc.encode(payload) }, ctx);
    const [a, q, b] = await Promise.all([
      req("$mq9.AI.MSG.SEND.order.box", "a"),
      req("$mq9.AI.MSG.QUERY.order.box", "{}"),
      req("$mq9.AI.MSG.SEND.order.box", "b"),
    ]);
    expect(a.status).toBe(429);
    expect(a.retryAfterS).toBe(2);
    expect(a.body.error).toContain("publish rate limit exceeded");
    expect([q.status, b.status]).toEqual([200, 200]);
    expect(calls).toEqual(["query", "send"]);
  });
});

describe("order inside the Mailbox while a commit is in flight", () => {
  it("a QUERY, FETCH, ACK or DELETE arriving after SENDs that wait for the commit in flight sees them", async () => {
    const a = await createMailbox();
    const stub = env.MAILBOX.get(env.MAILBOX.idFromName(objectName("mailbox", "default", a)));
    const seen = await runInDurableObject(stub, async (box) => {
      const none = parseMq9Headers([]);
      // called back to back, as the RPCs of one connection arrive: the first SEND starts a commit, the next ones queue behind it
      const s0 = box.send(a, none, enc.encode("m0"));
      const s1 = box.sendMany(a, [none, none], [enc.encode("m1"), enc.encode("m2")]);
      const q = box.query(a, parseQueryRequest(enc.encode("{}")));
      const f = box.fetchMessages(a, parseFetchRequest(enc.encode('{"group_name":"g","deliver":"earliest","config":{"max_wait_ms":0}}')));
      await Promise.all([s0, s1]);
      const ack = box.ack(a, "g", 2);
      const del = box.deleteMessage(a, 2);
      return { query: await q, fetch: await f, ack: await ack, del: await del };
    });
    const ids = (r: unknown) => ((r as { messages: { msg_id: number }[] }).messages ?? []).map((m) => m.msg_id);
    expect(ids(seen.query)).toEqual([0, 1, 2]);
    expect(ids(seen.fetch)).toEqual([0, 1, 2]);
    expect(seen.ack).toEqual({ ok: true });
    expect(seen.del).toEqual({ ok: true, deleted: true });
  });
});
