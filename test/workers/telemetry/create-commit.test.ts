/**
 * What a MAILBOX.CREATE writes (#14 item 3, docs/mq9.md "Mailbox index",
 * docs/operations.md "Under a flood"): locally every commit is an fsync on
 * workerd's one thread, which every other tenant's object waits behind, so
 * the object's name, the mailbox, the index update it owes, its usage report
 * and its TTL alarm are written in the CREATE's one turn (so workerd commits
 * them once), and the acknowledged index update and report rows are
 * dropped together in one more turn. Rows a
 * restart left behind before that are sent again and counted once.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import type { Mailbox } from "../../../objects/mailbox/Mailbox";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { series } from "../../../objects/usage/catalog";
import { usageStub } from "../../../objects/usage/stub";
import { objectName } from "../../../objects/shared/names";
import { hourOf } from "../../../objects/usage/report";

const testEnv = env as unknown as Env;
const MAILBOXES = series("mortarmq_mq9_mailboxes");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function mailbox(tenant: string, address: string): DurableObjectStub<Mailbox> {
  const ns = testEnv.MAILBOX as unknown as DurableObjectNamespace<Mailbox>;
  return ns.get(ns.idFromName(objectName("mailbox", tenant, address)));
}

const freshTenant = (p: string) => `${p}-${Math.random().toString(36).slice(2, 8)}`;

/** The rows a mailbox keeps for the index and the usage pipeline, its name row, its alarm and its commit counter. */
async function inspect(tenant: string, address: string) {
  return await runInDurableObject(mailbox(tenant, address), async (_o, state) => {
    const sql = state.storage.sql;
    const has = (t: string) => sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
    return {
      indexRows: has("index_sync") ? sql.exec<{ n: number }>("SELECT count(*) AS n FROM index_sync").one().n : 0,
      outbox: has("telemetry") ? sql.exec("SELECT 1 FROM telemetry WHERE k = 'outbox'").toArray().length : 0,
      state: has("telemetry") ? (sql.exec<{ v: string }>("SELECT v FROM telemetry WHERE k = 'state'").toArray()[0]?.v ?? null) : null,
      name: has("object_name") ? (sql.exec<{ name: string }>("SELECT name FROM object_name").toArray()[0]?.name ?? null) : null,
      createdMs: sql.exec<{ c: number }>("SELECT created_ms AS c FROM mailbox").one().c,
      alarm: await state.storage.getAlarm(),
      reporter: state.id.toString(),
    };
  });
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

describe("what a MAILBOX.CREATE commits", () => {
  it("name, mailbox, index update, usage report and TTL alarm in one commit; the acknowledged rows go in one more", async () => {
    const tenant = freshTenant("commit");
    const address = "one.commit";
    // in the CREATE's own turn (nothing awaited after it): every row is written, the alarm is the TTL's
    const first = await runInDurableObject(mailbox(tenant, address), (o, state) => {
      const r = o.create(address, 3600);
      const sql = state.storage.sql;
      return {
        r,
        rows: ["object_name", "mailbox", "index_sync"].map((t) => sql.exec(`SELECT count(*) AS n FROM ${t}`).one().n),
        outbox: sql.exec("SELECT count(*) AS n FROM telemetry WHERE k = 'outbox'").one().n,
        alarm: state.storage.getAlarm(),
      };
    });
    expect(first.r).toEqual({ ok: true });
    expect(first.rows).toEqual([1, 1, 1]);
    expect(first.outbox).toBe(1); // the usage report commits with the CREATE
    const s = await until(() => inspect(tenant, address), (v) => v.indexRows === 0 && v.outbox === 0, "the rows settled");
    expect(s.name).toBe(objectName("mailbox", tenant, address));
    expect(await first.alarm).toBe(s.createdMs + 3_600_000); // set in the CREATE's turn: the TTL alarm, no flush alarm for the report
    expect(s.alarm).toBe(s.createdMs + 3_600_000);
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1);
    expect((await mailboxIndexStub(testEnv, tenant).page(null, 10)).mailboxes.map((m) => m.address)).toEqual([address]);
  });

  it("an index add and a usage report a restart left behind are sent again and counted once", async () => {
    const tenant = freshTenant("resend");
    const address = "left.behind";
    expect(await mailbox(tenant, address).create(address, 0)).toEqual({ ok: true });
    const s = await until(() => inspect(tenant, address), (v) => v.indexRows === 0 && v.outbox === 0, "the rows settled");
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1);
    // As if the instance had died after both answers arrived but before it dropped the rows:
    // the add and the (already applied) report are still stored.
    const no = (JSON.parse(s.state!) as { no: number }).no;
    await runInDurableObject(mailbox(tenant, address), (_o, state) => {
      state.storage.sql.exec("INSERT INTO index_sync(k, op, address, created_ms, expires_ms) VALUES (0, 'add', ?, ?, NULL)", address, s.createdMs);
      const report = { reporter: s.reporter, no, at: s.createdMs, entries: [[hourOf(s.createdMs), MAILBOXES, 1]] };
      state.storage.sql.exec("INSERT OR REPLACE INTO telemetry(k, v) VALUES ('outbox', ?)", JSON.stringify(report));
    });
    await runInDurableObject(mailbox(tenant, address), (_o, state) => state.abort("restart")).catch(() => {});
    await mailbox(tenant, address).heldFetches(); // any call starts the object: it sends both again
    await until(() => inspect(tenant, address), (v) => v.indexRows === 0 && v.outbox === 0, "the resent rows settled");
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1); // the resent report was not applied twice
    expect(await mailboxIndexStub(testEnv, tenant).count()).toBe(1);
  });

  it("a mailbox whose add was in flight at a restart is listed after it", async () => {
    const tenant = freshTenant("inflight");
    const address = "in.flight";
    const stub = mailbox(tenant, address);
    // the CREATE commits, then the instance dies at once — its add may or may not have reached the index
    await runInDurableObject(stub, async (o, state) => {
      expect(await o.create(address, 0)).toEqual({ ok: true });
      await state.storage.sync();
      state.abort("restart right after the CREATE");
    }).catch(() => {});
    await mailbox(tenant, address).heldFetches();
    await until(async () => (await mailboxIndexStub(testEnv, tenant).page(null, 10)).mailboxes.map((m) => m.address), (a) => a.includes(address), "listed");
    await until(() => inspect(tenant, address), (v) => v.indexRows === 0, "the add settled");
    await until(() => usageStub(testEnv, tenant).seriesValue(MAILBOXES), (n) => n === 1, "the mailbox counted");
    await sleep(300); // a report sent twice would be counted by now (flush interval 100 ms)
    expect(await usageStub(testEnv, tenant).seriesValue(MAILBOXES)).toBe(1);
  });
});
