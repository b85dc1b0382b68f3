import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore, type NewMessage } from "../../objects/mailbox/store";
import type { Env } from "../../objects/env";
import { CHUNK_PAYLOAD_BYTES } from "../../objects/mailbox/insert-rows";

const msg = (over: Partial<NewMessage> = {}): NewMessage => ({
  lane: 2, key: null, tags: [], payload: new Uint8Array([7]), sentMs: 1000, expiresMs: null, replyTo: null, correlationId: null, ...over,
});

describe("MailboxStore appends without a transaction", () => {
  it("appendIsOneStatement: only keyless messages without TTL, at most one INSERT (one chunk) of them", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-one-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      expect(store.appendIsOneStatement([msg()])).toBe(true);
      expect(store.appendIsOneStatement(Array.from({ length: 200 }, () => msg()))).toBe(true);
      const big = msg({ payload: new Uint8Array(CHUNK_PAYLOAD_BYTES / 2 + 1) });
      expect(store.appendIsOneStatement([big, big])).toBe(false); // two INSERTs: over one chunk's payload bytes
      expect(store.appendIsOneStatement([msg(), msg({ expiresMs: 5000 })])).toBe(false); // + a schedule row
      expect(store.appendIsOneStatement([msg({ key: "k" })])).toBe(false); // + the compaction DELETE
    });
  });

  it("a one-statement append that fails stores none of its rows", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-fail-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      store.createMailbox({ address: "a.box", createdMs: 0, ttlSec: 0, expiresMs: null, nextMsgId: 0 });
      store.appendVisibleMany(0, [msg(), msg()], 1000);
      const batch = [msg(), msg(), msg()]; // ids 1, 2, 3: 1 is taken, so the whole INSERT fails
      expect(store.appendIsOneStatement(batch)).toBe(true);
      expect(() => store.appendVisibleMany(1, batch, 2000)).toThrow();
      const ids = state.storage.sql.exec("SELECT msg_id FROM messages ORDER BY msg_id").toArray().map((r) => r.msg_id);
      expect(ids).toEqual([0, 1]);
    });
  });

  it("appendVisibleMany stores the rows appendVisible stores, one at a time, across chunks", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-same-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      store.createMailbox({ address: "a.box", createdMs: 0, ttlSec: 0, expiresMs: null, nextMsgId: 0 });
      const ms: NewMessage[] = [
        msg(),
        msg({ payload: new Uint8Array(0) }), // zero-length: stored as a zero-length blob, not NULL
        msg({ lane: 0, tags: ["a", "b.c"], replyTo: "r.box", correlationId: 'c "1" \\ é ✓ 😀' }),
        msg({ lane: 1, expiresMs: 9000, payload: new Uint8Array([0, 255, 10, 13, 0]) }),
        msg({ payload: new Uint8Array(CHUNK_PAYLOAD_BYTES - 3).fill(9) }), // fills the first chunk: the next goes into a second
        msg({ payload: new Uint8Array([1, 2, 3, 4]), tags: ["x"] }),
        msg({ payload: new Uint8Array(0) }),
      ];
      const rows = () => state.storage.sql.exec("SELECT * FROM messages ORDER BY msg_id").toArray()
        .map((r) => ({ ...r, msg_id: (r.msg_id as number) % 100, payload: [...new Uint8Array(r.payload as ArrayBuffer)].join(","), t: typeof r.payload }));
      const schedule = () => state.storage.sql.exec("SELECT kind, ref % 100 AS ref, due_ms FROM schedule WHERE kind = 'expire' ORDER BY ref").toArray();
      state.storage.transactionSync(() => store.appendVisibleMany(0, ms, 1234));
      const many = rows();
      const manySchedule = schedule();
      state.storage.sql.exec("DELETE FROM messages");
      state.storage.sql.exec("DELETE FROM schedule");
      ms.forEach((m, i) => store.appendVisible(100 + i, m, 1234));
      expect(many).toEqual(rows());
      expect(manySchedule).toEqual(schedule());
      expect(many.map((r) => (r as Record<string, unknown>).size)).toEqual(ms.map((m) => m.payload.byteLength));
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM messages WHERE typeof(payload) = 'blob'").one().n).toBe(ms.length);
    });
  });
});
