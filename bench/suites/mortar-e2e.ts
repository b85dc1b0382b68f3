/**
 * MortarMQ end to end: PUB → MSG → ACK with one producer and one consumer
 * (push mode, one group) on ONE partition, each on its own WebSocket.
 *
 * - throughput: the producer publishes 128-byte values with WINDOW PUBs in
 *   flight for DURATION_MS; the consumer acks every message (acks
 *   pipelined). Reported: messages consumed (delivered and acked) per second
 *   over the window, and the publish rate.
 * - latency: the producer publishes at a fixed RATE (messages stamped with
 *   their send time, same clock as the consumer) for DURATION_MS; reported
 *   p50/p99 of publish → delivery (MSG received by the consumer).
 */
import { MortarClient, type Subscription } from "../../client/sdk";
import type { BenchSuite } from "../runner";
import { summarize } from "../stats";

const WINDOW = 1000;
const DURATION_MS = 5_000;
const RATE = 5_000;
const CREDIT = 1000;
const VALUE = 128;

/** Counts (and optionally times) every message the consumer gets, acking each. */
function drain(sub: Subscription, onMsg: (value: Uint8Array, now: number) => void): { stop: () => void; acked: () => number } {
  let acked = 0;
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const m = await sub.next(200);
      if (!m) continue;
      onMsg(m.value, performance.now());
      m.ack().then(() => acked++, () => {});
    }
  })();
  return { stop: () => (stopped = true), acked: () => acked };
}

/** One producer (WINDOW PUBs in flight for `durationMs`) and one acking consumer on topic `topic`: consumed and published msg/s. */
export async function e2eThroughput(url: string, durationMs = DURATION_MS, topic = "bench-e2e") {
  const prod = await MortarClient.connect(url);
  const cons = await MortarClient.connect(url);
  await prod.declare(topic, 1);
  await cons.declare(topic, 1);
  const sub = await cons.subscribe(topic, "bench", { creditCount: CREDIT });
  let received = 0;
  const d = drain(sub, () => received++);
  const value = new Uint8Array(VALUE).fill(0x61);
  const start = performance.now();
  let published = 0;
  let inflight = 0;
  await new Promise<void>((resolve) => {
    const pump = () => {
      while (inflight < WINDOW && performance.now() - start < durationMs) {
        inflight++;
        prod.publish(topic, 0, null, value).then(() => {
          published++;
          inflight--;
          pump();
        }, () => inflight--);
      }
      if (inflight === 0 && performance.now() - start >= durationMs) resolve();
    };
    pump();
  });
  const pubSecs = (performance.now() - start) / 1000;
  // Let the consumer catch up (bounded), then measure consumption over the whole run.
  const end = performance.now() + 20_000;
  while (d.acked() < published && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
  const secs = (performance.now() - start) / 1000;
  d.stop();
  await sub.close();
  await prod.close();
  await cons.close();
  return { published, consumed: d.acked(), received, publishRate: Math.round(published / pubSecs), consumeRate: Math.round(d.acked() / secs), seconds: Math.round(secs * 100) / 100 };
}

async function latency(url: string) {
  const prod = await MortarClient.connect(url);
  const cons = await MortarClient.connect(url);
  await prod.declare("bench-e2e-lat", 1);
  await cons.declare("bench-e2e-lat", 1);
  const sub = await cons.subscribe("bench-e2e-lat", "bench", { creditCount: CREDIT });
  await new Promise((r) => setTimeout(r, 200)); // assignment settles
  const samples: number[] = [];
  const pubAcks: number[] = [];
  const d = drain(sub, (v, now) => {
    const sent = new DataView(v.buffer, v.byteOffset, v.byteLength).getFloat64(0);
    samples.push(now - sent);
  });
  const total = Math.round((RATE * DURATION_MS) / 1000);
  const tickMs = 10;
  const perTick = (RATE * tickMs) / 1000;
  const start = performance.now();
  let sent = 0;
  const pending: Promise<unknown>[] = [];
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE) + perTick);
    while (sent < due) {
      const value = new Uint8Array(VALUE);
      const t = performance.now();
      new DataView(value.buffer).setFloat64(0, t);
      pending.push(prod.publish("bench-e2e-lat", 0, null, value).then(() => pubAcks.push(performance.now() - t)));
      sent++;
    }
    await new Promise((r) => setTimeout(r, tickMs));
  }
  await Promise.all(pending);
  const end = performance.now() + 10_000;
  while (samples.length < total && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
  d.stop();
  await sub.close();
  await prod.close();
  await cons.close();
  return { rate: RATE, sent: total, delivered: samples.length, deliver: summarize(samples), publishAck: summarize(pubAcks) };
}

export const suite: BenchSuite = {
  name: "mortar-e2e",
  description: `PUB→MSG→ACK, one producer + one consumer, one partition, ${VALUE}-byte values, credit ${CREDIT}; throughput (${WINDOW} PUBs in flight) and latency at ${RATE} msg/s, ${DURATION_MS / 1000} s each`,
  async run({ broker }) {
    const t = await e2eThroughput(broker.url);
    const l = await latency(broker.url);
    return {
      rows: [
        { measure: "throughput: consumed (delivered + acked) msg/s", value: t.consumeRate, detail: `${t.consumed}/${t.published} in ${t.seconds} s` },
        { measure: "throughput: published msg/s (same run)", value: t.publishRate, detail: `${WINDOW} in flight` },
        { measure: `latency @ ${RATE} msg/s: publish→delivery p50 ms`, value: l.deliver.p50, detail: `${l.delivered}/${l.sent} delivered` },
        { measure: `latency @ ${RATE} msg/s: publish→delivery p99 ms`, value: l.deliver.p99, detail: "" },
        { measure: `latency @ ${RATE} msg/s: publish→PUB OK p50 / p99 ms`, value: `${l.publishAck.p50} / ${l.publishAck.p99}`, detail: "" },
      ],
      detail: { window: WINDOW, durationMs: DURATION_MS, rate: RATE, credit: CREDIT, valueBytes: VALUE, throughput: t, latency: l },
    };
  },
};
