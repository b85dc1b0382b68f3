import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MailboxStore } from "../../objects/mailbox/store";
import type { Env } from "../../objects/env";

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
});
