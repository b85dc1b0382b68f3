/**
 * Tenant isolation, by trying (docs/tenants.md "Isolation"): tenant B uses
 * tenant A's topic ids and names, group names, subscription ids, mailbox
 * addresses and agent names over MortarMQ, NATS and HTTP, and never sees or
 * changes A's data. Both tenants hold issued tokens.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DeclareFlags, ErrorCode, Op, utf8Bytes, type Frame } from "../../../wire/mortar";
import { expectErr, expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";
import { Peer, isMsg, text } from "../helpers/peer";
import { openNats, type RawNats } from "../helpers/nats-ws";
import { ADMIN, admin, mq9As, tenantWithToken } from "./helpers";

async function statsOf(tenant: string): Promise<any> {
  const res = await SELF.fetch(`http://broker/stats?tenant=${tenant}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
  return res.json();
}

/** A NATS connection CONNECTed with `token`. */
async function nats(token: string): Promise<RawNats> {
  const c = await openNats();
  c.send(`CONNECT {"verbose":false,"headers":true,"auth_token":"${token}"}\r\nSUB _INBOX.r.> 1\r\nPING\r\n`);
  await c.waitFor(/PONG\r\n$/);
  c.clear();
  return c;
}

let seq = 0;
/** One mq9 request over NATS; resolves with the parsed reply. */
async function natsRequest(c: RawNats, subject: string, payload: string): Promise<{ error: string; [k: string]: unknown }> {
  const reply = `_INBOX.r.${++seq}`;
  const bytes = new TextEncoder().encode(payload);
  c.send(`PUB ${subject} ${reply} ${bytes.length}\r\n${payload}\r\n`);
  const m = await c.waitFor(new RegExp(`MSG ${reply.replace(/\./g, "\\.")} 1 (\\d+)\\r\\n`));
  const start = c.text.indexOf(m[0]) + m[0].length;
  const body = c.text.slice(start, start + Number(m[1]));
  c.clear();
  return JSON.parse(body);
}

describe("isolation", () => {
  it("MortarMQ: B cannot reach A's topic ids, topic names, groups or deliveries", async () => {
    const a = await tenantWithToken("iso-a");
    const b = await tenantWithToken("iso-b");
    const pa = await Peer.open(a.token);
    const pb = await Peer.open(b.token);
    const declare = (p: Peer, name: string, n: number, flags = 0) => p.request({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: n, flags });
    expectOk(await declare(pa, "orders", 1), Op.DECLARE);
    const topicA = 1;
    expect(pubResult(await pa.publish(topicA, 0, "a-1")).sequence).toBe(1n);
    expect(pubResult(await pa.publish(topicA, 0, "a-2")).sequence).toBe(2n);

    // B with A's topic id and name, before declaring anything: nothing is there.
    expectErr(await pb.request(pubFrame(topicA, 0, "b-into-a")), ErrorCode.UNKNOWN_TOPIC, Op.PUB);
    const sub = { op: Op.SUB, group: utf8Bytes("billing"), topicId: topicA, partition: 0xffff, startPolicy: 0, creditCount: 10, creditBytes: 0, flags: 0 } as Frame;
    expectErr(await pb.request(sub), ErrorCode.UNKNOWN_TOPIC, Op.SUB);
    expect((await declare(pb, "orders", 1, DeclareFlags.DELETE)).op).toBe(Op.ERR); // cannot delete A's topic

    // B declares the same name: its own topic, same id number, its own sequences.
    expectOk(await declare(pb, "orders", 2), Op.DECLARE);
    expect(pubResult(await pb.publish(topicA, 0, "b-1")).sequence).toBe(1n);

    // Same group name on both: each gets only its own tenant's messages.
    const subB = await pb.subscribe(topicA, "billing");
    const subA = await pa.subscribe(topicA, "billing");
    await pb.confirm(await pb.take((f): f is any => f.op === Op.NOTICE));
    await pa.confirm(await pa.take((f): f is any => f.op === Op.NOTICE));
    const gotA = await pa.take(isMsg, 2);
    const gotB = await pb.take(isMsg, 1);
    expect(gotA.map(text)).toEqual(["a-1", "a-2"]);
    expect(gotB.map(text)).toEqual(["b-1"]);
    expect(subB.subscriptionId).toBe(subA.subscriptionId); // same id number, different connections

    // B replays A's ACK (A's subscription id, delivery ids and epochs) on its own connection: A is not acked.
    for (const m of gotA) await pb.request(pa.ackFrame(m));
    const sa = await statsOf(a.tenant);
    const groupA = sa.topics.find((t: any) => t.name === "orders").partitions[0].groups[0];
    expect(groupA).toMatchObject({ group: "billing", committed_floor: 0, in_flight: 2 });
    expect(sa.topics.find((t: any) => t.name === "orders").partition_count).toBe(1);
    const sb = await statsOf(b.tenant);
    expect(sb.topics.find((t: any) => t.name === "orders")).toMatchObject({ partition_count: 2 });
    expect(sb.topics.find((t: any) => t.name === "orders").partitions[0].high_watermark).toBe(1);
    pa.close();
    pb.close();
  });

  it("mq9 over NATS and HTTP: B cannot read, write, ack or delete A's mailbox, nor see or change A's agents", async () => {
    const a = await tenantWithToken("iso-a");
    const b = await tenantWithToken("iso-b");
    const na = await nats(a.token);
    const nb = await nats(b.token);
    // B listens on A's reply subjects and wildcards: nothing of A's can arrive on B's connection.
    nb.send("SUB _INBOX.> 9\r\nSUB $mq9.> 10\r\nPING\r\n");
    await nb.waitFor(/PONG\r\n$/);
    nb.clear();

    expect(await natsRequest(na, "$mq9.AI.MAILBOX.CREATE", '{"name":"shared.box"}')).toEqual({ error: "", mail_address: "shared.box" });
    expect((await natsRequest(na, "$mq9.AI.MSG.SEND.shared.box", "a-secret")).error).toBe("");
    expect((await mq9As(a.token, "$mq9.AI.AGENT.REGISTER", { name: "alpha", description: "tenant a's agent", mailbox: "shared.box" })).body.error).toBe("");

    const missing = "mailbox shared.box does not exist";
    // Over NATS …
    expect((await natsRequest(nb, "$mq9.AI.MSG.SEND.shared.box", "b-into-a")).error).toBe(missing);
    expect((await natsRequest(nb, "$mq9.AI.MSG.FETCH.shared.box", '{"group_name":"g","config":{"max_wait_ms":0}}')).error).toBe(missing);
    expect((await natsRequest(nb, "$mq9.AI.MSG.QUERY.shared.box", "{}")).error).toBe(missing);
    expect((await natsRequest(nb, "$mq9.AI.MSG.DELETE.shared.box.0", "")).error).toBe(missing);
    expect((await natsRequest(nb, "$mq9.AI.MSG.ACK.shared.box", '{"mail_address":"shared.box","group_name":"g","msg_id":0}')).error).toBe(missing);
    // … and over HTTP.
    expect((await mq9As(b.token, "$mq9.AI.MSG.SEND.shared.box", "b-into-a")).body.error).toBe(missing);
    expect((await mq9As(b.token, "$mq9.AI.MSG.QUERY.shared.box", {})).body.error).toBe(missing);
    expect((await mq9As(b.token, "$mq9.AI.MSG.DELETE.shared.box.0")).body.error).toBe(missing);
    // B creates the same address: its own, empty mailbox.
    expect((await mq9As(b.token, "$mq9.AI.MAILBOX.CREATE", { name: "shared.box" })).body).toEqual({ error: "", mail_address: "shared.box" });
    expect((await natsRequest(nb, "$mq9.AI.MSG.QUERY.shared.box", "{}")).messages).toEqual([]);
    expect((await mq9As(b.token, "$mq9.AI.MSG.SEND.shared.box", "b-1")).body).toEqual({ error: "", msg_id: 0 });
    expect((await mq9As(b.token, "$mq9.AI.MSG.DELETE.shared.box.0")).body.error).toBe("");

    // Agents: B does not see alpha; B's UNREGISTER/REPORT of the name do not touch A's.
    expect((await mq9As(b.token, "$mq9.AI.AGENT.DISCOVER", {})).body.agents).toEqual([]);
    expect((await natsRequest(nb, "$mq9.AI.AGENT.DISCOVER", '{"text":"tenant"}')).agents).toEqual([]);
    expect((await mq9As(b.token, "$mq9.AI.AGENT.UNREGISTER", { name: "alpha" })).body).toEqual({ error: "", removed: false });
    await mq9As(b.token, "$mq9.AI.AGENT.REPORT", { name: "alpha", status: "hijacked" });

    // A still has everything, unchanged.
    const q = await natsRequest(na, "$mq9.AI.MSG.QUERY.shared.box", "{}");
    expect((q.messages as { payload: string }[]).map((m) => atob(m.payload))).toEqual(["a-secret"]);
    const agents = (await mq9As(a.token, "$mq9.AI.AGENT.DISCOVER", {})).body.agents as { name: string; _mq9?: unknown }[];
    expect(agents.map((x) => x.name)).toEqual(["alpha"]);
    expect(JSON.stringify(agents)).not.toContain("hijacked");
    // Nothing of A's ever reached B's connection.
    expect(nb.text).not.toContain("a-secret");
    expect(nb.text).not.toContain("alpha");
    na.ws.close();
    nb.ws.close();
  });

  it("NATS: a second CONNECT with another tenant's token is refused and closes; the connection never acts for that tenant", async () => {
    const a = await tenantWithToken("iso-a");
    const b = await tenantWithToken("iso-b", { connections: 1 });
    // CONNECTed as A, then CONNECT again with B's token (and a CREATE pipelined behind it).
    const c = await nats(a.token);
    c.send(`CONNECT {"verbose":false,"headers":true,"auth_token":"${b.token}"}\r\nPUB $mq9.AI.MAILBOX.CREATE _INBOX.r.x 21\r\n{"name":"switch.box"}\r\nPING\r\n`);
    await c.waitFor(/-ERR 'Authorization Violation'\r\n/);
    expect(await c.closed).toBe(1008);
    expect(c.text).not.toContain("switch.box");
    // Neither tenant got the mailbox, and B's only connection slot is free.
    expect((await mq9As(b.token, "$mq9.AI.MSG.QUERY.switch.box", {})).body.error).toBe("mailbox switch.box does not exist");
    expect((await mq9As(a.token, "$mq9.AI.MSG.QUERY.switch.box", {})).body.error).toBe("mailbox switch.box does not exist");
    const nb = await nats(b.token);
    nb.ws.close();

    // The same over a bearer upgrade (the TCP bridge's --token): the connection is A's from the start.
    const up = await openNats({ Authorization: `Bearer ${a.token}` });
    up.send(`CONNECT {"verbose":false,"auth_token":"${b.token}"}\r\nPING\r\n`);
    await up.waitFor(/-ERR 'Authorization Violation'\r\n/);
    expect(await up.closed).toBe(1008);

    // A second CONNECT with another token of the SAME tenant is fine.
    const t2 = await admin("POST", `/admin/tenants/${a.tenant}/tokens`, {});
    const same = await nats(a.token);
    same.send(`CONNECT {"verbose":false,"headers":true,"auth_token":"${t2.json.token}"}\r\nPING\r\n`);
    await same.waitFor(/PONG\r\n$/);
    expect(same.text).not.toContain("-ERR");
    expect((await natsRequest(same, "$mq9.AI.MAILBOX.CREATE", '{"name":"same.box"}')).error).toBe("");
    same.ws.close();
  });

  it("operator surfaces: B's token reads only B's /stats and /metrics", async () => {
    const a = await tenantWithToken("iso-a");
    const b = await tenantWithToken("iso-b");
    const as = (token: string, path: string) => SELF.fetch(`http://broker${path}`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await as(b.token, `/stats?tenant=${a.tenant}`)).status).toBe(403);
    expect(((await (await as(b.token, "/stats")).json()) as { tenant: string }).tenant).toBe(b.tenant);
    expect((await as(b.token, `/admin/tenants/${a.tenant}/usage`)).status).toBe(403);
    expect(await (await as(b.token, "/metrics")).text()).not.toContain(a.tenant);
  });
});
