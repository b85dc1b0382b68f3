/**
 * Issue #26 §2 (f): idle clients let their objects go. On the production
 * bundle in Miniflare with the bill meter (bench/bill/host.ts: it counts
 * each object's constructions, pending timers and held calls, from outside
 * the broker), an idle NATS connection and a Mailbox with a consumer
 * waiting in a long-poll FETCH keep no timer and no call in flight, the
 * runtime evicts both while idle (a second construction), and both carry
 * on correctly on the next message: the waiting FETCH gets the message
 * SENT over the idle NATS connection, the NATS ACK moves the group's
 * cursor, the next FETCH gets only the next message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { NatsConnection } from "nats.ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { startMeteredBroker, type MeteredBroker } from "../../bench/bill/host";
import type { MeterSnapshot } from "../../bench/bill/units";

/** Longer than the runtime keeps an idle object whose only I/O is a hibernatable WebSocket (~10 s after its quiet save, 2 s after its last count), with room for a loaded machine. */
const IDLE_MS = 20_000;
const BOX = "idle.evict";
const te = new TextEncoder();
const td = new TextDecoder();

let b: MeteredBroker;
beforeAll(async () => {
  // A report interval longer than the idle spell and the test (60 s as deployed; 120 s here, so no report alarm wakes an object mid-test): the counts made before it are
  // stored 2 s after the last one (Meter.saveQuiet, a timer that ends then) and read back by the rebuilt objects.
  b = await startMeteredBroker({ TELEMETRY_FLUSH_MS: "120000" });
}, 120_000);
afterAll(async () => {
  await b?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Obj = MeterSnapshot["objects"][number];
const one = (s: MeterSnapshot, kind: string): Obj => {
  const all = s.objects.filter((o) => o.kind === kind);
  expect(all).toHaveLength(1);
  return all[0]!;
};

async function post(subject: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${b.url}/mq9/${subject}`, { method: "POST", body: JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
}

async function request(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown>> {
  const m = await nc.request(subject, te.encode(JSON.stringify(body)), { timeout: 15_000 });
  return JSON.parse(td.decode(m.data)) as Record<string, unknown>;
}

describe("idle objects are evicted and carry on", () => {
  it("an idle NATS session and a Mailbox with a waiting long-poll FETCH: no timer, evicted while idle, then SEND → FETCH answered → ACK → next FETCH", async () => {
    (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
    const { connect } = await import("nats.ws");
    const nc = await connect({ servers: toWebSocketUrl(b.url, "nats"), reconnect: false });
    try {
      expect((await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: BOX, ttl: 3600 })).error).toBe("");
      const fetchBody = { group_name: "g", deliver: "earliest", config: { num_msgs: 10, max_wait_ms: 30_000 } };
      expect(await post(`$mq9.AI.MSG.FETCH.${BOX}`, { ...fetchBody, config: { num_msgs: 10 } })).toEqual({ error: "", messages: [] });
      const waiting = post(`$mq9.AI.MSG.FETCH.${BOX}`, fetchBody); // held: nothing to deliver yet

      const start = await b.snapshot();
      await sleep(IDLE_MS);
      const idle = await b.snapshot();
      for (const kind of ["NatsSession", "Mailbox"]) {
        const o = one(idle, kind);
        expect({ kind, timers: o.timers, inflight: o.inflight }).toEqual({ kind, timers: [], inflight: 0 }); // nothing keeps it resident
      }

      // the next message: over the idle NATS connection, to the mailbox whose consumer waits
      expect(await request(nc, `$mq9.AI.MSG.SEND.${BOX}`, { n: 1 })).toEqual({ error: "", msg_id: 0 });
      const got = (await waiting) as { error: string; messages: { msg_id: number; payload: string }[] };
      expect(got.error).toBe("");
      expect(got.messages.map((m) => [m.msg_id, JSON.parse(Buffer.from(m.payload, "base64").toString())])).toEqual([[0, { n: 1 }]]);
      const after = await b.snapshot();
      for (const kind of ["NatsSession", "Mailbox"]) {
        // constructed again after the idle window began: the runtime had evicted it (nothing else stops an object here)
        expect(one(after, kind).constructs, kind).toBeGreaterThan(one(start, kind).constructs);
      }

      // the group's cursor: delivered 0 (not again), ACK over NATS, then only the next message
      expect(await request(nc, `$mq9.AI.MSG.ACK.${BOX}`, { group_name: "g", mail_address: BOX, msg_id: 0 })).toEqual({ error: "" });
      expect(await request(nc, `$mq9.AI.MSG.SEND.${BOX}`, { n: 2 })).toEqual({ error: "", msg_id: 1 });
      const next = (await post(`$mq9.AI.MSG.FETCH.${BOX}`, { ...fetchBody, config: { num_msgs: 10 } })) as { messages: { msg_id: number }[] };
      expect(next.messages.map((m) => m.msg_id)).toEqual([1]);
    } finally {
      await nc.close();
    }
  }, 90_000);
});
