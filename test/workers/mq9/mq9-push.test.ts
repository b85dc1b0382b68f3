/**
 * Push delivery inside workerd (docs/push.md): what needs no endpoint —
 * the deployed URL policy (no PUSH_ALLOW_LOOPBACK in this project), the
 * subscription lifecycle with the mailbox TTL, the dead-letter copy's
 * idempotency, and the upgrade of a mailbox stored before push existed.
 * Deliveries to real endpoints are tested end to end (test/e2e/push-*.test.ts).
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { MailboxStore } from "../../../objects/mailbox/store";
import { PushStore } from "../../../objects/mailbox/push/store";
import type { DeadLetterCopy } from "../../../objects/mailbox/push/dead-letter";
import { createMailbox, fetchMsgs, freshAddress, mq9, query, send } from "../helpers/mq9";

const E = env as unknown as Env;

describe("PUSH on a deployed broker (no PUSH_ALLOW_LOOPBACK)", () => {
  it("refuses loopback, http://, private and link-local endpoints with 400 and the rule", async () => {
    const box = await createMailbox();
    for (const [url, why] of [
      ["http://127.0.0.1:8080/hook", "PUSH_ALLOW_LOOPBACK is not set"],
      ["https://localhost/hook", "PUSH_ALLOW_LOOPBACK is not set"],
      ["https://[::1]/hook", "PUSH_ALLOW_LOOPBACK is not set"],
      ["http://hooks.example.com/", "the scheme must be https"],
      ["https://[::ffff:169.254.169.254]/", "is a link-local address"],
      ["https://10.0.0.8/", "is a private address"],
      ["https://metadata.internal/", "is a local network name"],
    ] as const) {
      const r = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url });
      expect([r.status, r.body.error], url).toEqual([400, expect.stringContaining(`push url "${url}" refused: `)]);
      expect(r.body.error, url).toContain(why);
    }
    const unknownField = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: "https://hooks.example.com/", max_attempts: 1000 });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error).toContain("field max_attempts");
    expect((await mq9(`$mq9.AI.PUSH.LIST.${box}`)).body).toEqual({ error: "", pushes: [] });
  });

  it("CREATE with a public https endpoint, LIST, DELETE; unknown verbs and bodies are refused", async () => {
    const box = await createMailbox();
    const created = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: "https://hooks.example.com/mq9#ignored" });
    expect(created.status).toBe(200);
    const list = await mq9(`$mq9.AI.PUSH.LIST.${box}`);
    expect(list.body.pushes).toEqual([{
      push_id: created.body.push_id, group_name: "g", url: "https://hooks.example.com/mq9", max_attempts: 8, concurrency: 1, timeout_ms: 10_000,
      state: "active", delivered: 0, failed: 0, dead_lettered: 0, last_error: "", last_success_time: null, last_failure_time: null,
      created_time: expect.any(Number), in_flight: 0, backlog: 0,
    }]);
    expect((await mq9(`$mq9.AI.PUSH.DELETE.${box}`, {})).body.error).toContain("field push_id");
    expect((await mq9(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: "push_nope" })).status).toBe(404);
    expect((await mq9(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: created.body.push_id })).body).toEqual({ error: "" });
    expect((await mq9(`$mq9.AI.PUSH.PAUSE.${box}`)).status).toBe(404);
    // LIST takes no fields, but its body is checked like every other command's
    expect(await mq9(`$mq9.AI.PUSH.LIST.${box}`, "garbage")).toEqual({ status: 400, body: { error: expect.stringMatching(/^request body is not valid JSON: /) } });
    expect(await mq9(`$mq9.AI.PUSH.LIST.${box}`, [1])).toEqual({ status: 400, body: { error: "invalid request body: must be a JSON object" } });
    expect(await mq9(`$mq9.AI.PUSH.LIST.${box}`, "null")).toEqual({ status: 400, body: { error: "invalid request body: must be a JSON object" } });
    expect((await mq9(`$mq9.AI.PUSH.LIST.${box}`, { unknown: 1 })).body).toEqual({ error: "", pushes: [] }); // unknown fields are ignored, as everywhere
    // the group stays, for pull: a FETCH on it works again
    await send(box, "after");
    expect(await fetchMsgs(box, { group_name: "g" })).toHaveLength(1);
  });

  it("a mailbox's subscriptions end with its TTL; a new mailbox of the same name has none", async () => {
    const box = await createMailbox(freshAddress(), 1);
    expect((await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: "https://hooks.example.com/" })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    await runDurableObjectAlarm(mailboxStub(E, "default", box));
    expect((await mq9(`$mq9.AI.PUSH.LIST.${box}`)).body.error).toBe(`mailbox ${box} does not exist`);
    await createMailbox(box);
    expect((await mq9(`$mq9.AI.PUSH.LIST.${box}`)).body).toEqual({ error: "", pushes: [] });
  });
});

describe("dead-letter copies (Mailbox.deadLetter)", () => {
  const copy = (ref: string, payload: string, key = "k"): DeadLetterCopy => ({
    lane: 1, key, tags: ["t1", "t2"], payload: new TextEncoder().encode(payload), replyTo: "answers.box", correlationId: "c-7",
    info: { mail_address: "src.box", msg_id: 4, push_id: "push_x", group_name: "g", reason: "HTTP 500", attempts: 8, time: 1_700_000_000 },
    ref,
  });

  it("creates the .dlq mailbox on demand, stores each source message once, and FETCH shows why it failed", async () => {
    const dlq = `${freshAddress()}.dlq`;
    const stub = mailboxStub(E, "default", dlq);
    const first = await stub.deadLetter(dlq, 3600, copy("src.box/push_x/4", "p1"));
    const again = await stub.deadLetter(dlq, 3600, copy("src.box/push_x/4", "p1")); // the answer was lost: resent
    expect(first).toEqual({ ok: true, msgId: 0 });
    expect(again).toEqual({ ok: true, msgId: 0 });
    expect(await stub.deadLetter(dlq, 3600, copy("src.box/push_x/5", "p2", "k2"))).toEqual({ ok: true, msgId: 1 });
    const msgs = await fetchMsgs(dlq, { deliver: "earliest" });
    expect(msgs.map((m) => [m.msg_id, atob(m.payload)])).toEqual([[0, "p1"], [1, "p2"]]);
    expect(msgs[0]).toMatchObject({
      priority: "urgent", key: "k", tags: ["t1", "t2"], reply_to: "answers.box", correlation_id: "c-7",
      dead_letter: { mail_address: "src.box", msg_id: 4, push_id: "push_x", group_name: "g", reason: "HTTP 500", attempts: 8, time: 1_700_000_000 },
    });
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: dlq })).body.error).toBe(`mailbox ${dlq} already exists`);
    // the tenant's mailbox index lists it (the console's list, the tenant purge)
    let listed: string[] = [];
    for (let i = 0; i < 50; i++) {
      listed = (await mailboxIndexStub(E, "default").page(null, 10, dlq)).mailboxes.map((m) => m.address);
      if (listed.length) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(listed).toEqual([dlq]);
  });
});

describe("MailboxStore upgrade for push delivery", () => {
  it("a mailbox stored before push gets the push tables on load, its messages move into segments, and its groups can be pushed", async () => {
    const address = freshAddress("old");
    const stub = mailboxStub(E, "default", address);
    await runInDurableObject(stub, (_obj, state) => {
      const sql = state.storage.sql;
      for (const t of ["mailbox", "messages", "delayed", "schedule", "groups"]) sql.exec(`DROP TABLE IF EXISTS ${t}`);
      // the layout of the release before push delivery (with the conversation columns)
      sql.exec("CREATE TABLE mailbox (id INTEGER PRIMARY KEY CHECK (id = 1), address TEXT NOT NULL, created_ms INTEGER NOT NULL, ttl_s INTEGER NOT NULL, expires_ms INTEGER, next_msg_id INTEGER NOT NULL)");
      sql.exec("CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL, size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER, reply_to TEXT, correlation_id TEXT)");
      sql.exec("CREATE INDEX messages_by_lane ON messages (lane, msg_id)");
      sql.exec("CREATE UNIQUE INDEX messages_by_key ON messages (key) WHERE key IS NOT NULL");
      sql.exec("CREATE TABLE delayed (seq INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT, payload BLOB NOT NULL, size INTEGER NOT NULL, sent_ms INTEGER NOT NULL, expires_ms INTEGER, reply_to TEXT, correlation_id TEXT)");
      sql.exec("CREATE TABLE schedule (kind TEXT NOT NULL, ref INTEGER NOT NULL, due_ms INTEGER NOT NULL, PRIMARY KEY (kind, ref))");
      sql.exec("CREATE INDEX schedule_by_due ON schedule (due_ms)");
      sql.exec("CREATE TABLE groups (name TEXT PRIMARY KEY, floors TEXT NOT NULL, batch TEXT, delivered TEXT)");
      sql.exec("INSERT INTO mailbox VALUES (1, ?, 0, 0, NULL, 0)", address);
      sql.exec("INSERT INTO messages VALUES (0, 2, NULL, NULL, X'6f6c64', 3, 1000, NULL, NULL, NULL)");
      sql.exec("INSERT INTO groups VALUES ('g', '[1,1,1]', NULL, '[0,0,0]')"); // group g acknowledged message 0
    });
    await runInDurableObject(stub, (_o, state) => state.abort("restart")).catch(() => {}); // the object loads the old layout anew
    expect((await query(address)).map((m) => atob(m.payload))).toEqual(["old"]);
    const created = await mq9(`$mq9.AI.PUSH.CREATE.${address}`, { group_name: "g", url: "https://hooks.example.com/" });
    expect(created.body.error).toBe("");
    const [info] = (await mq9(`$mq9.AI.PUSH.LIST.${address}`)).body.pushes as Record<string, unknown>[];
    expect(info).toMatchObject({ group_name: "g", backlog: 0 }); // the push starts at g's ack floors: message 0 stays acknowledged
    await runInDurableObject(mailboxStub(E, "default", address), (_obj, state) => { // a fresh stub: the old one broke with the restart
      const sql = state.storage.sql;
      // the per-message table was moved into segments (legacy-messages-store.ts) and dropped
      expect(sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('messages', 'segments')").toArray().map((r) => r.name)).toEqual(["segments"]);
      expect(new PushStore(sql).loadPushes().map((p) => p.config.group)).toEqual(["g"]);
      expect(new MailboxStore(sql).message(0, Date.now())).toMatchObject({ msgId: 0, deadLetter: null });
    });
    expect((await mq9(`$mq9.AI.PUSH.DELETE.${address}`, { push_id: created.body.push_id })).body.error).toBe("");
  });

  it("push tables stored before last_failure_ms get the column on load; LIST shows last_failure_time null and keeps last_error", async () => {
    const address = await createMailbox();
    const created = await mq9(`$mq9.AI.PUSH.CREATE.${address}`, { group_name: "g", url: "https://hooks.example.com/" });
    expect(created.body.error).toBe("");
    await runInDurableObject(mailboxStub(E, "default", address), (_obj, state) => {
      const sql = state.storage.sql;
      sql.exec("ALTER TABLE pushes DROP COLUMN last_failure_ms"); // the layout of the release before it
      sql.exec("UPDATE pushes SET failed = 2, last_error = 'HTTP 500'");
    });
    await runInDurableObject(mailboxStub(E, "default", address), (_o, state) => state.abort("restart")).catch(() => {});
    const [info] = (await mq9(`$mq9.AI.PUSH.LIST.${address}`)).body.pushes as Record<string, unknown>[];
    expect(info).toMatchObject({ push_id: created.body.push_id, failed: 2, last_error: "HTTP 500", last_failure_time: null, last_success_time: null });
    await runInDurableObject(mailboxStub(E, "default", address), (_obj, state) => {
      const cols = state.storage.sql.exec("SELECT name FROM pragma_table_info('pushes')").toArray().map((r) => r.name);
      expect(cols).toContain("last_failure_ms");
    });
  });
});
