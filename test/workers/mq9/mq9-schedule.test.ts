import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { createMailbox, fetchMsgs, mq9, query, send, text } from "../helpers/mq9";
import { messageRows } from "../helpers/mailbox-rows";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stubOf = (address: string) => mailboxStub(env as unknown as Env, "default", address);

/** The stored messages, read straight from the object's segments without running any mq9 request. */
async function stored(address: string) {
  return runInDurableObject(stubOf(address), (_, state) => messageRows(state.storage.sql));
}

/** Reads rows straight from the object's SQLite, without running any mq9 request. */
async function rows(address: string, sql: string): Promise<Record<string, SqlStorageValue>[]> {
  return runInDurableObject(stubOf(address), (_, state) => state.storage.sql.exec(sql).toArray());
}

describe("delays, TTLs and the one alarm", () => {
  it("a delayed message is invisible until due, then gets the next msg_id keeping key/tags/priority/TTL", async () => {
    const a = await createMailbox();
    const headers = { "mq9-delay": "1", "mq9-key": "k", "mq9-tags": "x,y", "mq9-priority": "urgent", "mq9-ttl": "60" };
    expect(await send(a, "later", headers)).toBe(-1);
    expect(await send(a, "now")).toBe(0);
    expect((await query(a)).map(text)).toEqual(["now"]);
    expect((await fetchMsgs(a, { deliver: "earliest" })).map(text)).toEqual(["now"]);
    await sleep(1050);
    await runDurableObjectAlarm(stubOf(a)); // false when the alarm already fired by itself
    // The alarm made it visible without any request.
    const visible = await stored(a);
    expect(visible.map((r) => r.msg_id)).toEqual([0, 1]);
    // TTL counts from send time: it expires 60 s after the SEND, i.e. 59 s after becoming visible at its due time.
    expect(visible[1]!.expires_ms! - visible[1]!.create_ms).toBe(59_000);
    const [m1, m0] = await fetchMsgs(a, { deliver: "earliest" }); // urgent lane first
    expect(text(m0)).toBe("now");
    expect(m1).toMatchObject({ msg_id: 1, key: "k", tags: ["x", "y"], priority: "urgent" });
    expect(text(m1)).toBe("later");
    expect(await send(a, "after")).toBe(2);
  });

  it("a long-poll FETCH wakes when a delayed message comes due", async () => {
    const a = await createMailbox();
    expect(await send(a, "due soon", { "mq9-delay": "1" })).toBe(-1);
    const t0 = Date.now();
    const r = await mq9(`$mq9.AI.MSG.FETCH.${a}`, { group_name: "w", config: { max_wait_ms: 20_000 } });
    expect((r.body.messages as { msg_id: number; payload: string }[]).map((m) => [m.msg_id, atob(m.payload)])).toEqual([[0, "due soon"]]);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it("a message disappears at its TTL and the alarm removes it physically", async () => {
    const a = await createMailbox();
    expect(await send(a, "short", { "mq9-ttl": "1" })).toBe(0);
    expect(await send(a, "long")).toBe(1);
    expect((await query(a)).map(text)).toEqual(["short", "long"]);
    await sleep(1050);
    await runDurableObjectAlarm(stubOf(a));
    expect((await stored(a)).map((r) => r.msg_id)).toEqual([1]);
    expect((await query(a)).map(text)).toEqual(["long"]);
    expect((await fetchMsgs(a, { deliver: "earliest" })).map(text)).toEqual(["long"]);
  });

  it("arms one alarm for the earliest schedule row", async () => {
    const a = await createMailbox(undefined, 3600);
    await send(a, "d", { "mq9-delay": "30", "mq9-ttl": "600" });
    await send(a, "t", { "mq9-ttl": "10" });
    const { alarm, sched, telemetry } = await runInDurableObject(stubOf(a), async (m, state) => ({
      alarm: await state.storage.getAlarm(),
      sched: state.storage.sql.exec("SELECT kind, due_ms FROM schedule ORDER BY due_ms").toArray(),
      telemetry: telemetryDue(m),
    }));
    expect(sched.map((r) => r.kind)).toEqual(["expire", "deliver", "mailbox"]);
    // The SENDs' counters are due to be reported (docs/operations.md) through the same alarm.
    expect(telemetry).not.toBeNull();
    expect(alarm).toBe(Math.min(sched[0].due_ms as number, telemetry!));
    // An alarm with nothing due changes nothing and re-arms for the same time (idempotent).
    expect(await runDurableObjectAlarm(stubOf(a))).toBe(true);
    expect((await query(a)).map(text)).toEqual(["t"]);
    expect(await runInDurableObject(stubOf(a), (_, state) => state.storage.getAlarm())).toBe(alarm);
  });

  it("mailbox TTL deletes everything; later subjects fail; re-CREATE starts empty", async () => {
    const a = await createMailbox(undefined, 1);
    await send(a, "x", { "mq9-key": "k" });
    await send(a, "y", { "mq9-delay": "30" });
    await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    const held = mq9(`$mq9.AI.MSG.FETCH.${a}`, { group_name: "g2", config: { max_wait_ms: 20_000 } });
    await sleep(1050);
    await runDurableObjectAlarm(stubOf(a));
    const gone = { status: 404, body: { error: `mailbox ${a} does not exist` } };
    expect(await held).toEqual(gone);
    // Only the counters' bookkeeping (report numbers, objects/usage/meter.ts) and the object's name
    // (its tenant, for those reports; objects/shared/object-name.ts) outlive the mailbox, once the
    // tenant's mailbox index has taken the removal (objects/mailbox/index-sync.ts).
    const tableNames = () => rows(a, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name");
    for (let i = 0; i < 50 && (await tableNames()).some((t) => t.name === "index_sync"); i++) await sleep(20);
    expect(await tableNames()).toEqual([{ name: "object_name" }, { name: "telemetry" }]);
    expect((await mailboxIndexStub(env as unknown as Env, "default").page(null, 1000)).mailboxes.map((m) => m.address)).not.toContain(a);
    expect(await mq9(`$mq9.AI.MSG.SEND.${a}`, "z")).toEqual(gone);
    expect(await mq9(`$mq9.AI.MSG.QUERY.${a}`, {})).toEqual(gone);
    expect(await mq9(`$mq9.AI.MSG.FETCH.${a}`, {})).toEqual(gone);
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.0`)).toEqual(gone);
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: a, ttl: 0 })).body).toEqual({ error: "", mail_address: a });
    expect(await query(a)).toEqual([]);
    expect(await fetchMsgs(a, { group_name: "g" })).toEqual([]);
    expect(await send(a, "fresh")).toBe(0);
    // Nothing is scheduled but the counters' report.
    const { alarm, telemetry } = await runInDurableObject(stubOf(a), async (m, state) => ({ alarm: await state.storage.getAlarm(), telemetry: telemetryDue(m) }));
    expect(telemetry).not.toBeNull();
    expect(alarm).toBe(telemetry);
  });
});

/** When the mailbox's counters are due to be reported (its private core's `telemetryDue`, objects/mailbox/core.ts), ms or null. */
function telemetryDue(m: unknown): number | null {
  return (m as { c: { telemetryDue: number | null } }).c.telemetryDue;
}
