import { describe, expect, it } from "vitest";
import { createMailbox, fetchMsgs, freshAddress, mq9, query, send, text } from "../helpers/mq9";

describe("MSG.SEND", () => {
  it("numbers messages per mailbox from 0", async () => {
    const a = await createMailbox();
    const b = await createMailbox();
    expect([await send(a, "a0"), await send(a, "a1"), await send(b, "b0"), await send(a, "a2")]).toEqual([0, 1, 0, 2]);
  });

  it("gives concurrent SENDs (group-committed) distinct consecutive ids, each stored with its payload", async () => {
    const a = await createMailbox();
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => send(a, `p${i}`)));
    expect([...ids].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    const stored = new Map((await query(a)).map((m) => [m.msg_id, text(m)]));
    ids.forEach((id, i) => expect(stored.get(id)).toBe(`p${i}`));
  });

  it("stores payload bytes unchanged (binary, empty)", async () => {
    const a = await createMailbox();
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(await send(a, bytes)).toBe(0);
    expect(await send(a, "")).toBe(1);
    const [m0, m1] = await fetchMsgs(a, { deliver: "earliest" });
    expect(Uint8Array.from(atob(m0.payload), (c) => c.charCodeAt(0))).toEqual(bytes);
    expect(m1.payload).toBe("");
  });

  it("rejects a payload over 1 MiB with 413 and accepts exactly 1 MiB", async () => {
    const a = await createMailbox();
    const big = await mq9(`$mq9.AI.MSG.SEND.${a}`, new Uint8Array(1024 * 1024 + 1));
    expect(big.status).toBe(413);
    expect(big.body.error).toContain("exceeds the limit of 1048576 bytes");
    expect(await send(a, new Uint8Array(1024 * 1024))).toBe(0);
    expect((await query(a)).length).toBe(1);
  });

  it("delivers a mixed batch critical → urgent → normal, FIFO inside each", async () => {
    const a = await createMailbox();
    const order: [string, string][] = [
      ["n1", "normal"], ["u1", "urgent"], ["c1", "critical"], ["n2", ""], ["c2", "critical"], ["u2", "urgent"], ["n3", "normal"],
    ];
    for (const [body, p] of order) await send(a, body, p ? { "mq9-priority": p } : {});
    const msgs = await fetchMsgs(a, { deliver: "earliest" });
    expect(msgs.map(text)).toEqual(["c1", "c2", "u1", "u2", "n1", "n2", "n3"]);
    expect(msgs.map((m) => m.priority)).toEqual(["critical", "critical", "urgent", "urgent", "normal", "normal", "normal"]);
  });

  it("keeps only the newest of 5 messages with one key (QUERY and FETCH)", async () => {
    const a = await createMailbox();
    await send(a, "other");
    for (let i = 0; i < 5; i++) expect(await send(a, `status ${i}`, { "mq9-key": "status" })).toBe(i + 1);
    const q = await query(a, { key: "status" });
    expect(q.map((m) => [m.msg_id, text(m), m.key])).toEqual([[5, "status 4", "status"]]);
    const all = await fetchMsgs(a, { deliver: "earliest" });
    expect(all.map(text)).toEqual(["other", "status 4"]);
  });

  it("carries tags, key, priority and create_time in replies", async () => {
    const a = await createMailbox();
    const before = Math.floor(Date.now() / 1000);
    await send(a, '{"order_id":"o-001"}', { "mq9-tags": "billing,vip", "MQ9-KEY": "o-001", "Mq9-Priority": "urgent" });
    const [m] = await fetchMsgs(a, { deliver: "earliest" });
    expect(m).toMatchObject({ msg_id: 0, priority: "urgent", key: "o-001", tags: ["billing", "vip"] });
    expect(m.create_time).toBeGreaterThanOrEqual(before);
    expect(m.create_time).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it.each([
    [{ "mq9-priority": "high" }, 'invalid mq9-priority "high"'],
    [{ "mq9-delay": "soon" }, "mq9-delay must be a whole number"],
    [{ "mq9-delay": "-1" }, "mq9-delay must be a whole number"],
    [{ "mq9-ttl": "x" }, "mq9-ttl must be a whole number"],
    [{ "mq9-ttl": "2", "mq9-delay": "2" }, "must be greater than mq9-delay"],
    [{ "mq9-colour": "red" }, "unknown header mq9-colour"],
  ])("rejects bad headers %j with 400 and stores nothing", async (headers, message) => {
    const a = await createMailbox();
    const r = await mq9(`$mq9.AI.MSG.SEND.${a}`, "x", headers);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(message);
    expect(await query(a)).toEqual([]);
  });

  it("fails on a missing mailbox", async () => {
    const a = freshAddress();
    expect(await mq9(`$mq9.AI.MSG.SEND.${a}`, "x")).toEqual({ status: 404, body: { error: `mailbox ${a} does not exist` } });
  });
});
