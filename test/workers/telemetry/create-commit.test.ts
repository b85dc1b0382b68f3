/**
 * What a MAILBOX.CREATE writes (#14 item 3, docs/mq9.md "Mailbox index",
 * docs/operations.md "Under a flood"): locally every commit is an fsync on
 * workerd's one thread, which every other tenant's object waits behind, and
 * every new Durable Object database a series of them — so a CREATE writes
 * only its row in the tenant's MailboxIndex and opens no Mailbox object. The
 * Mailbox takes the row over on its first request (materialized: same
 * creation time and TTL), a never-used mailbox expires from the index's
 * alarm, and the mailbox gauge counts every mailbox once throughout.
 */
import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import type { Mailbox } from "../../../objects/mailbox/Mailbox";
import type { MailboxIndex } from "../../../objects/mailbox-index/MailboxIndex";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { series } from "../../../objects/usage/catalog";
import { usageStub } from "../../../objects/usage/stub";
import { objectName } from "../../../objects/shared/names";
import { handleMq9Request } from "../../../objects/mq9/dispatch";

const testEnv = env as unknown as Env;
const MAILBOXES = series("mortarmq_mq9_mailboxes");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();

const ns = () => testEnv.MAILBOX;
function mailbox(tenant: string, address: string): DurableObjectStub<Mailbox> {
  return ns().get(ns().idFromName(objectName("mailbox", tenant, address)));
}

const freshTenant = (p: string) => `${p}-${Math.random().toString(36).slice(2, 8)}`;

/** One mq9 request of `tenant` (the dispatcher every transport uses). */
async function mq9(tenant: string, subject: string, body: unknown = "") {
  const payload = enc.encode(typeof body === "string" ? body : JSON.stringify(body));
  return (await handleMq9Request(testEnv, tenant, { subject, headers: new Map(), payload })).body;
}

/** Whether the Mailbox object of `address` has any storage (it was opened and wrote). */
async function hasObject(tenant: string, address: string): Promise<boolean> {
  const id = ns().idFromName(objectName("mailbox", tenant, address)).toString();
  return (await listDurableObjectIds(ns())).some((i) => i.toString() === id);
}

/** The index row of `address` with its state. */
async function row(tenant: string, address: string) {
  return (await mailboxIndexStub(testEnv, tenant).rows(null, 1000)).rows.find((r) => r.address === address) ?? null;
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  let v = await read();
  for (let i = 0; i < 100 && !ok(v); i++) {
    await sleep(30);
    v = await read();
  }
  if (!ok(v)) throw new Error(`timeout waiting for ${what}: ${JSON.stringify(v)}`);
  return v;
}

describe("what a MAILBOX.CREATE writes", () => {
  it("only the index row: no Mailbox object until the first request, which takes the row over", async () => {
    const tenant = freshTenant("commit");
    const address = "one.commit";
    expect(await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: address, ttl: 3600 })).toEqual({ error: "", mail_address: address });
    const created = (await row(tenant, address))!;
    expect(created).toMatchObject({ materialized: false });
    expect(created.expires_ms! - created.created_ms).toBe(3_600_000);
    expect(await hasObject(tenant, address)).toBe(false);
    expect(await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: address })).toEqual({ error: `mailbox ${address} already exists`, mail_address: "" });
    await until(() => usageStub(testEnv, tenant).seriesValue(MAILBOXES), (n) => n === 1, "the index reports the mailbox");

    expect(await mq9(tenant, `$mq9.AI.MSG.SEND.${address}`, "hello")).toEqual({ error: "", msg_id: 0 });
    expect(await row(tenant, address)).toMatchObject({ materialized: true, created_ms: created.created_ms });
    const here = await runInDurableObject(mailbox(tenant, address), async (_o, state) => ({
      mailbox: state.storage.sql.exec<{ c: number; e: number }>("SELECT created_ms AS c, expires_ms AS e FROM mailbox").one(),
      name: state.storage.sql.exec<{ name: string }>("SELECT name FROM object_name").one().name,
      alarm: await state.storage.getAlarm(),
    }));
    expect(here.mailbox).toEqual({ c: created.created_ms, e: created.expires_ms });
    expect(here.name).toBe(objectName("mailbox", tenant, address));
    expect(here.alarm).toBeLessThanOrEqual(created.expires_ms!); // the TTL (or an earlier telemetry flush)
    // counted once: by the Mailbox now, no longer by the index
    await sleep(300); // two flush intervals (100 ms in tests)
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1);
    const q = await mq9(tenant, `$mq9.AI.MSG.QUERY.${address}`, {});
    expect((q.messages as { msg_id: number }[]).map((m) => m.msg_id)).toEqual([0]);
  });

  it("a request to an address never created answers does-not-exist and writes no row", async () => {
    const tenant = freshTenant("none");
    expect(await mq9(tenant, "$mq9.AI.MSG.SEND.never.made", "x")).toEqual({ error: "mailbox never.made does not exist" });
    expect(await mailboxIndexStub(testEnv, tenant).count()).toBe(0);
    // created afterwards: found on the next request (nothing negative is cached)
    await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "never.made" });
    expect(await mq9(tenant, "$mq9.AI.MSG.SEND.never.made", "x")).toEqual({ error: "", msg_id: 0 });
  });

  it("a never-used mailbox expires from the index's alarm; its address can be created again", async () => {
    const tenant = freshTenant("expire");
    expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "short.lived", ttl: 1 })).error).toBe("");
    await until(() => usageStub(testEnv, tenant).seriesValue(MAILBOXES), (n) => n === 1, "counted");
    await until(() => mailboxIndexStub(testEnv, tenant).count(), (n) => n === 0, "expired by the index's alarm");
    await until(() => usageStub(testEnv, tenant).seriesValue(MAILBOXES), (n) => n === 0, "uncounted");
    expect(await hasObject(tenant, "short.lived")).toBe(false);
    expect(await mq9(tenant, "$mq9.AI.MSG.SEND.short.lived", "x")).toEqual({ error: "mailbox short.lived does not exist" });
    expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "short.lived" })).error).toBe("");
  });

  it("a used mailbox that expired and was created again starts empty, with the new creation time", async () => {
    const tenant = freshTenant("again");
    const address = "used.twice";
    await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: address, ttl: 1 });
    expect((await mq9(tenant, `$mq9.AI.MSG.SEND.${address}`, "old")).error).toBe("");
    await sleep(1_100);
    expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: address, ttl: 60 })).error).toBe("");
    const second = (await row(tenant, address))!;
    expect(await mq9(tenant, `$mq9.AI.MSG.SEND.${address}`, "new")).toEqual({ error: "", msg_id: 0 });
    const q = await mq9(tenant, `$mq9.AI.MSG.QUERY.${address}`, {});
    expect((q.messages as { payload: string }[]).map((m) => atob(m.payload))).toEqual(["new"]);
    const created = await runInDurableObject(mailbox(tenant, address), (_o, state) =>
      state.storage.sql.exec<{ c: number }>("SELECT created_ms AS c FROM mailbox").one().c);
    expect(created).toBe(second.created_ms);
    await sleep(300);
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1);
    expect(await mailboxIndexStub(testEnv, tenant).count()).toBe(1);
  });

  it("an index written before index-only CREATEs reads its rows as materialized", async () => {
    const tenant = freshTenant("old-index");
    const ins = testEnv.MAILBOX_INDEX;
    const stub = ins.get(ins.idFromName(objectName("mailbox-index", tenant)));
    await runInDurableObject(stub, (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP INDEX IF EXISTS mailboxes_expiry");
      sql.exec("DROP TABLE mailboxes");
      sql.exec("CREATE TABLE mailboxes(address TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, expires_ms INTEGER) WITHOUT ROWID");
      sql.exec("INSERT INTO mailboxes VALUES ('old.box', 5, NULL)");
    });
    await runInDurableObject(stub, (_o, state) => state.abort("restart")).catch(() => {});
    const rows = (await mailboxIndexStub(testEnv, tenant).rows(null, 10)).rows;
    expect(rows).toEqual([{ address: "old.box", created_ms: 5, expires_ms: null, materialized: true }]);
    expect(await mailboxIndexStub(testEnv, tenant).count()).toBe(1);
  });
});
