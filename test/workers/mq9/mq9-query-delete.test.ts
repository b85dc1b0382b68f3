import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createMailbox, fetchMsgs, mq9, query, send, text } from "../helpers/mq9";

describe("MSG.QUERY", () => {
  it("combines key, tags, since and limit with AND; newest `limit` in msg_id order; moves no cursor", async () => {
    const a = await createMailbox();
    await send(a, "a", { "mq9-tags": "billing" });
    await send(a, "b", { "mq9-tags": "billing,vip" });
    await send(a, "c", { "mq9-tags": "vip" });
    await send(a, "d", { "mq9-tags": "vip,billing", "mq9-key": "order", "mq9-priority": "critical" });
    await send(a, "e");
    expect((await query(a)).map(text)).toEqual(["a", "b", "c", "d", "e"]);
    expect((await query(a, { limit: 2 })).map(text)).toEqual(["d", "e"]);
    expect((await query(a, { tags: ["billing", "vip"] })).map(text)).toEqual(["b", "d"]);
    expect((await query(a, { tags: "vip" })).map(text)).toEqual(["b", "c", "d"]);
    expect((await query(a, { tags: ["vip"], limit: 1 })).map(text)).toEqual(["d"]);
    expect((await query(a, { key: "order" })).map(text)).toEqual(["d"]);
    expect((await query(a, { key: "order", tags: ["nope"] })).map(text)).toEqual([]);
    expect((await query(a, { tags: ["bill"] })).map(text)).toEqual([]); // whole tags only
    const now = Math.floor(Date.now() / 1000);
    expect((await query(a, { since: now - 60 })).length).toBe(5);
    expect(await query(a, { since: now + 60 })).toEqual([]);
    // QUERY moved nothing: a group starting at earliest still sees everything.
    expect((await fetchMsgs(a, { group_name: "g", deliver: "earliest" })).length).toBe(5);
  });

  it("rejects bad bodies", async () => {
    const a = await createMailbox();
    expect((await mq9(`$mq9.AI.MSG.QUERY.${a}`, { limit: -1 })).status).toBe(400);
    expect((await mq9(`$mq9.AI.MSG.QUERY.${a}`, { since: "yesterday" })).status).toBe(400);
  });
});

describe("MSG.DELETE", () => {
  it("deletes an existing message and reports a missing one", async () => {
    const a = await createMailbox();
    await send(a, "keep");
    await send(a, "drop");
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.1`)).toEqual({ status: 200, body: { error: "", deleted: true } });
    expect((await query(a)).map(text)).toEqual(["keep"]);
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.1`)).toEqual({ status: 404, body: { error: "message not found" } });
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.99`)).toEqual({ status: 404, body: { error: "message not found" } });
    expect(await send(a, "next")).toBe(2); // ids are never reused
  });

  it("checks its body like every request: empty or a JSON object, else 400 and nothing deleted", async () => {
    const a = await createMailbox();
    await send(a, "stays");
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.0`, "garbage")).toEqual({ status: 400, body: { error: expect.stringMatching(/^request body is not valid JSON: /) } });
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.0`, [0])).toEqual({ status: 400, body: { error: "invalid request body: must be a JSON object" } });
    expect((await query(a)).map(text)).toEqual(["stays"]);
    expect(await mq9(`$mq9.AI.MSG.DELETE.${a}.0`, {})).toEqual({ status: 200, body: { error: "", deleted: true } });
    expect(await query(a)).toEqual([]);
  });

  it("never reuses the id of a deleted last message, even after the object restarts", async () => {
    const a = await createMailbox();
    for (const t of ["m0", "m1", "m2"]) await send(a, t);
    await mq9(`$mq9.AI.MSG.DELETE.${a}.2`);
    await abortAllDurableObjects();
    expect(await send(a, "m3")).toBe(3);
    await mq9(`$mq9.AI.MSG.DELETE.${a}.3`);
    await mq9(`$mq9.AI.MSG.DELETE.${a}.1`);
    await abortAllDurableObjects();
    expect(await send(a, "m4")).toBe(4);
    expect((await query(a)).map((m) => m.msg_id)).toEqual([0, 4]);
  });

  it("an ACK of a deleted message from the last batch still advances the group", async () => {
    const a = await createMailbox();
    for (const t of ["m0", "m1", "m2"]) await send(a, t);
    const batch = await fetchMsgs(a, { group_name: "g", deliver: "earliest" });
    await mq9(`$mq9.AI.MSG.DELETE.${a}.2`);
    const r = await mq9(`$mq9.AI.MSG.ACK.${a}`, { group_name: "g", mail_address: a, msg_id: batch[2].msg_id });
    expect(r.body).toEqual({ error: "" });
    expect(await fetchMsgs(a, { group_name: "g" })).toEqual([]);
  });
});
