/**
 * The bill bench's time-based workloads (issue #26 §1 (f) and (g)), each
 * client on its own fresh metered broker (./host.ts), so what an idle
 * client costs is not mixed with another's:
 * - (f) idle clients for `idleMs`: a subscribed MortarMQ member, a NATS
 *   WebSocket connection, a consumer long-polling FETCH (10 s polls) on an
 *   empty mailbox. The set-up (connecting, subscribing, the first telemetry
 *   report and the tenant's registration at its aggregators) is counted
 *   apart, once per connection: from before the client connects to the end
 *   of a warm-up of IDLE_WARM_MS, past the first telemetry flush. The
 *   steady state is the idle window after it: requests and rows per
 *   minute, and the statements writing them; at the end, each object's
 *   pending timers and held requests (anything that keeps it resident and
 *   billed for duration); then the client's next message, and whether the
 *   runtime had evicted the object meanwhile (its constructor ran again).
 * - (g) telemetry: a steady trickle to one partition (PUB + MSG + ACK) and
 *   one mailbox (HTTP SEND) for `busyMs`; rows the counting pipeline wrote
 *   per busy object per minute, at the reporting object (`telemetry` table
 *   statements) and at the UsageAggregator.
 */
import WebSocket from "ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { MortarClient } from "../../client/sdk";
import { httpCaller } from "../http";
import type { MeteredBroker } from "./host";
import type { UnitRates } from "./prices";
import { unitRates, windowUnits, type MeterSnapshot, type MeterTimer, type WindowUnits } from "./units";
import { onFreshBroker } from "./workloads";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const VALUE = new Uint8Array(128).fill(0x61);
/**
 * Before the counted idle window: the clients' set-up and first telemetry
 * flush (the default TELEMETRY_FLUSH_MS is 60 s) are done; counted as set-up.
 */
export const IDLE_WARM_MS = 75_000;
/**
 * (g)'s warm-up: past every busy object's first report (the default
 * TELEMETRY_FLUSH_MS is 60 s), so the window counts the steady state, not
 * the one-time creation of each object's `telemetry` table.
 */
const BUSY_WARM_MS = 70_000;

/** An object's duration signals at the end of the idle window. */
export interface IdleObject {
  kind: string;
  name: string | null;
  /** Pending timers (each keeps the object resident). */
  timers: MeterTimer[];
  /** Requests held open. */
  inflight: number;
  /** No timer and no held request: it could hibernate (only hibernatable WebSockets left). */
  couldHibernate: boolean;
  /**
   * The runtime evicted it during the idle window: its constructor ran again
   * in it — or, for an object nothing called in the window (so nothing could
   * rebuild it there), the client's next message found it evicted.
   */
  evictedWhileIdle: boolean;
  /** Evicted at some point before the client's next message was served. */
  evictedBeforeNextMessage: boolean;
}

/** One idle client's result. */
export interface IdleRun {
  /** Short id: member, nats, poll. */
  id: IdleClientId;
  client: string;
  minutes: number;
  /** The steady state: the idle window after the warm-up. */
  window: WindowUnits;
  /** Set-up, once per connection: from before the client connected to the end of the warm-up (IDLE_WARM_MS). */
  setup: WindowUnits;
  /** The client's own polls in the set-up window. */
  setupPolls?: number;
  /** Billable units per minute. */
  perMinute: UnitRates;
  /** Requests received per minute, each counted once (WebSocket messages not divided). */
  rawRequestsPerMinute: number;
  /** The client's own requests per minute (long-poll FETCHes), where it makes any. */
  clientPollsPerMinute?: number;
  objects: IdleObject[];
}

/** Every call into an object counted so far (RPC, fetch, alarm, WebSocket events). */
function requestsOf(o: MeterSnapshot["objects"][number]): number {
  const r = o.requests;
  return Object.values(r.rpc).reduce((a, b) => a + b, 0) + r.fetch + r.alarm + r.wsMessage + r.wsClose + r.wsError;
}

/** Duration signals of the objects of `kinds` that existed at `start`. */
function signals(start: MeterSnapshot, end: MeterSnapshot, after: MeterSnapshot, kinds: string[]): IdleObject[] {
  const key = (o: { kind: string; id: string }) => `${o.kind}|${o.id}`;
  const at = (s: MeterSnapshot) => new Map(s.objects.map((o) => [key(o), o]));
  const e = at(end);
  const n = at(after);
  return start.objects
    .filter((o) => kinds.includes(o.kind))
    .map((o) => {
      const z = e.get(key(o))!;
      return {
        kind: o.kind, name: o.name, timers: z.timers, inflight: z.inflight,
        couldHibernate: z.timers.length === 0 && z.inflight === 0,
        evictedWhileIdle: z.constructs > o.constructs || (requestsOf(z) === requestsOf(o) && (n.get(key(o))?.constructs ?? 0) > z.constructs),
        evictedBeforeNextMessage: (n.get(key(o))?.constructs ?? 0) > o.constructs,
      };
    });
}

/** The idle clients: member, nats, poll. */
export type IdleClientId = "member" | "nats" | "poll";
export const IDLE_CLIENTS: readonly IdleClientId[] = ["member", "nats", "poll"];

/** Snapshots of one idle run: before connecting (s), end of warm-up (a), end of the idle window (z), after the next message. */
interface IdleMarks { s: MeterSnapshot; a: MeterSnapshot; z: MeterSnapshot; after: MeterSnapshot }

function idleRun(id: IdleClientId, client: string, m: IdleMarks, kinds: string[], polls?: { setup: number; idle: number }): IdleRun {
  const { a, z, after } = m;
  const window = windowUnits(a, z);
  const minutes = window.ms / 60_000;
  return {
    id, client, minutes, window, setup: windowUnits(m.s, a),
    perMinute: unitRates(window, minutes), rawRequestsPerMinute: window.totals.requests / minutes,
    ...(polls !== undefined ? { clientPollsPerMinute: polls.idle / minutes, setupPolls: polls.setup } : {}),
    objects: signals(a, z, after, kinds),
  };
}

/** A subscribed MortarMQ member (credit 1000) doing nothing; then one PUB from another connection reaches it. */
async function idleMortarMember(b: MeteredBroker, idleMs: number): Promise<IdleRun> {
  const s = await b.snapshot();
  const member = await MortarClient.connect(b.url);
  try {
    await member.declare("idle", 1);
    const sub = await member.subscribe("idle", "g", { creditCount: 1000 });
    await sleep(IDLE_WARM_MS);
    const a = await b.snapshot();
    await sleep(idleMs);
    const z = await b.snapshot();
    const prod = await MortarClient.connect(b.url);
    await prod.declare("idle", 1);
    await prod.publish("idle", 0, null, VALUE);
    const m = await sub.next(30_000);
    if (!m) throw new Error("idle member: the next message did not arrive");
    await m.ack();
    await prod.close();
    return idleRun("member", "subscribed MortarMQ member", { s, a, z, after: await b.snapshot() }, ["MortarSession", "Partition", "ConsumerGroup"]);
  } finally {
    await member.close();
  }
}

/** A NATS WebSocket connection doing nothing (nats.ws defaults: PING every 2 min); then a PING/PONG. */
async function idleNats(b: MeteredBroker, idleMs: number): Promise<IdleRun> {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  const { connect } = await import("nats.ws");
  const s = await b.snapshot();
  const nc = await connect({ servers: toWebSocketUrl(b.url, "nats") });
  try {
    await nc.flush();
    await sleep(IDLE_WARM_MS);
    const a = await b.snapshot();
    await sleep(idleMs);
    const z = await b.snapshot();
    await nc.flush();
    return idleRun("nats", "NATS WebSocket connection", { s, a, z, after: await b.snapshot() }, ["NatsSession"]);
  } finally {
    await nc.close();
  }
}

/** A consumer long-polling FETCH (max_wait_ms 10000, group g) on an empty mailbox over HTTP. */
async function idleLongPoll(b: MeteredBroker, idleMs: number): Promise<IdleRun> {
  const http = httpCaller(b.port, 2);
  const box = "idle.box";
  let polls = 0;
  let stop = false;
  try {
    const s = await b.snapshot();
    await http.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: box, ttl: 3600 }) });
    const body = JSON.stringify({ group_name: "g", deliver: "latest", config: { num_msgs: 10, max_wait_ms: 10_000 } });
    const loop = (async () => {
      while (!stop) {
        await http.call("POST", `/mq9/$mq9.AI.MSG.FETCH.${box}`, { body });
        polls++;
      }
    })();
    await sleep(IDLE_WARM_MS);
    const a = await b.snapshot();
    const p0 = polls;
    await sleep(idleMs);
    const z = await b.snapshot();
    const p1 = polls;
    stop = true;
    await http.call("POST", `/mq9/$mq9.AI.MSG.SEND.${box}`, { body: JSON.stringify({ text: "wake" }) });
    await loop;
    return idleRun("poll", "consumer long-polling FETCH (10 s polls), empty mailbox", { s, a, z, after: await b.snapshot() }, ["Mailbox"], { setup: p0, idle: p1 - p0 });
  } finally {
    http.close();
  }
}

const RUNS: Record<IdleClientId, (b: MeteredBroker, idleMs: number) => Promise<IdleRun>> = {
  member: idleMortarMember, nats: idleNats, poll: idleLongPoll,
};

/** (f) The idle clients `clients` (default all three), concurrently, each on its own broker. */
export async function idleClients(idleMs: number, clients: readonly IdleClientId[] = IDLE_CLIENTS): Promise<IdleRun[]> {
  return Promise.all(clients.map((c) => onFreshBroker({}, (b) => RUNS[c](b, idleMs))));
}

/** (g) result. */
export interface TelemetryRun {
  minutes: number;
  /** Messages per second to each of the partition and the mailbox. */
  ratePerS: number;
  /** Objects that served traffic in the window (sessions, partition, group, mailbox). */
  busyObjects: { kind: string; name: string | null }[];
  /** Rows written by `telemetry` statements in the busy objects, per busy object per minute. */
  reporterRowsPerObjectMinute: number;
  /** Rows written by the UsageAggregator(s), per busy object per minute. */
  aggregatorRowsPerObjectMinute: number;
  /** Requests the UsageAggregator(s) received, per busy object per minute. */
  aggregatorRequestsPerObjectMinute: number;
  window: WindowUnits;
}

const BUSY_KINDS = new Set(["MortarSession", "NatsSession", "Partition", "ConsumerGroup", "Mailbox"]);

/** Telemetry's share of a window: rows by telemetry statements at busy objects, and the aggregators' rows and requests. */
export function telemetryShare(window: WindowUnits): Omit<TelemetryRun, "window" | "ratePerS"> {
  const minutes = window.ms / 60_000;
  const busy = window.objects.filter((o) => BUSY_KINDS.has(o.kind) && o.requests > 0);
  const n = Math.max(1, busy.length) * minutes;
  let reporter = 0;
  for (const o of busy) for (const [s, rows] of Object.entries(o.writers)) if (/telemetry/i.test(s)) reporter += rows;
  const agg = window.objects.filter((o) => o.kind === "UsageAggregator");
  return {
    minutes,
    busyObjects: busy.map((o) => ({ kind: o.kind, name: o.name })),
    reporterRowsPerObjectMinute: reporter / n,
    aggregatorRowsPerObjectMinute: agg.reduce((s, o) => s + o.rowsWritten, 0) / n,
    aggregatorRequestsPerObjectMinute: agg.reduce((s, o) => s + o.requests, 0) / n,
  };
}

/** (g) A steady trickle (`ratePerS` PUB→MSG→ACK to one partition and as many HTTP SENDs to one mailbox) for `busyMs`. */
export async function telemetryPerBusyObject(busyMs: number, ratePerS = 5): Promise<TelemetryRun> {
  return onFreshBroker({}, async (b) => {
    const prod = await MortarClient.connect(b.url);
    const cons = await MortarClient.connect(b.url);
    const http = httpCaller(b.port, 4);
    let stop = false;
    try {
      await prod.declare("busy", 1);
      await cons.declare("busy", 1);
      const sub = await cons.subscribe("busy", "g", { creditCount: 1000 });
      await http.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: "busy.box", ttl: 3600 }) });
      const drain = (async () => {
        while (!stop) {
          const m = await sub.next(200);
          if (m) await m.ack();
        }
      })();
      const trickle = (async () => {
        while (!stop) {
          await Promise.all([
            prod.publish("busy", 0, null, VALUE),
            http.call("POST", "/mq9/$mq9.AI.MSG.SEND.busy.box", { body: JSON.stringify({ text: "tick" }) }),
            sleep(1000 / ratePerS),
          ]);
        }
      })();
      await sleep(BUSY_WARM_MS);
      const a = await b.snapshot();
      await sleep(busyMs);
      const z = await b.snapshot();
      stop = true;
      await trickle;
      await drain;
      const window = windowUnits(a, z);
      return { ...telemetryShare(window), ratePerS, window };
    } finally {
      http.close();
      await prod.close();
      await cons.close();
    }
  });
}
