/**
 * SENDs a NATS connection pipelines to one mailbox share one Mailbox RPC
 * (SendCoalescer → Mailbox.sendMany): every SEND still gets its own reply,
 * msg_ids follow submission order, and errors stay per SEND.
 */
import { describe, expect, it } from "vitest";
import { handleMq9Request } from "../../worker/mq9/dispatch";
import { SendCoalescer } from "../../worker/mq9/sendbatch";
import { MailboxStubs } from "../../worker/mq9/stubs";
import { createMailbox, freshAddress, query, text } from "./mq9-helpers";
import { testEnv as env } from "./nats-ws";

const enc = new TextEncoder();

function send(sends: SendCoalescer, address: string, payload: string, headers: Record<string, string> = {}) {
  return handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${address}`, headers: new Map(Object.entries(headers)), payload: enc.encode(payload) }, { sends });
}

describe("SEND coalescing", () => {
  it("answers each pipelined SEND with its own msg_id, in order, stored with its own payload and headers", async () => {
    const a = await createMailbox();
    const b = await createMailbox();
    const sends = new SendCoalescer();
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
    const stored = await query(a);
    expect(stored.map(text)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(stored[3].priority).toBe("urgent");
    // later SENDs (another run) keep counting
    expect((await send(sends, a, "later")).body).toEqual({ error: "", msg_id: 20 });
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
    // a cached stub works like a fresh one
    const box = await createMailbox();
    expect((await handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${box}`, headers: new Map(), payload: enc.encode("x") }, { stubs })).body).toEqual({ error: "", msg_id: 0 });
    expect((await handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.SEND.${box}`, headers: new Map(), payload: enc.encode("y") }, { stubs })).body).toEqual({ error: "", msg_id: 1 });
  });
});
