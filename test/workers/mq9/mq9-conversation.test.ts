/**
 * The conversation extension (docs/mq9.md "Conversations"): `mq9-reply-to`
 * and `mq9-correlation-id` on SEND, stored with the message, returned by
 * FETCH and QUERY as `reply_to` / `correlation_id`, QUERY filter
 * `correlation_id` — over HTTP and over the NATS protocol alike.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { MailboxStore } from "../../../objects/mailbox/store";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { createMailbox, fetchMsgs, mq9, query, send, text } from "../helpers/mq9";
import { openNats } from "../helpers/nats-ws";

const CONNECT = 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stubOf = (address: string) => mailboxStub(env as unknown as Env, "default", address);

describe("mq9-reply-to / mq9-correlation-id over HTTP", () => {
  it("are stored with the message and returned by FETCH and QUERY; messages without them carry neither field", async () => {
    const a = await createMailbox();
    expect(await send(a, "question", { "mq9-reply-to": "agent.b.inbox", "mq9-correlation-id": "req-1" })).toBe(0);
    expect(await send(a, "plain")).toBe(1);
    expect(await send(a, "only-cid", { "MQ9-Correlation-Id": "  req-2  " })).toBe(2);
    const fetched = await fetchMsgs(a, { deliver: "earliest" });
    expect(fetched.map((m) => [text(m), m.reply_to, m.correlation_id])).toEqual([
      ["question", "agent.b.inbox", "req-1"],
      ["plain", undefined, undefined],
      ["only-cid", undefined, "req-2"],
    ]);
    expect(Object.keys(fetched[1]!).sort()).toEqual(["create_time", "key", "msg_id", "payload", "priority", "tags"]);
    expect(await query(a)).toEqual(fetched);
  });

  it("QUERY filters on correlation_id, combined with the other filters (AND)", async () => {
    const a = await createMailbox();
    await send(a, "r1", { "mq9-correlation-id": "c.1", "mq9-tags": "x" });
    await send(a, "r2", { "mq9-correlation-id": "c.2" });
    await send(a, "r1b", { "mq9-correlation-id": "c.1" });
    await send(a, "none");
    expect((await query(a, { correlation_id: "c.1" })).map(text)).toEqual(["r1", "r1b"]);
    expect((await query(a, { correlation_id: "c.1", tags: ["x"] })).map(text)).toEqual(["r1"]);
    expect((await query(a, { correlation_id: "c.1", limit: 1 })).map(text)).toEqual(["r1b"]);
    expect(await query(a, { correlation_id: "c.3" })).toEqual([]);
    const bad = await mq9(`$mq9.AI.MSG.QUERY.${a}`, { correlation_id: "x".repeat(129) });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe(`invalid request field correlation_id "${"x".repeat(128)}…": longer than 128 bytes`);
  });

  it("refuses an invalid value with 400 and stores nothing", async () => {
    const a = await createMailbox();
    const r1 = await mq9(`$mq9.AI.MSG.SEND.${a}`, "x", { "mq9-reply-to": "Agent.B" });
    expect(r1).toEqual({ status: 400, body: { error: 'invalid mq9-reply-to "Agent.B": contains upper-case "A" (addresses are lower case) (it must be a mail_address)' } });
    const r2 = await mq9(`$mq9.AI.MSG.SEND.${a}`, "x", { "mq9-correlation-id": "x".repeat(129) });
    expect(r2.status).toBe(400);
    expect(r2.body.error).toContain("longer than 128 bytes");
    expect(await query(a)).toEqual([]);
  });

  it("a delayed message keeps both when it becomes visible; key compaction keeps the newest message's", async () => {
    const a = await createMailbox();
    expect(await send(a, "later", { "mq9-delay": "1", "mq9-reply-to": "r.box", "mq9-correlation-id": "d-1" })).toBe(-1);
    expect(await send(a, "v1", { "mq9-key": "k", "mq9-reply-to": "old.box", "mq9-correlation-id": "k-1" })).toBe(0);
    expect(await send(a, "v2", { "mq9-key": "k", "mq9-correlation-id": "k-2" })).toBe(1);
    await sleep(1050);
    await runDurableObjectAlarm(stubOf(a));
    const got = await query(a);
    expect(got.map((m) => [m.msg_id, text(m), m.reply_to, m.correlation_id])).toEqual([
      [1, "v2", undefined, "k-2"],
      [2, "later", "r.box", "d-1"],
    ]);
  });

  it("the stored bytes (storage quota, mortarmq_stored_bytes) count the reply-to address and correlation id", async () => {
    const a = await createMailbox();
    await send(a, "abc", { "mq9-reply-to": "r.box", "mq9-correlation-id": "id-1" });
    await send(a, "later", { "mq9-delay": "3600", "mq9-correlation-id": "id-22" });
    const bytes = await runInDurableObject(stubOf(a), (_obj, state) => new MailboxStore(state.storage.sql).storedBytes());
    expect(bytes).toBe(3 + 5 + 4 + 5 + 5);
  });
});

describe("mq9-reply-to / mq9-correlation-id over NATS", () => {
  it("HPUB headers give the same stored fields and the same QUERY reply as HTTP", async () => {
    const a = await createMailbox();
    const c = await openNats();
    const hdr = "NATS/1.0\r\nmq9-reply-to: agent.b.inbox\r\nMq9-Correlation-Id: req-9\r\n\r\n";
    const body = "over nats";
    c.send(`${CONNECT}SUB _INBOX.c.* 1\r\nHPUB $mq9.AI.MSG.SEND.${a} _INBOX.c.1 ${hdr.length} ${hdr.length + body.length}\r\n${hdr}${body}\r\n`);
    const sent = await c.waitFor(/MSG _INBOX\.c\.1 1 \d+\r\n(.*)\r\n/);
    expect(JSON.parse(sent[1]!)).toEqual({ error: "", msg_id: 0 });
    const q = JSON.stringify({ correlation_id: "req-9" });
    c.send(`PUB $mq9.AI.MSG.QUERY.${a} _INBOX.c.2 ${q.length}\r\n${q}\r\n`);
    const queried = await c.waitFor(/MSG _INBOX\.c\.2 1 \d+\r\n(.*)\r\n/);
    const overNats = JSON.parse(queried[1]!) as { error: string; messages: unknown[] };
    expect(overNats.messages).toHaveLength(1);
    expect(overNats.messages[0]).toMatchObject({ msg_id: 0, reply_to: "agent.b.inbox", correlation_id: "req-9" });
    expect((await mq9(`$mq9.AI.MSG.QUERY.${a}`, { correlation_id: "req-9" })).body).toEqual(overNats);
    const badHdr = "NATS/1.0\r\nmq9-reply-to: not_an_address\r\n\r\n";
    c.send(`HPUB $mq9.AI.MSG.SEND.${a} _INBOX.c.3 ${badHdr.length} ${badHdr.length + 1}\r\n${badHdr}x\r\n`);
    const refused = await c.waitFor(/MSG _INBOX\.c\.3 1 \d+\r\n(.*)\r\n/);
    expect(JSON.parse(refused[1]!)).toEqual({ error: 'invalid mq9-reply-to "not_an_address": contains "_" (allowed: a-z, 0-9 and ".") (it must be a mail_address)' });
    c.ws.close();
  });
});
