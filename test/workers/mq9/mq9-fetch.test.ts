import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_GROUPS_PER_MAILBOX } from "../../../wire/mq9";
import type { Env } from "../../../objects/env";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { createMailbox, fetchMsgs, mq9, send, text } from "../helpers/mq9";
import { until } from "../../fixtures/until";

async function ack(address: string, group: string, msgId: number) {
  return mq9(`$mq9.AI.MSG.ACK.${address}`, { group_name: group, mail_address: address, msg_id: msgId });
}

async function fill(address: string, n: number, prefix = "m"): Promise<void> {
  for (let i = 0; i < n; i++) await send(address, `${prefix}${i}`);
}

describe("MSG.FETCH and MSG.ACK", () => {
  it("pages 3/3/3/0 with FETCH → ACK of the batch's last message", async () => {
    const a = await createMailbox();
    await fill(a, 9);
    const pages: string[][] = [];
    for (let i = 0; i < 4; i++) {
      const batch = await fetchMsgs(a, { group_name: "pager", deliver: "earliest", config: { num_msgs: 3 } });
      pages.push(batch.map(text));
      if (batch.length) expect((await ack(a, "pager", batch[batch.length - 1].msg_id)).body).toEqual({ error: "" });
    }
    expect(pages).toEqual([["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6", "m7", "m8"], []]);
  });

  it("redelivers un-acked messages to the same group", async () => {
    const a = await createMailbox();
    await fill(a, 2);
    const first = await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    const again = await fetchMsgs(a, { group_name: "g" });
    expect(again).toEqual(first);
  });

  it("keeps two groups independent", async () => {
    const a = await createMailbox();
    await fill(a, 4);
    const g1 = await fetchMsgs(a, { group_name: "g1", deliver: "earliest", config: { num_msgs: 2 } });
    await ack(a, "g1", g1[1].msg_id);
    expect((await fetchMsgs(a, { group_name: "g1" })).map(text)).toEqual(["m2", "m3"]);
    expect((await fetchMsgs(a, { group_name: "g2", deliver: "earliest" })).map(text)).toEqual(["m0", "m1", "m2", "m3"]);
  });

  it("resumes from the group position and ignores deliver until force_deliver replays", async () => {
    const a = await createMailbox();
    await fill(a, 3);
    const b = await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    await ack(a, "g", b[2].msg_id);
    expect(await fetchMsgs(a, { group_name: "g", deliver: "earliest" })).toEqual([]);
    const replay = await fetchMsgs(a, { group_name: "g", deliver: "earliest", force_deliver: true });
    expect(replay.map(text)).toEqual(["m0", "m1", "m2"]);
    const fromOne = await fetchMsgs(a, { group_name: "g", deliver: "from_id", from_id: 1, force_deliver: true });
    expect(fromOne.map(text)).toEqual(["m1", "m2"]);
  });

  it("starts a new group at latest by default: only messages sent after its first FETCH", async () => {
    const a = await createMailbox();
    await fill(a, 2, "old");
    expect(await fetchMsgs(a, { group_name: "late" })).toEqual([]);
    await send(a, "new");
    expect((await fetchMsgs(a, { group_name: "late" })).map(text)).toEqual(["new"]);
  });

  it("stateless FETCH records nothing", async () => {
    const a = await createMailbox();
    await fill(a, 3);
    expect((await fetchMsgs(a, { deliver: "earliest", config: { num_msgs: 2 } })).map(text)).toEqual(["m0", "m1"]);
    expect((await fetchMsgs(a, { deliver: "earliest", config: { num_msgs: 2 } })).map(text)).toEqual(["m0", "m1"]);
    expect(await fetchMsgs(a, {})).toEqual([]); // latest: nothing new
  });

  it("delivers from_id (inclusive) and from_time", async () => {
    const a = await createMailbox();
    await fill(a, 2, "early");
    await new Promise((r) => setTimeout(r, 1100));
    await fill(a, 2, "late");
    expect((await fetchMsgs(a, { deliver: "from_id", from_id: 1 })).map(text)).toEqual(["early1", "late0", "late1"]);
    const all = await fetchMsgs(a, { deliver: "earliest" });
    const lateTime = all[2].create_time;
    expect(lateTime).toBeGreaterThan(all[1].create_time);
    expect((await fetchMsgs(a, { deliver: "from_time", from_time: lateTime })).map(text)).toEqual(["late0", "late1"]);
    expect((await fetchMsgs(a, { group_name: "t", deliver: "from_time", from_time: 0 })).length).toBe(4);
    expect(await fetchMsgs(a, { deliver: "from_time", from_time: lateTime + 3600 })).toEqual([]);
  });

  it("long-poll returns as soon as a SEND arrives", async () => {
    const a = await createMailbox();
    const t0 = Date.now();
    const pending = mq9(`$mq9.AI.MSG.FETCH.${a}`, { group_name: "w", config: { max_wait_ms: 20_000 } });
    await new Promise((r) => setTimeout(r, 100));
    await send(a, "wake up");
    const r = await pending;
    expect(r.status).toBe(200);
    expect((r.body.messages as { payload: string }[]).map((m) => atob(m.payload))).toEqual(["wake up"]);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it("a stateless long-poll from latest keeps its position while it waits (parked at the Mailbox, woken by the SENDs)", async () => {
    const a = await createMailbox();
    await send(a, "before");
    const pending = mq9(`$mq9.AI.MSG.FETCH.${a}`, { deliver: "latest", config: { max_wait_ms: 20_000 } });
    await until(async () => (await mailboxStub(env as unknown as Env, "default", a).heldFetches()) === 1);
    await send(a, "while waiting");
    const r = await pending;
    expect((r.body.messages as { payload: string }[]).map((m) => atob(m.payload))).toEqual(["while waiting"]);
    await until(async () => (await mailboxStub(env as unknown as Env, "default", a).heldFetches()) === 0); // the parked socket went with the wake-up
  });

  it("long-poll ends empty at max_wait_ms; 0 returns at once", async () => {
    const a = await createMailbox();
    const t0 = Date.now();
    const r = await mq9(`$mq9.AI.MSG.FETCH.${a}`, { config: { max_wait_ms: 300 } });
    expect(r.body).toEqual({ error: "", messages: [] });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect((await mq9(`$mq9.AI.MSG.FETCH.${a}`, { config: { max_wait_ms: 0 } })).body).toEqual({ error: "", messages: [] });
  });

  it("ACK never moves a cursor backwards", async () => {
    const a = await createMailbox();
    await fill(a, 5);
    await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    await ack(a, "g", 3);
    expect((await ack(a, "g", 1)).body).toEqual({ error: "" });
    expect((await fetchMsgs(a, { group_name: "g" })).map((m) => m.msg_id)).toEqual([4]);
  });

  it("ACK of a mixed batch's last message acknowledges the batch but not a later critical message", async () => {
    const a = await createMailbox();
    await send(a, "n0");
    await send(a, "c1", { "mq9-priority": "critical" });
    const batch = await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    expect(batch.map(text)).toEqual(["c1", "n0"]);
    await send(a, "c2", { "mq9-priority": "critical" }); // arrives before the ACK
    await ack(a, "g", batch[1].msg_id);
    expect((await fetchMsgs(a, { group_name: "g" })).map(text)).toEqual(["c2"]);
  });

  it("refuses an ACK of a message never delivered to the group (no silent skip)", async () => {
    const a = await createMailbox();
    expect(await fetchMsgs(a, { group_name: "g" })).toEqual([]); // empty mailbox: group at latest = 0
    await fill(a, 5);
    expect(await ack(a, "g", 3)).toEqual({
      status: 409,
      body: { error: "msg_id 3 has not been delivered to consumer group g: FETCH it before acknowledging it (highest normal msg_id delivered to the group: none)" },
    });
    expect((await fetchMsgs(a, { group_name: "g", config: { num_msgs: 2 } })).map((m) => m.msg_id)).toEqual([0, 1]);
    expect((await ack(a, "g", 3)).body.error).toContain("(highest normal msg_id delivered to the group: 1)");
    expect((await ack(a, "g", 1)).body).toEqual({ error: "" });
    expect((await fetchMsgs(a, { group_name: "g" })).map((m) => m.msg_id)).toEqual([2, 3, 4]);
  });

  it("caps the consumer groups of one mailbox at MAX_GROUPS_PER_MAILBOX", async () => {
    const a = await createMailbox();
    await fill(a, 1);
    const stub = mailboxStub(env as unknown as Env, "default", a);
    await runInDurableObject(stub, (_obj, state) => {
      for (let i = 0; i < MAX_GROUPS_PER_MAILBOX - 1; i++) {
        state.storage.sql.exec("INSERT INTO groups (name, floors) VALUES (?, '[0,0,0]')", `filler${i}`);
      }
    });
    expect((await fetchMsgs(a, { group_name: "last", deliver: "earliest" })).length).toBe(1); // the 1000th group
    const over = await mq9(`$mq9.AI.MSG.FETCH.${a}`, { group_name: "one.more", config: { max_wait_ms: 0 } });
    expect(over).toEqual({
      status: 429,
      body: { error: `mailbox ${a} already has 1000 consumer groups: reuse an existing group_name or FETCH without one (stateless)` },
    });
    expect((await fetchMsgs(a, { group_name: "filler7", deliver: "earliest" })).length).toBe(1); // existing groups keep working
    expect((await fetchMsgs(a, { deliver: "earliest" })).length).toBe(1);
  });

  it("ACK errors: unknown msg_id, unknown group, mismatched or missing fields", async () => {
    const a = await createMailbox();
    await fill(a, 1);
    expect(await ack(a, "g", 0)).toEqual({ status: 404, body: { error: `consumer group g has not fetched from mailbox ${a}` } });
    await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    expect(await ack(a, "g", 9)).toEqual({ status: 404, body: { error: "message not found" } });
    const mismatch = await mq9(`$mq9.AI.MSG.ACK.${a}`, { group_name: "g", mail_address: "other.box", msg_id: 0 });
    expect(mismatch.status).toBe(400);
    // a missing or mistyped field is named in the broker's words, not zod's ("Invalid input: expected string, received undefined")
    expect(await mq9(`$mq9.AI.MSG.ACK.${a}`, { mail_address: a, msg_id: 0 })).toEqual({ status: 400, body: { error: "invalid request field group_name: required" } });
    expect(await mq9(`$mq9.AI.MSG.ACK.${a}`, { group_name: "g", msg_id: 0 })).toEqual({ status: 400, body: { error: "invalid request field mail_address: required" } });
    expect(await mq9(`$mq9.AI.MSG.ACK.${a}`, { group_name: "g", mail_address: 7, msg_id: 0 })).toEqual({ status: 400, body: { error: "invalid request field mail_address: must be a string" } });
    expect(await mq9(`$mq9.AI.MSG.ACK.${a}`, { group_name: "g", mail_address: a })).toEqual({ status: 400, body: { error: "invalid request field msg_id: required (must be a whole number from 0 to 9007199254740991)" } });
    expect(await mq9(`$mq9.AI.MSG.ACK.${a}`, [1])).toEqual({ status: 400, body: { error: "invalid request body: must be a JSON object" } });
  });

  it("caps a reply at 4 MiB of payload but always delivers the first message", async () => {
    const a = await createMailbox();
    const mib = new Uint8Array(1024 * 1024);
    for (let i = 0; i < 5; i++) await send(a, mib);
    expect((await fetchMsgs(a, { deliver: "earliest" })).map((m) => m.msg_id)).toEqual([0, 1, 2, 3]);
    expect((await fetchMsgs(a, { deliver: "from_id", from_id: 4 })).map((m) => m.msg_id)).toEqual([4]);
    expect((await fetchMsgs(a, { deliver: "earliest", config: { num_msgs: 2 } })).length).toBe(2);
  });

  it("rejects bad FETCH bodies", async () => {
    const a = await createMailbox();
    for (const body of [{ deliver: "from_id" }, { deliver: "sometimes" }, { config: { num_msgs: 0 } }, { force_deliver: "yes" }]) {
      const r = await mq9(`$mq9.AI.MSG.FETCH.${a}`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).not.toBe("");
    }
  });
});
