/**
 * The per-tenant mailbox index (objects/mailbox-index/, objects/mailbox/index-sync.ts,
 * docs/mq9.md "Mailbox index"): a CREATE adds the mailbox after its commit, an
 * expiry removes it, an update left pending survives a restart of the mailbox,
 * pages follow the address order with a cursor, and a late update never undoes
 * a newer one.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { freshMailboxTarget } from "../../../objects/mq9/stubs";
import { createMailbox, mq9 } from "../helpers/mq9";

const testEnv = env as unknown as Env;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The index of `tenant`, every address (a few pages of 2). */
async function listed(tenant: string): Promise<string[]> {
  const out: string[] = [];
  let after: string | null = null;
  do {
    const page: { mailboxes: { address: string }[]; next: string | null } = await mailboxIndexStub(testEnv, tenant).page(after, 2);
    out.push(...page.mailboxes.map((m) => m.address));
    after = page.next;
  } while (after !== null);
  return out;
}

async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await ok()) return;
    await sleep(20);
  }
  throw new Error(`timeout waiting for ${what}`);
}

describe("mailbox index", () => {
  it("lists created mailboxes in address order, page by page; forgets an expired one", async () => {
    const names = ["idx.c", "idx.a", "idx.e", "idx.b", "idx.d"];
    for (const n of names) await createMailbox(n, n === "idx.e" ? 1 : 0);
    await until(async () => (await listed("default")).filter((a) => a.startsWith("idx.")).length === 5, "5 listed");
    expect((await listed("default")).filter((a) => a.startsWith("idx."))).toEqual(["idx.a", "idx.b", "idx.c", "idx.d", "idx.e"]);
    const first = await mailboxIndexStub(testEnv, "default").page("idx.a", 2);
    expect(first.mailboxes.map((m) => m.address)).toEqual(["idx.b", "idx.c"]);
    expect(first.next).toBe("idx.c");
    const e = (await mailboxIndexStub(testEnv, "default").page("idx.d", 1)).mailboxes[0]!;
    expect(e).toMatchObject({ address: "idx.e", created_ms: expect.any(Number) });
    expect(e.expires_ms! - e.created_ms).toBe(1000);
    // idx.e expires (TTL 1 s): the mailbox's next request runs the expiry, which tells the index.
    await sleep(1050);
    expect((await mq9("$mq9.AI.MSG.QUERY.idx.e", {})).body.error).toBe("mailbox idx.e does not exist");
    await until(async () => !(await listed("default")).includes("idx.e"), "idx.e removed");
  });

  it("an update left pending (the index call failed) is sent again when the mailbox restarts", async () => {
    const box = "idx.restart";
    await createMailbox(box, 0);
    await until(async () => (await listed("default")).includes(box), "listed");
    const { created_ms } = (await mailboxIndexStub(testEnv, "default").page("idx.resta", 1)).mailboxes[0]!;
    // As if the add had not reached the index: the index lacks it, the mailbox still owes it.
    await mailboxIndexStub(testEnv, "default").remove(box, created_ms);
    const stub = freshMailboxTarget(testEnv, "default", box).stub;
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec(`CREATE TABLE IF NOT EXISTS index_sync(k INTEGER PRIMARY KEY CHECK (k = 0), op TEXT NOT NULL,
        address TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER)`);
      state.storage.sql.exec("INSERT OR REPLACE INTO index_sync VALUES (0, 'add', ?, ?, NULL)", box, created_ms);
    });
    await runInDurableObject(stub, (_o, state) => state.abort("restart")).catch(() => {});
    expect(await listed("default")).not.toContain(box);
    await freshMailboxTarget(testEnv, "default", box).stub.heldFetches(); // any call starts the object
    await until(async () => (await listed("default")).includes(box), "listed again");
    const rows = await runInDurableObject(freshMailboxTarget(testEnv, "default", box).stub, (_o, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM index_sync").one().n);
    expect(rows).toBe(0);
  });

  it("a late or repeated update never undoes a newer one", async () => {
    const idx = mailboxIndexStub(testEnv, "order-test");
    await idx.add({ address: "m", created_ms: 200, expires_ms: null });
    await idx.add({ address: "m", created_ms: 100, expires_ms: 5 }); // late add of an older incarnation
    expect((await idx.page(null, 10)).mailboxes).toEqual([{ address: "m", created_ms: 200, expires_ms: null }]);
    await idx.remove("m", 100); // late removal of the older one
    expect(await idx.count()).toBe(1);
    await idx.remove("m", 200);
    await idx.remove("m", 200);
    expect(await idx.count()).toBe(0);
    await idx.add({ address: "m", created_ms: 300, expires_ms: null });
    await idx.purge();
    await idx.purge();
    expect(await idx.page(null, 10)).toEqual({ mailboxes: [], next: null });
  });
});

describe("the index as the tenant's mailbox count (admit / release; #14 item 3)", () => {
  it("counts listed mailboxes plus admitted unlisted CREATEs, exactly", async () => {
    const idx = mailboxIndexStub(testEnv, `count-${Math.random().toString(36).slice(2, 8)}`);
    const now = Date.now();
    const a = await idx.admit("box.a", 2, now);
    const b = await idx.admit("box.b", 2, now);
    expect([a.ok, b.ok]).toEqual([true, true]);
    expect(await idx.admit("box.c", 2, now)).toEqual({ ok: false, count: 2 });
    expect(await idx.admit("box.a", 2, now)).toEqual({ ok: true }); // reserved already: a second CREATE of it adds nothing
    if (!b.ok || b.at === undefined) throw new Error("b reserved");
    await idx.release("box.b", b.at); // that CREATE created nothing
    expect((await idx.admit("box.c", 2, now)).ok).toBe(true);
    await idx.add({ address: "box.a", created_ms: now, expires_ms: null }); // listed: its reservation ends
    await idx.add({ address: "box.a", created_ms: now, expires_ms: null }); // a repeated add counts once
    expect(await idx.count()).toBe(1);
    expect(await idx.admit("box.d", 2, now)).toEqual({ ok: false, count: 2 }); // box.a listed + box.c reserved
    const again = await idx.admit("box.a", 2, now); // listed: admitted without counting; its CREATE answers mailbox_exists and releases
    expect(again.ok).toBe(true);
    if (again.ok && again.at !== undefined) await idx.release("box.a", again.at);
    await idx.remove("box.a", now);
    expect(await idx.count()).toBe(0);
    expect((await idx.admit("box.d", 2, now)).ok).toBe(true);
    // a reservation whose CREATE never reported lapses after a minute
    expect((await idx.admit("box.e", 2, now + 61_000)).ok).toBe(true);
  });
});
