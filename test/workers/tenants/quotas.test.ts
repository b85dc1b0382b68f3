/**
 * Each quota trips and recovers (docs/tenants.md "Quotas"): publish rate in
 * messages and bytes (MortarMQ PUB, mq9 SEND over HTTP and NATS), storage
 * bytes (through the counting pipeline, 100 ms flush here), connections
 * (MortarMQ and NATS, released at close, expiring after a crash),
 * mailboxes, and consumer groups' storage (GROUP_STORAGE_BYTES each). Nothing accepted is lost: every OK is stored.
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../../objects/env";
import { tenantStub } from "../../../objects/tenants/stub";
import { DeclareFlags, ErrorCode, Op, SUB_PARTITION_ANY, decodeDeclareResult, utf8Bytes, type Frame } from "../../../wire/mortar";
import { GROUP_STORAGE_BYTES } from "../../../objects/registry/config";
import { registryStub } from "../../../objects/registry/stub";
import type { TopicInfo } from "../../../objects/registry/rpc";
import { Peer } from "../helpers/peer";
import { WsConn, connectFrame, expectErr, expectOk, pubFrame } from "../helpers/mortar-ws";
import { openNats } from "../helpers/nats-ws";
import { ADMIN, mq9As, setQuotas, sleep, tenantWithToken } from "./helpers";

// Rate tests send until refused and wait for refills: on a loaded 2-core machine they need more than the 5 s default.
vi.setConfig({ testTimeout: 20_000 });

const testEnv = env as unknown as Env;

async function connected(token: string): Promise<WsConn> {
  const c = await WsConn.open();
  await c.connect(token);
  return c;
}

/** Publishes `values` pipelined in one message; returns the answers. */
async function pubAll(c: WsConn, topicId: number, values: (string | Uint8Array)[]): Promise<Frame[]> {
  c.send(values.map((v) => pubFrame(topicId, 0, v)));
  return c.take(values.length, 10_000);
}

async function highWatermark(tenant: string, topic: string): Promise<number> {
  const s = (await (await SELF.fetch(`http://broker/stats?tenant=${tenant}`, { headers: { Authorization: `Bearer ${ADMIN}` } })).json()) as any;
  return s.topics.find((t: any) => t.name === topic).partitions[0].high_watermark;
}

/** Retries `fn` every 50 ms until it returns true (at most `ms`). */
async function eventually(fn: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await sleep(50);
  }
}

const codes = (fs: Frame[]) => fs.map((f) => (f.op === Op.OK ? "ok" : f.op === Op.ERR ? f.code : f.op));

describe("publish rate", () => {
  it("MortarMQ msg/s: a burst gets one second of the rate, the rest QUOTA_EXCEEDED; it recovers; every OK is stored", async () => {
    const { tenant, token } = await tenantWithToken("rate-m", { publish_msgs_per_s: 10 });
    const c = await connected(token);
    const { topicId } = await c.declare("rated", 1);
    const first = codes(await pubAll(c, topicId, Array.from({ length: 30 }, (_, i) => `m${i}`)));
    const ok1 = first.filter((x) => x === "ok").length;
    expect(ok1).toBeGreaterThanOrEqual(10);
    expect(ok1).toBeLessThanOrEqual(20); // + what refills while the burst is answered (more on a loaded machine)
    expect(first.slice(0, 10)).toEqual(Array(10).fill("ok"));
    expect(first.filter((x) => x !== "ok")).toEqual(Array(30 - ok1).fill(ErrorCode.QUOTA_EXCEEDED));
    await sleep(1100);
    const second = codes(await pubAll(c, topicId, Array.from({ length: 5 }, (_, i) => `n${i}`)));
    expect(second).toEqual(Array(5).fill("ok"));
    expect(await highWatermark(tenant, "rated")).toBe(ok1 + 5);
    c.close();
  });

  it("MortarMQ bytes/s: over the byte rate is QUOTA_EXCEEDED with the rate in the message; it recovers", async () => {
    const { token } = await tenantWithToken("rate-b", { publish_bytes_per_s: 1000 });
    const c = await connected(token);
    const { topicId } = await c.declare("bytes", 1);
    const value = new Uint8Array(600);
    const [a, b] = await pubAll(c, topicId, [value, value]);
    expectOk(a, Op.PUB);
    const err = expectErr(b, ErrorCode.QUOTA_EXCEEDED, Op.PUB);
    expect(new TextDecoder().decode(err.message)).toMatch(/1000 bytes\/s/);
    await sleep(1100);
    expectOk((await pubAll(c, topicId, [value]))[0], Op.PUB);
    c.close();
  });

  it("mq9 over HTTP: 429 too_many_requests with Retry-After; it recovers", async () => {
    const { token } = await tenantWithToken("rate-h", { publish_msgs_per_s: 5 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "rated.box" })).body.error).toBe("");
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof mq9As>> | null = null;
    // sequential SENDs: the bucket refills while they run (slower on a loaded machine), so send until refused
    for (let i = 0; i < 60 && refused === null; i++) {
      const r = await mq9As(token, "$mq9.AI.MSG.SEND.rated.box", `p${i}`);
      statuses.push(r.status);
      if (r.status === 429) refused = r;
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(refused).not.toBeNull();
    expect(refused!.body.error).toMatch(/^publish rate limit exceeded \(5 msg\/s\)/);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    await sleep(1100);
    expect((await mq9As(token, "$mq9.AI.MSG.SEND.rated.box", "later")).status).toBe(200);
    const stored = (await mq9As(token, "$mq9.AI.MSG.QUERY.rated.box", {})).body.messages as unknown[];
    expect(stored.length).toBe(statuses.filter((s) => s === 200).length + 1);
  });

  it("mq9 over NATS: the reply's error says the rate limit; it recovers", async () => {
    const { token } = await tenantWithToken("rate-n", { publish_msgs_per_s: 3 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "rated.box" })).body.error).toBe("");
    const c = await openNats();
    // one message: the pool may reorder back-to-back messages (docs/testing.md)
    let out = `CONNECT {"verbose":false,"auth_token":"${token}"}\r\nSUB r.> 1\r\n`;
    for (let i = 0; i < 8; i++) out += `PUB $mq9.AI.MSG.SEND.rated.box r.${i} 2\r\nx${i}\r\n`;
    c.send(out + "PING\r\n");
    await c.waitFor(/(MSG r\.\d 1 \d+\r\n[^\r]*\r\n[^]*){8}/, 10_000);
    const replies = [...c.text.matchAll(/MSG r\.(\d) 1 \d+\r\n([^\r]*)\r\n/g)].map((m) => [Number(m[1]), JSON.parse(m[2]!).error as string]);
    expect(replies.filter(([, e]) => e === "").length).toBeGreaterThanOrEqual(3);
    expect(replies.filter(([, e]) => /^publish rate limit exceeded \(3 msg\/s\)/.test(e as string)).length).toBeGreaterThanOrEqual(4);
    c.clear();
    await sleep(1100);
    c.send("PUB $mq9.AI.MSG.SEND.rated.box r.9 2\r\nok\r\n");
    await c.waitFor(/MSG r\.9 1 \d+\r\n\{"error":"","msg_id":\d+\}\r\n/);
    c.ws.close();
  });
});

describe("storage quota", () => {
  it("trips through the counting pipeline (MortarMQ QUOTA_EXCEEDED, HTTP 429), recovers when data is deleted", async () => {
    const { tenant, token } = await tenantWithToken("store", { storage_bytes: 1000 });
    const c = await connected(token);
    const { topicId } = await c.declare("big", 1);
    const value = new Uint8Array(700);
    expect(codes(await pubAll(c, topicId, [value, value]))).toEqual(["ok", "ok"]); // 1400 bytes: the pipeline has not reported yet
    // Within the pipeline's staleness bound (flush 100 ms + state refresh ≤ 1 s) the quota trips.
    let refused: Frame | undefined;
    await eventually(async () => {
      const [f] = await pubAll(c, topicId, ["x"]);
      if (f!.op === Op.ERR) refused = f;
      return f!.op === Op.ERR;
    });
    const err = expectErr(refused, ErrorCode.QUOTA_EXCEEDED, Op.PUB);
    expect(new TextDecoder().decode(err.message)).toMatch(/^storage quota exceeded: the tenant stores \d+ bytes, quota 1000/);
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "store.box" })).body.error).toBe("");
    const http = await mq9As(token, "$mq9.AI.MSG.SEND.store.box", "hello");
    expect(http.status).toBe(429);
    expect(http.body.error).toMatch(/^storage quota exceeded/);
    expect(http.headers.get("retry-after")).toBe("1");
    const stored = await highWatermark(tenant, "big");
    // Deleting the topic frees the storage; publishing works again.
    c.send([{ op: Op.DECLARE, topic: utf8Bytes("big"), partitionCount: 1, flags: DeclareFlags.DELETE }]);
    expectOk((await c.take(1))[0], Op.DECLARE);
    const { topicId: next } = await c.declare("small", 1);
    await eventually(async () => (await pubAll(c, next, ["y"]))[0]!.op === Op.OK);
    expect(stored).toBeGreaterThanOrEqual(2);
    c.close();
  });
});

// Order of pipelined mq9 requests over NATS under quotas is checked on the real runtime
// (test/e2e/admin-cli.test.ts): the workers pool can reorder RPCs into a Durable Object (docs/testing.md).

describe("connection quota", () => {
  it("MortarMQ and NATS count together; over → QUOTA_EXCEEDED / -ERR 'maximum connections exceeded'; a close frees a slot", async () => {
    const { token } = await tenantWithToken("conn", { connections: 2 });
    const a = await connected(token);
    const n = await openNats();
    n.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nPING\r\n`);
    await n.waitFor(/PONG\r\n$/);
    const over = await WsConn.open();
    over.send([connectFrame(token)]);
    const err = expectErr((await over.take(1))[0], ErrorCode.QUOTA_EXCEEDED, Op.CONNECT);
    expect(new TextDecoder().decode(err.message)).toMatch(/connection quota exceeded: the tenant has 2 open connections, quota 2/);
    const overNats = await openNats();
    overNats.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\n`);
    await overNats.waitFor(/-ERR 'maximum connections exceeded'\r\n$/);
    expect(await overNats.closed).toBe(1008);
    // The bridge's way (a bearer token on the upgrade) is counted too.
    const overBearer = await openNats({ Authorization: `Bearer ${token}` });
    await overBearer.waitFor(/^INFO [^\r]*\r\n-ERR 'maximum connections exceeded'\r\n$/);
    expect(await overBearer.closed).toBe(1008);
    // The refused MortarMQ connection stays open and may CONNECT again once a slot is free.
    a.close();
    await eventually(async () => {
      over.send([connectFrame(token)]);
      return (await over.take(1))[0]!.op === Op.OK;
    });
    over.close();
    n.ws.close();
  });

  it("lowering the quota below the open connections closes none of them; new ones are refused until enough closed", async () => {
    const { tenant, token } = await tenantWithToken("conn-lower", { connections: 3 });
    const a = await connected(token);
    const b = await connected(token);
    await setQuotas(tenant, { connections: 1 });
    await sleep(300 + 200); // past the open connections' next re-check, which brings them the new quota
    for (const c of [a, b]) expect((await c.declare(`still-${Math.random().toString(36).slice(2, 8)}`, 1)).topicId).toBeGreaterThan(0);
    const late = await WsConn.open();
    late.send([connectFrame(token)]);
    expectErr((await late.take(1))[0], ErrorCode.QUOTA_EXCEEDED, Op.CONNECT);
    a.close();
    await sleep(200);
    late.send([connectFrame(token)]);
    expectErr((await late.take(1))[0], ErrorCode.QUOTA_EXCEEDED, Op.CONNECT); // b alone still fills a quota of 1
    b.close();
    await eventually(async () => {
      late.send([connectFrame(token)]);
      return (await late.take(1))[0]!.op === Op.OK;
    });
    late.close();
  });

  it("a crashed connection's slot expires (lease of 5 re-check intervals)", async () => {
    const { tenant, token } = await tenantWithToken("conn-exp", { connections: 1 });
    // A session that took its slot and then vanished without releasing it.
    expect((await tenantStub(testEnv, tenant).openConnection({ leaseId: "crashed", protocol: "mortar" })).ok).toBe(true);
    const c = await WsConn.open();
    c.send([connectFrame(token)]);
    expectErr((await c.take(1))[0], ErrorCode.QUOTA_EXCEEDED, Op.CONNECT);
    await sleep(5 * 300 + 100);
    c.send([connectFrame(token)]);
    expectOk((await c.take(1))[0], Op.CONNECT);
    c.close();
  });
});

describe("mailbox quota", () => {
  it("CREATE beyond the quota is 429 quota_exceeded (HTTP and NATS); an expired mailbox frees its slot", { timeout: 40_000 }, async () => {
    const { token } = await tenantWithToken("boxes", { mailboxes: 2 });
    const createdAt = Date.now();
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.a", ttl: 1 })).body.error).toBe("");
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.b", ttl: 1 })).body.error).toBe("");
    const over = await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.c" });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: expect.stringMatching(/^mailbox quota exceeded: .* quota 2; nothing was created$/), mail_address: "" });
    expect(over.headers.get("retry-after")).toBe("10");
    const n = await openNats();
    n.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nSUB r 1\r\nPUB $mq9.AI.MAILBOX.CREATE r 16\r\n{"name":"box.d"}\r\n`);
    await n.waitFor(/MSG r 1 \d+\r\n\{"error":"mailbox quota exceeded[^"]*","mail_address":""\}\r\n/);
    n.ws.close();
    // box.a and box.b expire after 1 s; their expiry removes them from the tenant's mailbox index
    // (the exact count), so CREATE works again soon after.
    await eventually(async () => (await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.c" })).status === 200, 25_000);
    expect(Date.now() - createdAt).toBeGreaterThanOrEqual(1000); // not before they expired
  });

  it("a CREATE that creates nothing (bad request, existing name) does not take a slot", async () => {
    const { token } = await tenantWithToken("boxes", { mailboxes: 2 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.x" })).status).toBe(200);
    const bad = await mq9As(token, "$mq9.AI.MAILBOX.CREATE", "{not json");
    expect(bad.status).toBe(400);
    const dup = await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.x" });
    expect({ status: dup.status, error: dup.body.error }).toEqual({ status: 409, error: expect.stringMatching(/exists/) });
    const n = await openNats();
    n.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nSUB r.> 1\r\nPUB $mq9.AI.MAILBOX.CREATE r.1 14\r\n{"name":"B!x"}\r\n`);
    await n.waitFor(/MSG r\.1 1 \d+\r\n\{"error":"invalid mail_address .*","mail_address":""\}\r\n/);
    expect(n.text).not.toContain("quota");
    // One mailbox exists: the second is admitted, at once, over NATS; a third is over the quota.
    n.send(`PUB $mq9.AI.MAILBOX.CREATE r.2 16\r\n{"name":"box.y"}\r\n`);
    await n.waitFor(/MSG r\.2 1 \d+\r\n\{"error":"","mail_address":"box\.y"\}\r\n/);
    n.ws.close();
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.z" })).status).toBe(429);
  });
});

describe("storage quota and consumer groups (#28 item 3)", () => {
  it("each recorded group counts GROUP_STORAGE_BYTES: new groups past the quota are QUOTA_EXCEEDED, existing ones still join", async () => {
    const { token } = await tenantWithToken("groups", { storage_bytes: 2 * GROUP_STORAGE_BYTES + 1000 }); // two groups fit, not three
    const p = await Peer.open(token);
    const { topicId } = decodeDeclareResult(expectOk(await p.request({ op: Op.DECLARE, topic: utf8Bytes("grouped"), partitionCount: 1, flags: 0 }), Op.DECLARE).result);
    const sub = (group: string) => p.request({
      op: Op.SUB, group: utf8Bytes(group), topicId, partition: SUB_PARTITION_ANY, startPolicy: 0, creditCount: 1, creditBytes: 0, flags: 0,
    });
    expectOk(await sub("g1"), Op.SUB);
    expectOk(await sub("g2"), Op.SUB);
    // within the pipeline's staleness bound (flush 100 ms + state refresh ≤ 1 s) the groups are counted: a new group is refused
    let refused: Frame | undefined;
    let extra = 0;
    await eventually(async () => {
      const f = await sub(`more${extra++}`);
      if (f.op === Op.ERR) refused = f;
      return f.op === Op.ERR;
    });
    const err = expectErr(refused, ErrorCode.QUOTA_EXCEEDED, Op.SUB);
    expect(new TextDecoder().decode(err.message)).toMatch(
      new RegExp(`^storage quota exceeded: the tenant stores \\d+ bytes, quota ${2 * GROUP_STORAGE_BYTES + 1000}, and a consumer group counts ${GROUP_STORAGE_BYTES}`));
    expectOk(await sub("g1"), Op.SUB); // an existing group joins
    p.close();
  });

  it("a quota smaller than one group refuses the first group and records nothing", async () => {
    const { tenant, token } = await tenantWithToken("groups-small", { storage_bytes: 10_000 });
    const p = await Peer.open(token);
    const { topicId } = decodeDeclareResult(expectOk(await p.request({ op: Op.DECLARE, topic: utf8Bytes("tiny"), partitionCount: 1, flags: 0 }), Op.DECLARE).result);
    const f = await p.request({ op: Op.SUB, group: utf8Bytes("g"), topicId, partition: SUB_PARTITION_ANY, startPolicy: 0, creditCount: 1, creditBytes: 0, flags: 0 });
    expectErr(f, ErrorCode.QUOTA_EXCEEDED, Op.SUB);
    const reg = registryStub(testEnv, tenant);
    const info = (await reg.find("tiny")) as TopicInfo;
    expect(await reg.groupNames(info.incarnation, info.topicId)).toEqual([]);
    p.close();
  });
});
