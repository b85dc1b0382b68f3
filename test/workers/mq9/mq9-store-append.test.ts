import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore, type NewMessage } from "../../../objects/mailbox/store";
import type { Env } from "../../../objects/env";

const msg = (over: Partial<NewMessage> = {}): NewMessage => ({
  lane: 2, key: null, tags: [], payload: new Uint8Array([7]), sentMs: 1000, expiresMs: null, replyTo: null, correlationId: null, ...over,
});

describe("MailboxStore appends without a transaction", () => {
  it("appendIsOneStatement: only keyless messages without TTL, at most one multi-row INSERT of them", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-one-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      expect(store.appendIsOneStatement([msg()])).toBe(true);
      expect(store.appendIsOneStatement(Array.from({ length: 97 }, () => msg()))).toBe(true); // one bound value a row
      expect(store.appendIsOneStatement(Array.from({ length: 98 }, () => msg()))).toBe(false); // two INSERTs
      const distinct = Array.from({ length: 20 }, (_, i) => msg({ lane: (i % 3) as NewMessage["lane"], tags: [`t${i}`], replyTo: `r${i}`, correlationId: `c${i}` }));
      expect(store.appendIsOneStatement(distinct.slice(0, 19))).toBe(true); // five bound values a row
      expect(store.appendIsOneStatement(distinct)).toBe(false);
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

  it("appendVisibleMany stores the rows appendVisible stores one at a time, however the rows share their columns", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-same-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      store.createMailbox({ address: "a.box", createdMs: 0, ttlSec: 0, expiresMs: null, nextMsgId: 0 });
      const rows = () => state.storage.sql.exec("SELECT * FROM messages ORDER BY msg_id").toArray()
        .map((r) => ({ ...r, msg_id: (r.msg_id as number) % 1000, payload: [...new Uint8Array(r.payload as ArrayBuffer)].join(","), type: typeof r.payload }));
      const schedule = () => state.storage.sql.exec("SELECT ref % 1000 AS ref, due_ms FROM schedule WHERE kind = 'expire' ORDER BY ref").toArray();
      const varied = (i: number): NewMessage => msg({
        lane: (i % 3) as NewMessage["lane"], tags: i % 4 ? [`t${i}`, "x.y"] : [], replyTo: i % 5 ? `r.box${i % 2}` : null,
        correlationId: i % 2 ? 'c "1" \\ é ✓ 😀' : null, expiresMs: i % 3 ? 9000 + i : null, payload: new Uint8Array(i % 7).fill(i),
      });
      const runs: NewMessage[][] = [
        [msg(), msg({ payload: new Uint8Array(0) }), msg({ payload: new Uint8Array([0, 255, 10, 13]) })], // only payloads differ
        Array.from({ length: 40 }, (_, i) => varied(i)), // every column differs: several INSERTs
        Array.from({ length: 5 }, () => msg({ lane: 0, tags: ["a"], replyTo: "r", correlationId: "c", expiresMs: 7777 })), // all shared
      ];
      for (const ms of runs) {
        state.storage.sql.exec("DELETE FROM messages");
        state.storage.sql.exec("DELETE FROM schedule WHERE kind = 'expire'");
        state.storage.transactionSync(() => store.appendVisibleMany(0, ms, 1234));
        const [many, manySchedule] = [rows(), schedule()];
        state.storage.sql.exec("DELETE FROM messages");
        state.storage.sql.exec("DELETE FROM schedule WHERE kind = 'expire'");
        ms.forEach((m, i) => store.appendVisible(1000 + i, m, 1234));
        expect(many).toEqual(rows());
        expect(manySchedule).toEqual(schedule());
        expect(many.map((r) => (r as Record<string, unknown>).size)).toEqual(ms.map((m) => m.payload.byteLength));
        expect(many.every((r) => r.type === "object")).toBe(true); // a blob, also when empty
      }
    });
  });
});
