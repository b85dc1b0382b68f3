import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore, type NewMessage } from "../../objects/mailbox/store";
import type { Env } from "../../objects/env";

const msg = (over: Partial<NewMessage> = {}): NewMessage => ({
  lane: 2, key: null, tags: [], payload: new Uint8Array([7]), sentMs: 1000, expiresMs: null, replyTo: null, correlationId: null, ...over,
});

describe("MailboxStore appends without a transaction", () => {
  it("appendIsOneStatement: only keyless messages without TTL, at most one multi-row INSERT of them", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    await runInDurableObject(ns.get(ns.idFromName(`append-one-${Math.random()}`)), (_obj, state) => {
      const store = new MailboxStore(state.storage.sql);
      expect(store.appendIsOneStatement([msg()])).toBe(true);
      expect(store.appendIsOneStatement(Array.from({ length: 11 }, () => msg()))).toBe(true);
      expect(store.appendIsOneStatement(Array.from({ length: 12 }, () => msg()))).toBe(false); // two INSERTs
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
});
