/**
 * mq9 request/reply through the NATS transport, with the real nats.js
 * client: over TCP through the launcher's own NATS bridge (what `npm start`
 * listens on at 4222) and with nats.ws straight to `/nats`, next to the same client doing request/reply
 * against a local `nats-server` with a trivial responder that answers with
 * as many bytes as the broker's reply (the broker stores every SEND durably;
 * the native responder stores nothing). The ratio says how close the broker
 * is to a native NATS round trip. 32 requests in flight, 5 s each.
 *
 * nats-server is the Debian package (`apt-get install nats-server`); when the
 * binary is missing that row is reported as skipped (nothing is installed).
 */
import { connect, type NatsConnection } from "nats";
import WebSocket from "ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { benchBridge } from "../bridge";
import { startNatsServer } from "../nats-server";
import type { BenchSuite } from "../runner";
import { summarize, timeit } from "../stats";

const DURATION_MS = 5_000;
const CONCURRENCY = 32;
const SUBJECT = "$mq9.AI.MSG.SEND.bench.inbox";
const PAYLOAD = new TextEncoder().encode(JSON.stringify({ text: "hello from the nats-mq9 benchmark" }));

/** `CONCURRENCY` request/replies in flight on `nc` for `durationMs` after a warm-up round: rate (req/s), count, p50/p99 ms. */
export async function measureRequests(nc: NatsConnection, subject: string, durationMs = DURATION_MS) {
  // warm-up, then the timed run
  await Promise.all(Array.from({ length: CONCURRENCY }, () => nc.request(subject, PAYLOAD, { timeout: 30_000 })));
  const r = await timeit(durationMs, CONCURRENCY, async () => {
    await nc.request(subject, PAYLOAD, { timeout: 30_000 });
  });
  const s = summarize(r.latenciesMs);
  return { rate: Math.round(r.rate), count: r.count, p50_ms: s.p50, p99_ms: s.p99 };
}

export const suite: BenchSuite = {
  name: "nats-mq9",
  description: `mq9 request/reply over NATS (nats.js) vs native nats-server, ${CONCURRENCY} in flight, ${DURATION_MS / 1000} s`,
  async run({ broker }) {
    const rows: Record<string, string | number>[] = [];
    const bridge = await benchBridge(broker, "nats");
    const tcp = await connect({ servers: `127.0.0.1:${bridge.port}` });
    await tcp.request("$mq9.AI.MAILBOX.CREATE", new TextEncoder().encode(JSON.stringify({ name: "bench.inbox", ttl: 0 })), { timeout: 30_000 });
    const probe = await tcp.request(SUBJECT, PAYLOAD, { timeout: 30_000 });
    const probeBody = JSON.parse(new TextDecoder().decode(probe.data)) as { error: string };
    if (probeBody.error !== "") throw new Error(`mq9 SEND failed before the benchmark: ${probeBody.error}`);
    const replyBytes = probe.data.length;
    const viaBridge = await measureRequests(tcp, SUBJECT);
    await tcp.close();
    await bridge.close();

    (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
    const { connect: wsConnect } = await import("nats.ws");
    const wsc = await wsConnect({ servers: toWebSocketUrl(broker.url, "nats") });
    const viaWs = await measureRequests(wsc, SUBJECT);
    await wsc.close();

    let native: Awaited<ReturnType<typeof measureRequests>> | undefined;
    let nativeVersion: string | undefined;
    const ns = await startNatsServer();
    if (ns) {
      nativeVersion = ns.version;
      try {
        const responder = await connect({ servers: `127.0.0.1:${ns.port}` });
        const reply = new Uint8Array(replyBytes).fill(0x20);
        responder.subscribe(SUBJECT, { callback: (_err, m) => m.respond(reply) });
        await responder.flush();
        const client = await connect({ servers: `127.0.0.1:${ns.port}` });
        native = await measureRequests(client, SUBJECT);
        await client.close();
        await responder.close();
      } finally {
        await ns.stop();
      }
    }

    const ratio = (x: { rate: number }) => (native ? Math.round((x.rate / native.rate) * 1000) / 1000 : "n/a");
    rows.push({ transport: "mq9 via NATS/TCP bridge (nats.js)", "req/s": viaBridge.rate, p50_ms: viaBridge.p50_ms, p99_ms: viaBridge.p99_ms, vs_native: ratio(viaBridge) });
    rows.push({ transport: "mq9 via NATS/WebSocket (nats.ws)", "req/s": viaWs.rate, p50_ms: viaWs.p50_ms, p99_ms: viaWs.p99_ms, vs_native: ratio(viaWs) });
    rows.push(
      native
        ? { transport: "native nats-server, trivial responder", "req/s": native.rate, p50_ms: native.p50_ms, p99_ms: native.p99_ms, vs_native: 1 }
        : { transport: "native nats-server, trivial responder", "req/s": "skipped (nats-server not installed)", p50_ms: "-", p99_ms: "-", vs_native: "-" },
    );
    return {
      rows,
      detail: {
        subject: SUBJECT,
        payloadBytes: PAYLOAD.length,
        replyBytes,
        reply: new TextDecoder().decode(probe.data),
        concurrency: CONCURRENCY,
        durationMs: DURATION_MS,
        natsServer: nativeVersion ?? "not installed (skipped)",
        natsBridge: bridge.where,
        note:
          "Every broker request is a real durable mq9 SEND to one mailbox (bench.inbox); the native responder " +
          "answers with the same number of bytes but stores nothing.",
        results: { viaBridge, viaWs, native: native ?? null },
      },
    };
  },
};
