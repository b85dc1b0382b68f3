import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore, toMq9Message } from "../../../objects/mailbox/store";
import type { Env } from "../../../objects/env";

describe("MailboxStore schema upgrade", () => {
  it("adds groups.delivered to a mailbox created before it existed, keeping its groups ACK-able", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    const stub = ns.get(ns.idFromName(`upgrade-${Date.now()}-${Math.random()}`));
    await runInDurableObject(stub, (_obj, state) => {
      const sql = state.storage.sql;
      // the groups table as the first version created it
      sql.exec("DROP TABLE IF EXISTS groups");
      sql.exec("CREATE TABLE IF NOT EXISTS mailbox (id INTEGER PRIMARY KEY CHECK (id = 1), address TEXT NOT NULL, created_ms INTEGER NOT NULL, ttl_s INTEGER NOT NULL, expires_ms INTEGER, next_msg_id INTEGER NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL, size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER)");
      sql.exec("CREATE TABLE groups (name TEXT PRIMARY KEY, floors TEXT NOT NULL, batch TEXT)");
      sql.exec("INSERT OR REPLACE INTO mailbox VALUES (1, 'old.box', 0, 0, NULL, 10)");
      sql.exec("INSERT INTO groups (name, floors, batch) VALUES ('g', '[0,0,4]', '[null,null,[4,6]]')");
      const store = new MailboxStore(sql);
      expect(store.loadMeta()?.address).toBe("old.box");
      expect(store.loadGroup("g")).toEqual({ floors: [0, 0, 4], delivered: [-1, -1, 6], batch: [null, null, [4, 6]] });
      store.saveGroup("g", { floors: [0, 0, 7], delivered: [-1, -1, 6], batch: null });
      expect(store.loadGroup("g")?.delivered).toEqual([-1, -1, 6]);
      expect(store.loadMeta()?.address).toBe("old.box"); // second upgrade is a no-op
    });
  });

  it("adds reply_to and correlation_id to the delayed table of a mailbox created before them, moves its messages into segments; old rows read without them", async () => {
    const ns = (env as unknown as Env).MAILBOX;
    const name = `upgrade-conv-${Date.now()}-${Math.random()}`;
    const stub = ns.get(ns.idFromName(name));
    await runInDurableObject(stub, (_obj, state) => {
      const sql = state.storage.sql;
      for (const t of ["mailbox", "messages", "delayed", "schedule", "groups"]) sql.exec(`DROP TABLE IF EXISTS ${t}`);
      // the tables as the release before the conversation extension created them
      sql.exec("CREATE TABLE mailbox (id INTEGER PRIMARY KEY CHECK (id = 1), address TEXT NOT NULL, created_ms INTEGER NOT NULL, ttl_s INTEGER NOT NULL, expires_ms INTEGER, next_msg_id INTEGER NOT NULL)");
      sql.exec("CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL, size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER)");
      sql.exec("CREATE INDEX messages_by_lane ON messages (lane, msg_id)");
      sql.exec("CREATE UNIQUE INDEX messages_by_key ON messages (key) WHERE key IS NOT NULL");
      sql.exec("CREATE TABLE delayed (seq INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL, size INTEGER NOT NULL, sent_ms INTEGER NOT NULL, expires_ms INTEGER)");
      sql.exec("CREATE TABLE schedule (kind TEXT NOT NULL, ref INTEGER NOT NULL, due_ms INTEGER NOT NULL, PRIMARY KEY (kind, ref))");
      sql.exec("CREATE TABLE groups (name TEXT PRIMARY KEY, floors TEXT NOT NULL, batch TEXT, delivered TEXT)");
      sql.exec("INSERT INTO mailbox VALUES (1, 'old.box', 0, 0, NULL, 0)");
      sql.exec("INSERT INTO messages VALUES (0, 2, NULL, NULL, X'6f6c64', 3, 1000, NULL)");
      sql.exec("INSERT INTO delayed VALUES (1, 2, NULL, NULL, X'6c61746572', 5, 1000, NULL)");
      const store = new MailboxStore(sql);
      expect(store.loadMeta()?.address).toBe("old.box");
      const cols = (t: string) => sql.exec(`SELECT name FROM pragma_table_info('${t}')`).toArray().map((r) => r.name);
      expect(cols("delayed")).toEqual(expect.arrayContaining(["reply_to", "correlation_id"]));
      // the per-message table was moved into segments and dropped (legacy-messages-store.ts)
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'messages%'").toArray()).toEqual([]);
      const old = [...store.queryNewestFirst({ key: null, limit: 10, sinceSec: null, tags: [], correlationId: null }, 2000)];
      expect(old.map(toMq9Message)).toEqual([{ msg_id: 0, payload: "b2xk", priority: "normal", create_time: 1, key: null, tags: [] }]);
      store.appendVisible(1, { lane: 2, key: null, tags: [], payload: new Uint8Array([1]), sentMs: 2000, expiresMs: null, replyTo: "r.box", correlationId: "c-1" }, 2000);
      const found = [...store.queryNewestFirst({ key: null, limit: 10, sinceSec: null, tags: [], correlationId: "c-1" }, 3000)].map(toMq9Message);
      expect(found).toEqual([{ msg_id: 1, payload: "AQ==", priority: "normal", create_time: 2, key: null, tags: [], reply_to: "r.box", correlation_id: "c-1" }]);
      expect(store.storedBytes()).toBe(3 + 5 + 1 + 5 + 3);
      expect(store.loadMeta()?.address).toBe("old.box"); // a second upgrade is a no-op
      for (const t of ["mailbox", "messages", "delayed", "schedule", "groups"]) sql.exec(`DROP TABLE IF EXISTS ${t}`);
    });
  });
});
