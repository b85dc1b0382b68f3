/**
 * Metering round trip against a real local broker (issue 9): a known
 * workload over MortarMQ (SDK), mq9 over HTTP and mq9 over NATS (nats.ws),
 * then `GET /admin/tenants/default/usage` must equal it exactly — requests,
 * messages and bytes both ways, storage high-water — and /metrics (parsed
 * with a Prometheus parser) must agree. docs/operations.md defines what
 * counts.
 */
import { GROUP_STORAGE_BYTES } from "../../objects/registry/config";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { parseMetrics, sampleValue } from "../fixtures/prometheus";
import { until } from "../fixtures/until";
import { usageAnswerSchema, type UsageHours } from "../../wire/admin/tenants";

const ADMIN = "e2e-admin-token";
/** A broker with ADMIN_TOKEN is closed (docs/tenants.md): the workload uses a static token of tenant `default`. */
const TOKEN = "e2e-default-token";
const FLUSH_MS = 200;

let stateDir: string;
let broker: LocalBroker;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-telemetry-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { TELEMETRY_FLUSH_MS: String(FLUSH_MS), ADMIN_TOKEN: ADMIN, AUTH_TOKENS: `${TOKEN}:default` } });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

async function usage(): Promise<UsageHours> {
  const from = Date.now() - 3_600_000;
  const res = await fetch(`${broker.url}/admin/tenants/default/usage?from=${from}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
  expect(res.status).toBe(200);
  return usageAnswerSchema.parse(await res.json()).totals;
}

async function mq9(subject: string, body: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${broker.url}/mq9/${subject}`, { method: "POST", body, headers: { Authorization: `Bearer ${TOKEN}` } });
  const json = (await res.json()) as Record<string, unknown>;
  expect(json.error).toBe("");
  return json;
}

async function connectNats(): Promise<NatsConnection> {
  (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
  const { connect } = await import("nats.ws");
  return connect({ servers: toWebSocketUrl(broker.url, "nats"), reconnect: false, token: TOKEN });
}

describe("usage metering, real broker", () => {
  it("a known workload over MortarMQ, mq9 HTTP and NATS is metered exactly", async () => {
    // MortarMQ: CONNECT, DECLARE, 20 PUB (100 B values), SUB, 2 CONTROL_ACK, 20 ACK, HEARTBEAT LEAVE = 46 requests.
    const client = await MortarClient.connect(broker.url, { keepaliveMs: 0, token: TOKEN });
    await client.declare("metered", 2);
    const value = new Uint8Array(100).fill(0x61);
    await Promise.all(Array.from({ length: 20 }, (_, i) =>
      client.publish("metered", i % 2, null, value, { producerId: 9n, producerSeq: BigInt(i + 1) })));
    const sub = await client.subscribe("metered", "billing", { heartbeatMs: 0 });
    for (let i = 0; i < 20; i++) {
      const m = await sub.next(10_000);
      expect(m?.value.length).toBe(100);
      await m!.ack();
    }
    await sub.close();
    await client.close();

    // mq9 over HTTP: CREATE, 3 SENDs (10 + 20 + 30 B), a group FETCH of the 3 = 5 requests.
    const address = "metered.box";
    await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: address, ttl: 0 }));
    for (const size of [10, 20, 30]) await mq9(`$mq9.AI.MSG.SEND.${address}`, "b".repeat(size));
    const fetched = await mq9(`$mq9.AI.MSG.FETCH.${address}`, JSON.stringify({ group_name: "g", deliver: "earliest", config: { max_wait_ms: 0 } }));
    expect((fetched.messages as unknown[]).length).toBe(3);

    // mq9 over NATS: 2 SENDs (40 B each) and a QUERY returning all 5 messages = 3 requests.
    const nc = await connectNats();
    const td = new TextDecoder();
    for (let i = 0; i < 2; i++) {
      const r = JSON.parse(td.decode((await nc.request(`$mq9.AI.MSG.SEND.${address}`, new Uint8Array(40).fill(0x62), { timeout: 10_000 })).data));
      expect(r.error).toBe("");
    }
    const q = JSON.parse(td.decode((await nc.request(`$mq9.AI.MSG.QUERY.${address}`, new TextEncoder().encode("{}"), { timeout: 10_000 })).data));
    expect(q.messages.length).toBe(5);
    await nc.close();

    const expected = {
      requests: 46 + 5 + 3,
      messages_in: 20 + 3 + 2,
      bytes_in: 2000 + 60 + 80,
      messages_out: 20 + 3 + 5,
      bytes_out: 2000 + 60 + 140,
      storage_bytes: 2000 + 140 + GROUP_STORAGE_BYTES, // the consumer group "billing" counts too (#28 item 3)
    };
    // Every object reports within the flush interval, connections when they close.
    await until(async () => {
      const u = await usage();
      return u.requests >= expected.requests && u.messages_out >= expected.messages_out && u.storage_bytes >= expected.storage_bytes;
    }, 20_000, 100);
    await new Promise((r) => setTimeout(r, FLUSH_MS * 5)); // stragglers would show now
    const { connection_seconds, rows_written, rows_read, do_requests, worker_requests, ...metered } = await usage();
    expect(metered).toEqual(expected);
    expect(connection_seconds).toBeGreaterThan(0);
    // what it cost (docs/tenants.md "What a tenant costs"): at least a row per stored message, a request per mq9 SEND
    expect(rows_written).toBeGreaterThanOrEqual(expected.messages_in);
    expect(rows_read).toBeGreaterThan(0);
    expect(do_requests).toBeGreaterThanOrEqual(5 + 3);
    expect(worker_requests).toBeGreaterThanOrEqual(5 + 2); // the 5 mq9 HTTP requests and the two WebSocket upgrades (MortarMQ, NATS)

    // /metrics agrees (operator token; tenant label).
    const res = await fetch(`${broker.url}/metrics`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    const samples = parseMetrics(await res.text());
    const v = (name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, { tenant: "default", ...labels });
    expect([v("mortarmq_messages_published_total"), v("mortarmq_messages_delivered_total"), v("mortarmq_messages_acked_total")]).toEqual([20, 20, 20]);
    expect(v("mortarmq_mq9_requests_total", { transport: "http" })).toBe(5);
    expect(v("mortarmq_mq9_requests_total", { transport: "nats" })).toBe(3);
    const requestOps = ["connect", "declare", "pub", "sub", "ack", "nack", "ping", "pull", "heartbeat", "control_ack", "credit"];
    expect(requestOps.reduce((s, op) => s + v("mortarmq_frames_received_total", { op }), 0)).toBe(46);
    expect(v("mortarmq_open_connections")).toBe(0);
    // With ADMIN_TOKEN set the broker is closed: /admin needs the operator token, a tenant token is forbidden.
    expect((await fetch(`${broker.url}/admin/tenants/default/usage`)).status).toBe(401);
    expect((await fetch(`${broker.url}/admin/tenants/default/usage`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(403);
  });
});
