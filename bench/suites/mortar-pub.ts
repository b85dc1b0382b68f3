/**
 * MortarMQ write path: pipelined PUB of 128-byte values to ONE partition
 * over ONE connection, WINDOW publishes in flight, each awaited for its ack
 * (ack latency = send → OK). Rows: MortarMQ over WebSocket (non-idempotent
 * and idempotent producer) and over raw TCP through the bridge, then the
 * same load against a local `nats-server -js` stream (file storage)
 * published with nats.js, awaiting each PubAck with the same window, and
 * the ratio. Raw TCP goes through the launcher's own MortarMQ v0 bridge. nats-server missing → that row says skipped. One more row
 * spreads the same load round-robin over 4 partitions (lanes kept in step
 * by the session's pipeline; before that fix: ~3.5k msg/s at 256 in flight).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, StorageType } from "nats";
import { MortarClient } from "../../client/sdk";
import { benchBridge } from "../bridge";
import { startNatsServer } from "../nats-server";
import type { BenchSuite } from "../runner";
import { summarize, timeit } from "../stats";

const WINDOW = 1000;
const DURATION_MS = 5_000;
const WARMUP_MS = 1_000;
const VALUE = new Uint8Array(128).fill(0x61);

interface Measured {
  rate: number;
  count: number;
  p50_ms: number;
  p99_ms: number;
}

/** Warm up for `warmupMs`, then run `op` with WINDOW in flight for `durationMs`. */
async function measure(op: () => Promise<unknown>, durationMs = DURATION_MS, warmupMs = WARMUP_MS): Promise<Measured> {
  if (warmupMs > 0) {
    await timeit(warmupMs, WINDOW, async () => {
      await op();
    });
  }
  const r = await timeit(durationMs, WINDOW, async () => {
    await op();
  });
  const s = summarize(r.latenciesMs);
  return { rate: Math.round(r.rate), count: r.count, p50_ms: s.p50, p99_ms: s.p99 };
}

/** Pipelined PUBs of VALUE to `topic` (declared with `partitions`) over one connection to `address`, WINDOW in flight, for `durationMs` after `warmupMs`. */
export async function pipelinedPub(address: string, topic: string, idempotent: boolean, partitions = 1, durationMs = DURATION_MS, warmupMs = WARMUP_MS): Promise<Measured> {
  const c = await MortarClient.connect(address);
  const { topicId } = await c.declare(topic, partitions);
  let seq = 0n;
  let next = 0;
  const producerId = idempotent ? BigInt(Date.now()) : 0n;
  try {
    return await measure(() => c.publish(topicId, next++ % partitions, null, VALUE, idempotent ? { producerId, producerSeq: ++seq } : {}), durationMs, warmupMs);
  } finally {
    await c.close();
  }
}

async function jetstream(): Promise<(Measured & { version: string }) | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-js-"));
  const server = await startNatsServer({ jetStreamDir: dir });
  if (!server) return undefined;
  try {
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: "BENCH", subjects: ["bench.>"], storage: StorageType.File });
    const js = nc.jetstream();
    const m = await measure(() => js.publish("bench.pub", VALUE));
    await nc.close();
    return { ...m, version: server.version };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const suite: BenchSuite = {
  name: "mortar-pub",
  description: `pipelined PUB, 128-byte values, one partition, one connection, ${WINDOW} in flight, ${DURATION_MS / 1000} s`,
  async run({ broker }) {
    const ws = await pipelinedPub(broker.url, "bench-pub", false);
    const wsIdem = await pipelinedPub(broker.url, "bench-pub-idem", true);
    const ws4 = await pipelinedPub(broker.url, "bench-pub-4", false, 4);
    const bridge = await benchBridge(broker, "mortar");
    let tcp: Measured;
    try {
      tcp = await pipelinedPub(`tcp://127.0.0.1:${bridge.port}`, "bench-pub-tcp", false);
    } finally {
      await bridge.close();
    }
    const js = await jetstream();
    const ratio = (x: Measured) => (js ? Math.round((x.rate / js.rate) * 100) / 100 : "n/a");
    const row = (target: string, m: Measured) => ({ target, "msg/s": m.rate, p50_ms: m.p50_ms, p99_ms: m.p99_ms, vs_jetstream: ratio(m) });
    const rows: Record<string, string | number>[] = [
      row("MortarMQ PUB, WebSocket", ws),
      row("MortarMQ PUB, WebSocket, idempotent producer", wsIdem),
      row("MortarMQ PUB, raw TCP via bridge", tcp),
      row("MortarMQ PUB, WebSocket, 4 partitions round-robin", ws4),
      js
        ? row("nats-server -js, file stream, nats.js publish+PubAck", js)
        : { target: "nats-server -js (JetStream)", "msg/s": "skipped (nats-server not installed)", p50_ms: "-", p99_ms: "-", vs_jetstream: "-" },
    ];
    return {
      rows,
      detail: {
        window: WINDOW, durationMs: DURATION_MS, warmupMs: WARMUP_MS, valueBytes: VALUE.length,
        natsServer: js?.version ?? "not installed (skipped)",
        results: { ws, wsIdem, tcp, ws4, jetstream: js ?? null },
      },
    };
  },
};
