/**
 * The operator surface through the real Worker and objects (vitest pool,
 * telemetry flush every 100 ms): /metrics parses with a Prometheus parser
 * and moves by exactly the traffic a test sends over MortarMQ, mq9 HTTP and
 * NATS; /stats shows the lag a test created; /healthz; who may read what.
 * The tests of this file run in order and share tenant `default`, so every
 * counter check compares values before and after its own traffic.
 */
import { GROUP_STORAGE_BYTES } from "../../../objects/registry/config";
import { SELF, createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op, PubResultFlags, type MsgFrame } from "../../../wire/mortar";
import type { Env } from "../../../objects/env";
import { app } from "../../../worker/app";
import { objectName } from "../../../objects/shared/names";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { METRICS, series } from "../../../objects/usage/catalog";
import { hourOf } from "../../../objects/usage/report";
import { usageStub } from "../../../objects/usage/stub";
import { declaredFamilies, parseMetrics, sampleValue, type Sample } from "../../fixtures/prometheus";
import { until } from "../../fixtures/until";
import { expectErr, expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";
import { Peer, isAssign, isMsg } from "../helpers/peer";
import { freshAddress } from "../helpers/mq9";

/** The settings in force of a topic that sets none, with this project's vars (the defaults: 7 days, no size limit). */
const DEFAULT_RETENTION = { retention_ms: 604_800_000, retention_bytes: 8 * 1024 ** 3, retention_messages: 0, discard: "old" };
import { openNats } from "../helpers/nats-ws";

const testEnv = env as unknown as Env;
const FLUSH_MS = 100;
const te = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await SELF.fetch("http://broker/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
}

/** Value of a series of tenant `default`. */
const v = (s: Sample[], name: string, labels: Record<string, string> = {}) => sampleValue(s, name, { tenant: "default", ...labels });

/** Waits past the flush interval, then runs the alarms of `stubs` (their telemetry job), so their reports are in. */
async function flush(stubs: DurableObjectStub[]): Promise<void> {
  await sleep(FLUSH_MS * 3);
  for (const s of stubs) await runDurableObjectAlarm(s);
}

/** A mq9 request over HTTP, with the body bytes both ways. */
async function post(subject: string, body: string): Promise<{ status: number; json: Record<string, unknown>; sent: number; received: number }> {
  const res = await SELF.fetch(`http://broker/mq9/${subject}`, { method: "POST", body });
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, json: JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>, sent: te.encode(body).length, received: bytes.length };
}

function mailboxStub(address: string): DurableObjectStub {
  return testEnv.MAILBOX.get(testEnv.MAILBOX.idFromName(objectName("mailbox", "default", address)));
}

async function lookup(topicId: number): Promise<TopicInfo> {
  const r = (await registryStub(testEnv, "default").lookup(topicId)) as LookupResult;
  if (!r.ok) throw new Error(r.message);
  return r.topic;
}

describe("/metrics", () => {
  it("declares every catalog metric with HELP and TYPE", async () => {
    const { text } = await scrape();
    expect(declaredFamilies(text)).toEqual(METRICS.map((m) => m.name));
  });

  it("moves by exactly the traffic sent over MortarMQ, mq9 HTTP and NATS", async () => {
    const before = (await scrape()).samples;

    // --- MortarMQ: 7 PUBs (3 non-idempotent, 2 idempotent, 1 duplicate, 1 invalid), PING, SUB, CONTROL_ACK, 3 ACKs.
    const p = await Peer.open();
    const d = await p.c.declare(unique("metrics"), 1);
    const topic = await lookup(d.topicId);
    const value = "0123456789";
    p.send([
      pubFrame(d.topicId, 0, value), pubFrame(d.topicId, 0, value), pubFrame(d.topicId, 0, value),
      pubFrame(d.topicId, 0, value, { producerId: 7n, producerSeq: 1n }),
      pubFrame(d.topicId, 0, value, { producerId: 7n, producerSeq: 2n }),
      pubFrame(d.topicId, 0, value, { producerId: 7n, producerSeq: 2n }),
      pubFrame(d.topicId, 0, value, { producerId: 0n, producerSeq: 5n }),
    ]);
    const answers = await p.answer(7);
    answers.slice(0, 6).forEach((f) => expectOk(f, Op.PUB));
    expect(pubResult(answers[5]).resultFlags & PubResultFlags.DEDUPLICATED).toBe(PubResultFlags.DEDUPLICATED);
    expectErr(answers[6], ErrorCode.INVALID_PRODUCER_FIELDS, Op.PUB);
    expectOk(await p.request({ op: Op.PING }), Op.PING);
    await p.subscribe(d.topicId, "g");
    await p.confirm(await p.take(isAssign, 1));
    const msgs: MsgFrame[] = await p.take(isMsg, 5);
    for (const m of msgs.slice(0, 3)) expectOk(await p.request(p.ackFrame(m)), Op.ACK);

    // --- mq9 over HTTP: 6 requests, 2 of them failing.
    const a = freshAddress("metrics");
    const http = [
      await post("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: a, ttl: 0 })),
      await post(`$mq9.AI.MSG.SEND.${a}`, "hello"),
      await post(`$mq9.AI.MSG.SEND.${a}`, "world!"),
      await post(`$mq9.AI.MSG.FETCH.${a}`, JSON.stringify({ deliver: "earliest", config: { max_wait_ms: 0 } })),
      await post(`$mq9.AI.MSG.QUERY.${a}`, "{}"),
      await post(`$mq9.AI.MSG.SEND.${freshAddress("missing")}`, "x"),
      await post("$mq9.AI.NO.SUCH.SUBJECT", ""),
    ];
    expect(http.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 404, 404]);
    expect((http[3]!.json.messages as unknown[]).length).toBe(2);

    // --- mq9 over NATS: one SEND request.
    const nc = await openNats();
    await nc.waitFor(/^INFO .*\r\n/);
    const natsOut = `CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.m 1\r\nPUB $mq9.AI.MSG.SEND.${a} _INBOX.m 3\r\nabc\r\n`;
    nc.send(natsOut);
    await nc.waitFor(/MSG _INBOX\.m 1 \d+\r\n\{"error":"","msg_id":2\}\r\n/);

    // Close both connections (their final reports), let partitions and mailboxes report.
    const mortarIn = p.c.bytesSent, mortarOut = p.c.bytesReceived;
    p.close();
    nc.ws.close(1000, "done");
    const natsIn = te.encode(natsOut).length;
    const natsReceived = te.encode(nc.text).length;
    await flush([partitionStub(testEnv, "default", topic.incarnation, topic.topicId, 0), mailboxStub(a)]);
    let after: Sample[] = [];
    await until(async () => {
      after = (await scrape()).samples;
      return (["mortar", "nats"] as const).every((protocol) =>
        v(after, "mortarmq_connections_opened_total", { protocol }) === v(before, "mortarmq_connections_opened_total", { protocol }) + 1 &&
        v(after, "mortarmq_open_connections", { protocol }) === v(before, "mortarmq_open_connections", { protocol }))
        // the group's storage, reported by the registry (its alarm, right after the group was recorded)
        && v(after, "mortarmq_stored_bytes", { system: "mortar" }) - v(before, "mortarmq_stored_bytes", { system: "mortar" }) >= 50 + GROUP_STORAGE_BYTES;
    }, 10_000, 50).catch((e: Error) => {
      const show = (s: Sample[]) => s.filter((x) => /connections/.test(x.name)).map((x) => `${x.name}${JSON.stringify(x.labels)}=${x.value}`);
      throw new Error(`${e.message}: before ${show(before).join(" ")} after ${show(after).join(" ")}`);
    });

    const delta = (name: string, labels: Record<string, string> = {}) => v(after, name, labels) - v(before, name, labels);
    const got = {
      framesIn: Object.fromEntries(["connect", "declare", "pub", "ping", "sub", "control_ack", "ack"].map((op) => [op, delta("mortarmq_frames_received_total", { op })])),
      framesOut: Object.fromEntries(["ok", "err", "notice", "msg"].map((op) => [op, delta("mortarmq_frames_sent_total", { op })])),
      errors: delta("mortarmq_errors_total", { code: "0x0013", name: "INVALID_PRODUCER_FIELDS" }),
      mortarBytes: [delta("mortarmq_bytes_received_total", { protocol: "mortar" }), delta("mortarmq_bytes_sent_total", { protocol: "mortar" })],
      published: delta("mortarmq_messages_published_total"),
      publishedBytes: delta("mortarmq_published_bytes_total"),
      nonIdempotent: delta("mortarmq_non_idempotent_publishes_total"),
      deduplicated: delta("mortarmq_publishes_deduplicated_total"),
      delivered: delta("mortarmq_messages_delivered_total"),
      deliveredBytes: delta("mortarmq_delivered_bytes_total"),
      acked: delta("mortarmq_messages_acked_total"),
      redelivered: delta("mortarmq_messages_redelivered_total"),
      deadLettered: delta("mortarmq_messages_dead_lettered_total"),
      storedMortar: delta("mortarmq_stored_bytes", { system: "mortar" }),
      mq9Requests: {
        create: delta("mortarmq_mq9_requests_total", { verb: "mailbox_create", outcome: "ok", transport: "http" }),
        send: delta("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "ok", transport: "http" }),
        fetch: delta("mortarmq_mq9_requests_total", { verb: "msg_fetch", outcome: "ok", transport: "http" }),
        query: delta("mortarmq_mq9_requests_total", { verb: "msg_query", outcome: "ok", transport: "http" }),
        missing: delta("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "mailbox_not_found", transport: "http" }),
        unknown: delta("mortarmq_mq9_requests_total", { verb: "unknown", outcome: "unknown_subject", transport: "http" }),
        nats: delta("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "ok", transport: "nats" }),
      },
      httpBytes: [delta("mortarmq_bytes_received_total", { protocol: "http" }), delta("mortarmq_bytes_sent_total", { protocol: "http" })],
      natsBytes: [delta("mortarmq_bytes_received_total", { protocol: "nats" }), delta("mortarmq_bytes_sent_total", { protocol: "nats" })],
      mq9: [delta("mortarmq_mq9_messages_sent_total"), delta("mortarmq_mq9_sent_bytes_total")],
      returned: [delta("mortarmq_mq9_messages_returned_total", { verb: "fetch" }), delta("mortarmq_mq9_returned_bytes_total", { verb: "fetch" }),
        delta("mortarmq_mq9_messages_returned_total", { verb: "query" }), delta("mortarmq_mq9_returned_bytes_total", { verb: "query" })],
      mailboxes: delta("mortarmq_mq9_mailboxes"),
      storedMq9: delta("mortarmq_stored_bytes", { system: "mq9" }),
      waiting: delta("mortarmq_long_polls_waiting"),
    };
    expect(got).toEqual({
      framesIn: { connect: 1, declare: 1, pub: 7, ping: 1, sub: 1, control_ack: 1, ack: 3 },
      framesOut: { ok: 14, err: 1, notice: 1, msg: 5 },
      errors: 1,
      mortarBytes: [mortarIn, mortarOut],
      published: 5, publishedBytes: 50, nonIdempotent: 3, deduplicated: 1,
      delivered: 5, deliveredBytes: 50, acked: 3, redelivered: 0, deadLettered: 0,
      storedMortar: 50 + GROUP_STORAGE_BYTES, // the records' keys + values, and the one consumer group (#28 item 3)
      mq9Requests: { create: 1, send: 2, fetch: 1, query: 1, missing: 1, unknown: 1, nats: 1 },
      httpBytes: [http.reduce((s, r) => s + r.sent, 0), http.reduce((s, r) => s + r.received, 0)],
      natsBytes: [natsIn, natsReceived],
      mq9: [3, 14],
      returned: [2, 11, 2, 11],
      mailboxes: 1,
      storedMq9: 14,
      waiting: 0,
    });
    expect(delta("mortarmq_connection_seconds_total", { protocol: "mortar" })).toBeGreaterThan(0);
    expect(delta("mortarmq_telemetry_reports_total", { result: "duplicate" })).toBe(0);
  }, 30_000);

  it("shows a held long-poll while it waits", async () => {
    const a = freshAddress("poll");
    expect((await post("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: a, ttl: 0 }))).status).toBe(200);
    const before = (await scrape()).samples;
    const held = post(`$mq9.AI.MSG.FETCH.${a}`, JSON.stringify({ config: { max_wait_ms: 5_000 } }));
    let waiting = 0;
    await until(async () => {
      await flush([mailboxStub(a)]);
      waiting = v((await scrape()).samples, "mortarmq_long_polls_waiting", { kind: "mq9_fetch" }) - v(before, "mortarmq_long_polls_waiting", { kind: "mq9_fetch" });
      return waiting !== 0;
    }, 5_000, 10);
    expect(waiting).toBe(1);
    expect((await post(`$mq9.AI.MSG.SEND.${a}`, "wake")).status).toBe(200);
    expect(((await held).json.messages as unknown[]).length).toBe(1);
  });
});

describe("/stats", () => {
  it("shows the high watermark, size, producers and the lag a consumer group left", async () => {
    const p = await Peer.open();
    const name = unique("stats");
    const d = await p.c.declare(name, 2);
    const value = "0123456789";
    p.send([
      ...[1n, 2n, 3n, 4n].map((seq) => pubFrame(d.topicId, 0, value, { producerId: 42n, producerSeq: seq })),
      pubFrame(d.topicId, 1, value), pubFrame(d.topicId, 1, value),
    ]);
    (await p.answer(6)).forEach((f) => expectOk(f, Op.PUB));
    await p.subscribe(d.topicId, "billing");
    await p.confirm(await p.take(isAssign, 2));
    const msgs = await p.take(isMsg, 6);
    const p0 = msgs.filter((m) => m.partition === 0).sort((x, y) => Number(x.sequence - y.sequence));
    for (const m of p0.slice(0, 3)) expectOk(await p.request(p.ackFrame(m)), Op.ACK);

    const res = await SELF.fetch("http://broker/stats");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { tenant: string; generated_at: number; topics: { name: string }[]; mailboxes: number; agents: number };
    expect(doc.tenant).toBe("default");
    expect(doc.generated_at).toBeGreaterThan(0);
    const mine = doc.topics.filter((t) => t.name === name || t.name === `${name}.dlq`);
    expect(mine).toEqual([
      {
        name, topic_id: d.topicId, dlq: false, partition_count: 2, retention: DEFAULT_RETENTION,
        partitions: [
          { partition: 0, first_sequence: 1, high_watermark: 4, size_bytes: 40, producers: 1,
            groups: [{ group: "billing", members: 1, committed_floor: 3, lag: 1, in_flight: 1, retention_skipped: 0 }] },
          { partition: 1, first_sequence: 1, high_watermark: 2, size_bytes: 20, producers: 0,
            groups: [{ group: "billing", members: 1, committed_floor: 0, lag: 2, in_flight: 2, retention_skipped: 0 }] },
        ],
      },
      {
        name: `${name}.dlq`, topic_id: d.topicId + 1, dlq: true, partition_count: 2, retention: DEFAULT_RETENTION,
        partitions: [0, 1].map((partition) => ({ partition, first_sequence: 1, high_watermark: 0, size_bytes: 0, producers: 0, groups: [] })),
      },
    ]);
    p.close();
  });

  it("counts mailboxes (through the pipeline) and agents", async () => {
    const stats = async () => (await (await SELF.fetch("http://broker/stats")).json()) as { mailboxes: number; agents: number };
    const before = await stats();
    const a = freshAddress("count");
    expect((await post("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: a, ttl: 0 }))).status).toBe(200);
    expect((await post("$mq9.AI.AGENT.REGISTER", JSON.stringify({ name: unique("agent"), description: "stats test agent" }))).status).toBe(200);
    await flush([mailboxStub(a)]);
    const after = await stats();
    expect([after.mailboxes - before.mailboxes, after.agents - before.agents]).toEqual([1, 1]);
  });
});

describe("/healthz", () => {
  it("answers 200 with the version once the storage probe answered", async () => {
    const res = await SELF.fetch("http://broker/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", version: expect.stringMatching(/^\d+\.\d+\.\d+$/), auth: "open", storage: "ok" });
  });

  it("answers 503 with the reason when the storage layer does not answer", async () => {
    const broken = { ...testEnv, USAGE: undefined } as unknown as Env;
    const res = await app.fetch(new Request("http://broker/healthz"), broken, createExecutionContext());
    expect(res.status).toBe(503);
    const body = (await res.json()) as { status: string; reason: string; version: string; auth: string };
    expect(body).toMatchObject({ status: "unavailable", auth: "open" });
    expect(body.reason).toMatch(/^storage probe failed \(ref [0-9a-f]{8}\)$/); // the platform's text is logged, not sent
    expect(res.headers.get("Retry-After")).toBe("1");
  });
});

describe("access", () => {
  const closed = { ...testEnv, AUTH_TOKENS: "tok-acme:acme,tok-beta:beta", ADMIN_TOKEN: "tok-admin" } as Env;
  const call = (path: string, token: string | undefined, e: Env = closed) =>
    app.fetch(new Request(`http://broker${path}`, { headers: token ? { Authorization: `Bearer ${token}` } : {} }), e, createExecutionContext());
  const h = hourOf(Date.now());
  const seed = async (tenant: string) =>
    usageStub(testEnv, tenant).report({ reporter: unique("seed"), no: 1, at: h, entries: [[h, series("mortarmq_messages_published_total"), 1]] });

  it("/metrics: the operator sees every tenant, a tenant token its own, no token nothing", async () => {
    await seed("acme");
    await seed("beta");
    expect((await call("/metrics", undefined)).status).toBe(401);
    expect((await call("/metrics", "wrong")).status).toBe(401);
    const tenants = async (token: string) => {
      const samples = parseMetrics(await (await call("/metrics", token)).text());
      expect(samples.filter((s) => s.name === "mortarmq_build_info").map((s) => s.labels)).toEqual([{ version: expect.any(String) }]); // the one sample without a tenant
      return new Set(samples.filter((s) => s.name !== "mortarmq_build_info").map((s) => s.labels.tenant));
    };
    expect(await tenants("tok-acme")).toEqual(new Set(["acme"]));
    const all = await tenants("tok-admin");
    expect(all.has("acme") && all.has("beta")).toBe(true);
  });

  it("/stats: own tenant only with a tenant token; any or all with the operator token", async () => {
    expect((await call("/stats", undefined)).status).toBe(401);
    expect(((await (await call("/stats", "tok-acme")).json()) as { tenant: string }).tenant).toBe("acme");
    expect((await call("/stats?tenant=beta", "tok-acme")).status).toBe(403);
    expect(((await (await call("/stats?tenant=beta", "tok-admin")).json()) as { tenant: string }).tenant).toBe("beta");
    const all = (await (await call("/stats?all=1", "tok-admin")).json()) as { tenants: { tenant: string }[] };
    expect(all.tenants.map((t) => t.tenant)).toEqual(expect.arrayContaining(["acme", "beta"]));
    expect((await call("/stats?all=1", "tok-acme")).status).toBe(403);
    expect(((await (await call("/stats", "tok-admin")).json()) as { tenant: string }).tenant).toBe("default");
    expect((await call("/stats?tenant=Bad!", "tok-admin")).status).toBe(400);
  });

  it("/admin/tenants/:id/usage: operator only; open broker without ADMIN_TOKEN is open", async () => {
    expect((await call("/admin/tenants/acme/usage", undefined)).status).toBe(401);
    expect((await call("/admin/tenants/acme/usage", "tok-acme")).status).toBe(403);
    const noAdmin = { ...closed, ADMIN_TOKEN: undefined } as Env;
    expect((await call("/admin/tenants/acme/usage", "tok-acme", noAdmin)).status).toBe(403);
    const ok = await call(`/admin/tenants/acme/usage?from=${h}&to=${h}`, "tok-admin");
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { tenant: string; hours: { hour: string; messages_in: number }[]; totals: { messages_in: number } };
    expect(body.tenant).toBe("acme");
    expect(body.hours.map((x) => x.hour)).toEqual([new Date(h).toISOString()]);
    expect(body.totals.messages_in).toBeGreaterThanOrEqual(1);
    expect((await call("/admin/tenants/acme/usage", undefined, testEnv)).status).toBe(200);
  });

  it("/admin/tenants/:id/usage: bad tenant ids and ranges are 400", async () => {
    const codes = await Promise.all([
      "/admin/tenants/BAD!/usage", `/admin/tenants/acme/usage?from=${h + 7_200_000}&to=${h}`, "/admin/tenants/acme/usage?from=yesterday",
      `/admin/tenants/acme/usage?from=${h - 40 * 24 * 3_600_000}&to=${h}`,
    ].map(async (path) => (await call(path, "tok-admin")).status));
    expect(codes).toEqual([400, 400, 400, 400]);
  });
});
