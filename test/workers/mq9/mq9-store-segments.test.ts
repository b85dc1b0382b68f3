/** MailboxStore over segments (objects/mailbox/segment-store.ts): many messages to a row, exact keys, DELETE, TTLs, lanes and migration. */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore, toMq9Message, type NewMessage } from "../../../objects/mailbox/store";
import { BATCH_BYTES, BATCH_ROWS } from "../../../objects/mailbox/legacy-messages-store";
import { SEGMENT_MAX_BYTES } from "../../../objects/mailbox/segment-pack";
import type { Env } from "../../../objects/env";
import type { QuerySpec } from "../../../wire/mq9";
import { messageRows, messageTableRows } from "../helpers/mailbox-rows";

const msg = (over: Partial<NewMessage> = {}): NewMessage => ({
  lane: 2, key: null, tags: [], payload: new Uint8Array([7]), sentMs: 1000, expiresMs: null, replyTo: null, correlationId: null, ...over,
});
const NO_QUERY: QuerySpec = { key: null, limit: 100, sinceSec: null, tags: [], correlationId: null };

/** Runs `fn` with a fresh object's store holding an empty mailbox. */
async function withStore<T>(fn: (store: MailboxStore, sql: SqlStorage, state: DurableObjectState) => T): Promise<T> {
  const ns = (env as unknown as Env).MAILBOX;
  return runInDurableObject(ns.get(ns.idFromName(`segments-${Math.random()}`)), (_obj, state) => {
    const store = new MailboxStore(state.storage.sql);
    store.createMailbox({ address: "a.box", createdMs: 0, ttlSec: 0, expiresMs: null, nextMsgId: 0 });
    return fn(store, state.storage.sql, state);
  });
}

describe("MailboxStore segments", () => {
  it("a commit's messages share one row; every field reads back as stored", async () => {
    await withStore((store, sql) => {
      const ms = [
        msg(), msg({ lane: 0, tags: ["a", "b"], replyTo: "r.box", correlationId: 'c "1" é ✓ 😀', payload: new Uint8Array(0) }),
        msg({ lane: 1, deadLetter: '{"push_id":"p"}', payload: new Uint8Array([0, 255, 10, 13]) }),
      ];
      store.appendVisibleMany(0, ms, 1234);
      expect(messageTableRows(sql)).toEqual({ segments: 1, keys: 0 });
      expect(messageRows(sql).map((r) => ({ ...r, payload: [...r.payload] }))).toEqual([
        { msg_id: 0, lane: 2, key: null, tags: null, payload: [7], size: 1, create_ms: 1234, expires_ms: null, reply_to: null, correlation_id: null, dead_letter: null },
        { msg_id: 1, lane: 0, key: null, tags: ",a,b,", payload: [], size: 0, create_ms: 1234, expires_ms: null, reply_to: "r.box", correlation_id: 'c "1" é ✓ 😀', dead_letter: null },
        { msg_id: 2, lane: 1, key: null, tags: null, payload: [0, 255, 10, 13], size: 4, create_ms: 1234, expires_ms: null, reply_to: null, correlation_id: null, dead_letter: '{"push_id":"p"}' },
      ]);
      expect(store.laneTops()).toEqual([1, 2, 0]);
      expect(store.laneOf(1)).toBe(0);
      expect(store.message(2, 2000)?.deadLetter).toBe('{"push_id":"p"}');
      expect(store.storedBytes()).toBe(1 + 0 + 5 + 5 + 'c "1" é ✓ 😀'.length + 4);
      expect(store.loadMeta()?.nextMsgId).toBe(3);
      expect(store.appendIsOneStatement(ms)).toBe(true);
      expect(store.appendIsOneStatement([msg(), msg({ expiresMs: 5000 })])).toBe(false); // + a schedule row
      expect(store.appendIsOneStatement([msg({ key: "k" })])).toBe(false); // + the keys row
      const big = new Uint8Array(SEGMENT_MAX_BYTES / 2);
      expect(store.appendIsOneStatement([msg({ payload: big }), msg({ payload: big })])).toBe(false); // two segments
      expect(store.appendIsOneStatement([msg({ payload: new Uint8Array(SEGMENT_MAX_BYTES) })])).toBe(true); // one message is one segment
    });
  });

  it("a run past SEGMENT_MAX_BYTES is cut into segments; reads cross them in order, per lane", async () => {
    await withStore((store, sql) => {
      const payload = new Uint8Array(300 * 1024);
      store.appendVisibleMany(0, Array.from({ length: 7 }, (_, i) => msg({ lane: (i % 2 ? 2 : 1) as NewMessage["lane"], payload })), 1000);
      expect(messageTableRows(sql).segments).toBe(3);
      expect([...store.readLane(2, 2, 100, 2000)].map((m) => m.msgId)).toEqual([3, 5]);
      expect([...store.readLane(1, 0, 2, 2000)].map((m) => m.msgId)).toEqual([0, 2]);
      expect([...store.readLane(1, 5, 100, 2000)].map((m) => m.msgId)).toEqual([6]);
      expect(store.laneCounts(2000)).toEqual([{ messages: 0, bytes: 0 }, { messages: 4, bytes: 4 * payload.byteLength }, { messages: 3, bytes: 3 * payload.byteLength }]);
    });
  });

  it("key compaction is exact: the newest message with a key replaces the older one, stored or in the same commit", async () => {
    await withStore((store, sql) => {
      store.appendVisibleMany(0, [msg({ key: "k", payload: new Uint8Array([1]) }), msg(), msg({ key: "j" })], 1000);
      store.appendVisibleMany(3, [msg({ key: "k", payload: new Uint8Array([2]) }), msg({ key: "k", payload: new Uint8Array([3]) }), msg()], 2000);
      expect(messageRows(sql).map((r) => [r.msg_id, r.key])).toEqual([[1, null], [2, "j"], [4, "k"], [5, null]]);
      expect(messageTableRows(sql)).toEqual({ segments: 2, keys: 2 });
      const byKey = [...store.queryNewestFirst({ ...NO_QUERY, key: "k" }, 3000)].map(toMq9Message);
      expect(byKey.map((m) => [m.msg_id, m.payload])).toEqual([[4, "Aw=="]]);
      expect(store.deleteMessage(4, 6)).toBe(true);
      expect(messageTableRows(sql)).toEqual({ segments: 2, keys: 1 });
      expect([...store.queryNewestFirst({ ...NO_QUERY, key: "k" }, 3000)]).toEqual([]);
      store.appendVisible(6, msg({ key: "j" }), 4000);
      expect(messageRows(sql).map((r) => r.msg_id)).toEqual([1, 5, 6]);
    });
  });

  it("DELETE rewrites the segment and removes it with its last message; the next id survives", async () => {
    await withStore((store, sql) => {
      store.appendVisibleMany(0, [msg(), msg(), msg()], 1000);
      expect(store.deleteMessage(1, 3)).toBe(true);
      expect(store.deleteMessage(1, 3)).toBe(false);
      expect(store.deleteMessage(7, 3)).toBe(false);
      expect(messageRows(sql).map((r) => r.msg_id)).toEqual([0, 2]);
      expect(store.deleteMessage(0, 3) && store.deleteMessage(2, 3)).toBe(true);
      expect(messageTableRows(sql)).toEqual({ segments: 0, keys: 0 });
      expect(store.loadMeta()?.nextMsgId).toBe(3);
      expect(store.storedBytes()).toBe(0);
    });
  });

  it("TTLs: one schedule row per segment at its earliest expiry; expired messages go, the row moves on", async () => {
    await withStore((store, sql) => {
      store.appendVisibleMany(0, [msg({ expiresMs: 5000 }), msg(), msg({ expiresMs: 3000, key: "k" }), msg({ expiresMs: 9000 })], 1000);
      const sched = () => sql.exec("SELECT kind, ref, due_ms FROM schedule WHERE kind = 'expire'").toArray();
      expect(sched()).toEqual([{ kind: "expire", ref: 0, due_ms: 3000 }]);
      expect([...store.readLane(2, 0, 10, 4000)].map((m) => m.msgId)).toEqual([0, 1, 3]); // exact before the sweep
      expect(store.expireDue(4000, 10, 4)).toBe(1);
      expect(messageRows(sql).map((r) => r.msg_id)).toEqual([0, 1, 3]);
      expect(messageTableRows(sql).keys).toBe(0);
      expect(sched()).toEqual([{ kind: "expire", ref: 0, due_ms: 5000 }]);
      expect(store.expireDue(9500, 10, 4)).toBe(1);
      expect(messageRows(sql).map((r) => r.msg_id)).toEqual([1]);
      expect(sched()).toEqual([]);
      expect(store.earliestDue()).toBeNull();
    });
  });

  it("QUERY filters tags, time and correlation id, newest first; FETCH's from_time finds the first id", async () => {
    await withStore((store) => {
      store.appendVisibleMany(0, [msg({ tags: ["a"] }), msg({ tags: ["a", "b"], correlationId: "c" })], 1000);
      store.appendVisibleMany(2, [msg({ tags: ["b"] }), msg({ tags: ["ab"] })], 5000);
      const ids = (q: Partial<QuerySpec>) => [...store.queryNewestFirst({ ...NO_QUERY, ...q }, 6000)].map((m) => m.msgId);
      expect(ids({})).toEqual([3, 2, 1, 0]);
      expect(ids({ tags: ["a"] })).toEqual([1, 0]);
      expect(ids({ tags: ["a", "b"] })).toEqual([1]);
      expect(ids({ sinceSec: 5 })).toEqual([3, 2]);
      expect(ids({ correlationId: "c" })).toEqual([1]);
      expect(ids({ limit: 1 })).toEqual([3]);
      expect(store.firstIdCreatedAtOrAfter(2000)).toBe(2);
      expect(store.firstIdCreatedAtOrAfter(9000)).toBeNull();
    });
  });
});

describe("legacy per-message mailboxes", () => {
  it("are moved into segments on load in batches, keys and TTL schedule rows included", async () => {
    await withStore((store, sql) => {
      sql.exec(`CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL,
        size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER, reply_to TEXT, correlation_id TEXT)`);
      const n = BATCH_ROWS * 2 + 5;
      for (let i = 0; i < n; i++) {
        sql.exec("INSERT INTO messages VALUES (?, ?, ?, ?, ?, 1, ?, ?, NULL, NULL)",
          i * 2, i % 3, i === 7 ? "k" : null, i % 5 ? null : ",t,", new Uint8Array([i % 256]).buffer, 1000 + i, i % 4 ? null : 90_000 + i);
        if (i % 4 === 0) sql.exec("INSERT INTO schedule (kind, ref, due_ms) VALUES ('expire', ?, ?)", i * 2, 90_000 + i);
      }
      const batches: number[] = [];
      const meta = store.loadMeta((fn) => { batches.push(1); fn(); });
      expect(batches.length).toBe(5); // three of ≤ BATCH_ROWS rows, an empty one, then the DROP
      expect(meta?.nextMsgId).toBe(2 * (n - 1) + 1);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name = 'messages'").toArray()).toEqual([]);
      const rows = messageRows(sql);
      expect(rows.map((r) => r.msg_id)).toEqual(Array.from({ length: n }, (_, i) => i * 2));
      expect(rows[7]).toMatchObject({ key: "k", lane: 1, create_ms: 1007, expires_ms: null });
      expect(messageTableRows(sql).keys).toBe(1);
      expect([...store.queryNewestFirst({ ...NO_QUERY, key: "k" }, 2000)].map((m) => m.msgId)).toEqual([14]);
      const expireRefs = sql.exec("SELECT ref FROM schedule WHERE kind = 'expire' ORDER BY ref").toArray().map((r) => r.ref);
      const segIds = sql.exec("SELECT seg_id FROM segments ORDER BY seg_id").toArray().map((r) => r.seg_id);
      expect(expireRefs).toEqual(segIds); // every segment holds a message with a TTL
      expect(store.earliestDue()).toBe(90_000);
      const top = (lane: number) => 2 * Math.max(...Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 === lane));
      expect(store.laneTops()).toEqual([top(0), top(1), top(2)]);
    });
  });

  it("a batch of large legacy rows stops near BATCH_BYTES; each large message gets a segment alone", async () => {
    await withStore((store, sql) => {
      sql.exec(`CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL,
        size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER)`);
      const big = new Uint8Array(1024 * 1024);
      for (let i = 0; i < 5; i++) sql.exec("INSERT INTO messages VALUES (?, 2, NULL, NULL, ?, ?, 1000, NULL)", i, big.buffer, big.byteLength);
      let batches = 0;
      store.loadMeta((fn) => { batches++; fn(); });
      expect(BATCH_BYTES).toBe(4 * big.byteLength);
      expect(batches).toBe(4); // 4 rows, 1 row, an empty one, the DROP
      expect(messageTableRows(sql).segments).toBe(5);
      expect([...store.readLane(2, 0, 10, 2000)].map((m) => m.size)).toEqual(Array(5).fill(big.byteLength));
    });
  });
});
