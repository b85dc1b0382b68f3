/**
 * The bill bench's workloads (issue #26 §1, (a)–(h)), each on its own
 * fresh metered broker (./host.ts) so no workload pays for another's
 * leftovers. A workload sets up its clients (connections, topics,
 * mailboxes, subscriptions: not counted), takes a snapshot, runs its
 * messages, waits `settleMs` with its clients still open so the telemetry
 * flushes that the messages caused land (TELEMETRY_FLUSH_MS, 10 s by
 * default), and takes the closing snapshot: units per message all-in.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { MortarClient, type Subscription } from "../../client/sdk";
import { httpCaller, type HttpCaller } from "../http";
import { startMeteredBroker, type MeteredBroker } from "./host";
import { windowUnits, type MeterSnapshot, type WindowUnits } from "./units";

/** A counted stretch of a workload. */
export interface Phase {
  name: string;
  /** Messages the phase moved (the per-message denominator). */
  messages: number;
  window: WindowUnits;
}

/** One workload's result. */
export interface WorkloadRun {
  id: string;
  title: string;
  /** Messages sent and consumed in the counted window. */
  messages: number;
  /** The whole counted window (all phases and the settle). */
  window: WindowUnits;
  /** Sub-windows (the census reads these). */
  phases: Phase[];
  /** Snapshot at the end (timers and in-flight requests: duration signals). */
  end: MeterSnapshot;
}

/** Knobs (bench options). */
export interface WorkloadOptions {
  /** Wait after the last message so telemetry flushes land, ms. */
  settleMs: number;
  /** Messages for the pipelined / batched workloads (a, d, e). */
  bulk: number;
  /** Messages for the one-at-a-time workloads (b, c) and push (h). */
  single: number;
}

const VALUE = new Uint8Array(128).fill(0x61);
const PAYLOAD = JSON.stringify({ text: "x".repeat(48) }); // 64 bytes, as the mq9 benches
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `body` on a fresh metered broker, disposing it after. */
export async function onFreshBroker<T>(vars: Record<string, string>, body: (b: MeteredBroker) => Promise<T>): Promise<T> {
  const b = await startMeteredBroker(vars);
  try {
    return await body(b);
  } finally {
    await b.dispose();
  }
}

/** Snapshots at phase boundaries → the run's windows. */
class Recorder {
  private marks: { name: string; messages: number; at: MeterSnapshot }[] = [];
  private first!: MeterSnapshot;
  constructor(private broker: MeteredBroker) {}
  async start(): Promise<void> {
    this.first = await this.broker.snapshot();
  }
  async mark(name: string, messages: number): Promise<void> {
    this.marks.push({ name, messages, at: await this.broker.snapshot() });
  }
  result(id: string, title: string, messages: number): WorkloadRun {
    const phases: Phase[] = [];
    let prev = this.first;
    for (const m of this.marks) {
      phases.push({ name: m.name, messages: m.messages, window: windowUnits(prev, m.at) });
      prev = m.at;
    }
    return { id, title, messages, window: windowUnits(this.first, prev), phases, end: prev };
  }
}

/** A consumer that acks every message it gets; resolves `done` after `n` acks. */
function acker(sub: Subscription, n: number): { done: Promise<void>; stop: () => void } {
  let stopped = false;
  let received = 0;
  let acked = 0;
  const done = new Promise<void>((resolve, reject) => {
    void (async () => {
      while (!stopped && received < n) {
        const m = await sub.next(200);
        if (!m) continue;
        received++;
        m.ack().then(() => {
          if (++acked >= n) resolve();
        }, reject);
      }
    })().catch(reject);
  });
  return { done, stop: () => (stopped = true) };
}

/** (a) MortarMQ pipelined: `n` PUBs in flight at once to one partition, one member (credit 1000) acking each. */
export async function mortarPipelined(b: MeteredBroker, o: WorkloadOptions, n = o.bulk): Promise<WorkloadRun> {
  const prod = await MortarClient.connect(b.url);
  const cons = await MortarClient.connect(b.url);
  try {
    await prod.declare("bill-a", 1);
    await cons.declare("bill-a", 1);
    const sub = await cons.subscribe("bill-a", "bill", { creditCount: 1000 });
    await prod.publish("bill-a", 0, null, VALUE); // warm: the partition exists, the member is assigned
    const warm = acker(sub, 1);
    await warm.done;
    warm.stop();
    const rec = new Recorder(b);
    await rec.start();
    const consumed = acker(sub, n);
    await Promise.all(Array.from({ length: n }, () => prod.publish("bill-a", 0, null, VALUE)));
    await rec.mark("PUB", n);
    await consumed.done;
    await sleep(o.settleMs);
    await rec.mark("MSG/ACK + settle", n);
    return rec.result("a", `MortarMQ pipelined: ${n} PUBs in flight, one partition, 128 B, one member (credit 1000) ACKing each`, n);
  } finally {
    await prod.close();
    await cons.close();
  }
}

/** (b) MortarMQ one message at a time: PUB, wait for its MSG, ACK, next. */
export async function mortarLockstep(b: MeteredBroker, o: WorkloadOptions, n = o.single): Promise<WorkloadRun> {
  const prod = await MortarClient.connect(b.url);
  const cons = await MortarClient.connect(b.url);
  try {
    await prod.declare("bill-b", 1);
    await cons.declare("bill-b", 1);
    const sub = await cons.subscribe("bill-b", "bill", { creditCount: 1000 });
    const step = async () => {
      await prod.publish("bill-b", 0, null, VALUE);
      let m = null;
      while (!m) m = await sub.next(1000);
      await m.ack();
    };
    await step(); // warm
    const rec = new Recorder(b);
    await rec.start();
    for (let i = 0; i < n; i++) await step();
    await sleep(o.settleMs);
    await rec.mark("PUB→MSG→ACK + settle", n);
    return rec.result("b", `MortarMQ one at a time: PUB → MSG → ACK, one partition, 128 B`, n);
  } finally {
    await prod.close();
    await cons.close();
  }
}

const mq9Http = (http: HttpCaller) => async (subject: string, body: unknown): Promise<Record<string, unknown>> => {
  const text = await http.call("POST", `/mq9/${subject}`, { body: typeof body === "string" ? body : JSON.stringify(body) });
  const reply = JSON.parse(text) as Record<string, unknown>;
  if (reply.error) throw new Error(`${subject}: ${String(reply.error)}`);
  return reply;
};

interface FetchedMsg {
  msg_id: number;
}

/** (c) mq9 over HTTP one at a time: SEND, FETCH (1, no wait), ACK. */
export async function mq9HttpSingle(b: MeteredBroker, o: WorkloadOptions, n = o.single): Promise<WorkloadRun> {
  const http = httpCaller(b.port, 4);
  const mq9 = mq9Http(http);
  try {
    const box = "bill.c";
    await mq9("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 3600 });
    const step = async () => {
      await mq9(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD);
      const r = await mq9(`$mq9.AI.MSG.FETCH.${box}`, { group_name: "g", deliver: "earliest", config: { num_msgs: 1, max_wait_ms: 0 } });
      const msgs = r.messages as FetchedMsg[];
      if (msgs.length !== 1) throw new Error(`FETCH returned ${msgs.length} messages`);
      await mq9(`$mq9.AI.MSG.ACK.${box}`, { group_name: "g", mail_address: box, msg_id: msgs[0]!.msg_id });
    };
    await step(); // warm
    const rec = new Recorder(b);
    await rec.start();
    for (let i = 0; i < n; i++) await step();
    await sleep(o.settleMs);
    await rec.mark("SEND+FETCH+ACK + settle", n);
    return rec.result("c", "mq9 over HTTP one at a time: SEND, FETCH 1, ACK", n);
  } finally {
    http.close();
  }
}

/** Runs `n` calls of `op(i)` with `concurrency` in flight. */
async function concurrent(n: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) await op(next++);
  }));
}

/** FETCH `batch` + one ACK of its last message until `n` were consumed; `call` is the mq9 request of a transport. */
async function fetchAckAll(call: (subject: string, body: unknown) => Promise<Record<string, unknown>>, box: string, n: number, batch: number): Promise<void> {
  let got = 0;
  while (got < n) {
    const r = await call(`$mq9.AI.MSG.FETCH.${box}`, { group_name: "g", deliver: "earliest", config: { num_msgs: batch, max_wait_ms: 0 } });
    const msgs = r.messages as FetchedMsg[];
    if (msgs.length === 0) throw new Error(`FETCH returned nothing after ${got}/${n}`);
    got += msgs.length;
    await call(`$mq9.AI.MSG.ACK.${box}`, { group_name: "g", mail_address: box, msg_id: msgs[msgs.length - 1]!.msg_id });
  }
}

/** (d) mq9 over HTTP batched: `n` SENDs 32 concurrent, then FETCH 100 + one ACK per batch. */
export async function mq9HttpBatched(b: MeteredBroker, o: WorkloadOptions, n = o.bulk): Promise<WorkloadRun> {
  const http = httpCaller(b.port, 40);
  const mq9 = mq9Http(http);
  try {
    const box = "bill.d";
    await mq9("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 3600 });
    await mq9(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD); // warm
    await fetchAckAll(mq9, box, 1, 100);
    const rec = new Recorder(b);
    await rec.start();
    await concurrent(n, 32, () => mq9(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD));
    await rec.mark("SEND", n);
    await fetchAckAll(mq9, box, n, 100);
    await sleep(o.settleMs);
    await rec.mark("FETCH/ACK + settle", n);
    return rec.result("d", `mq9 over HTTP batched: ${n} SENDs 32 concurrent, FETCH 100 + one ACK per batch`, n);
  } finally {
    http.close();
  }
}

/** A nats.ws connection straight to the broker's `/nats`. */
async function natsWs(url: string) {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  const { connect } = await import("nats.ws");
  return connect({ servers: toWebSocketUrl(url, "nats") });
}

/** (e) mq9 over NATS WebSocket: `n` SEND requests pipelined (all in flight), then FETCH 100 + one ACK per batch. */
export async function mq9NatsPipelined(b: MeteredBroker, o: WorkloadOptions, n = o.bulk): Promise<WorkloadRun> {
  const nc = await natsWs(b.url);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const call = async (subject: string, body: unknown) => {
    const m = await nc.request(subject, enc.encode(typeof body === "string" ? body : JSON.stringify(body)), { timeout: 60_000 });
    const reply = JSON.parse(dec.decode(m.data)) as Record<string, unknown>;
    if (reply.error) throw new Error(`${subject}: ${String(reply.error)}`);
    return reply;
  };
  try {
    const box = "bill.e";
    await call("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 3600 });
    await call(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD); // warm
    await fetchAckAll(call, box, 1, 100);
    const rec = new Recorder(b);
    await rec.start();
    await Promise.all(Array.from({ length: n }, () => call(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD)));
    await rec.mark("SEND", n);
    await fetchAckAll(call, box, n, 100);
    await sleep(o.settleMs);
    await rec.mark("FETCH/ACK + settle", n);
    return rec.result("e", `mq9 over NATS WebSocket: ${n} SENDs pipelined, FETCH 100 + one ACK per batch`, n);
  } finally {
    await nc.close();
  }
}

/** (h) push: a mailbox pushed (concurrency 1) to a node:http receiver here; `n` SENDs over HTTP, 8 concurrent, until all arrived. */
export async function pushDelivery(b: MeteredBroker, o: WorkloadOptions, n = o.single): Promise<WorkloadRun> {
  let arrived = 0;
  let onArrive = () => {};
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200).end();
      arrived++;
      onArrive();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const port = (receiver.address() as AddressInfo).port;
  const http = httpCaller(b.port, 16);
  const mq9 = mq9Http(http);
  const until = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`push: ${arrived}/${count} arrived in 120 s`)), 120_000);
      onArrive = () => arrived >= count && (clearTimeout(t), resolve());
      onArrive();
    });
  try {
    const box = "bill.h";
    await mq9("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 3600 });
    await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "hooks", url: `http://127.0.0.1:${port}/in`, deliver: "latest" });
    await mq9(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD); // warm
    await until(1);
    const rec = new Recorder(b);
    await rec.start();
    await concurrent(n, 8, () => mq9(`$mq9.AI.MSG.SEND.${box}`, PAYLOAD));
    await until(n + 1);
    await sleep(o.settleMs);
    await rec.mark("SEND + push + settle", n);
    return rec.result("h", `mq9 push delivery: ${n} SENDs over HTTP (8 concurrent) pushed to a local receiver (concurrency 1)`, n);
  } finally {
    http.close();
    await new Promise((r) => receiver.close(r));
  }
}

/** Vars for the push workload: loopback endpoints allowed, no attempt rate limit in the way. */
export const PUSH_VARS = { PUSH_ALLOW_LOOPBACK: "1", PUSH_MAX_ATTEMPTS_PER_S: "1000000" };
