/**
 * Which way into the hosted Worker is cheapest — the choices behind
 * client/local/miniflare-host.ts and client/local/embedded.ts, measured on
 * one Worker hosted in this process (as `mortarmq dev` hosts it):
 *
 * - HTTP, GET /healthz and mq9 SEND (one mailbox; 100 mailboxes in turn),
 *   node:http keep-alive, 32 concurrent: a direct socket to the Worker
 *   (Miniflare's `unsafeDirectSockets`, bound to the Worker's `DirectHttp`
 *   entrypoint: the HTTP port on 127.0.0.1 / ::1) vs Miniflare's entry
 *   socket (its entry worker in front of the Worker, request logging off;
 *   the HTTP port on other addresses: only it gives the Worker
 *   `CF-Connecting-IP`). A direct socket to the default entrypoint of a
 *   Worker with `[assets]` would go through the assets router and its RPC
 *   proxy: the named entrypoint skips them.
 * - The NATS TCP bridge, mq9 SEND request/reply with nats.js, 32 in flight:
 *   each TCP connection tunnelled over a `ws` WebSocket to the HTTP port's
 *   loopback address with permessage-deflate (client/bridge/tunnel.ts: what
 *   the bridges do) vs the same uncompressed, and vs a WebSocket from
 *   `Miniflare.dispatchFetch` with `Upgrade: websocket` (which compresses
 *   too; a minimal adapter here: no backpressure, so it is the cheaper side).
 *
 * Interleaved in ROUNDS rounds (order alternating); ratio = A ÷ B, median of
 * the per-round ratios; with the CPU time spent per request by workerd alone
 * and by this whole process tree (client, bridge, workerd), which move far
 * less with other load on the machine than the rates do.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { startTunnel, toWebSocketUrl } from "../../client/bridge/tunnel";
import { hostWorker, type HostedWorker } from "../../client/local/miniflare-host";
import { PACKAGE_ROOT } from "../../client/local/root";
import { treeCpuMs } from "../cpu";
import { httpCaller } from "../http";
import type { BenchSuite } from "../runner";
import { median, round3, timeit } from "../stats";
import { measureRequests } from "./nats-mq9";
import { MAILBOXES, PAYLOAD } from "../mq9-target";

const ROUNDS = 10;
const SLICE_MS = 1_500;
const CONCURRENCY = 32;
const SUBJECT = "$mq9.AI.MSG.SEND.bench.inbox";


/** A TCP listener that tunnels each connection over a WebSocket from `dispatchFetch` (no backpressure). */
async function dispatchFetchBridge(w: HostedWorker): Promise<Server> {
  const server = createServer({ noDelay: true }, (socket) => {
    socket.pause();
    void w.miniflare.dispatchFetch("http://localhost/nats", { headers: { Upgrade: "websocket" } }).then((res) => {
      const ws = res.webSocket;
      if (!ws) return socket.destroy();
      ws.accept();
      ws.addEventListener("message", (e) => socket.write(typeof e.data === "string" ? e.data : new Uint8Array(e.data as ArrayBuffer)));
      ws.addEventListener("close", () => socket.end());
      socket.on("data", (d: Buffer) => ws.send(new Uint8Array(d)));
      socket.on("close", () => ws.close(1000, "tcp closed"));
      socket.resume();
    }, () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

export const suite: BenchSuite = {
  name: "local-hops",
  description: `ways into the hosted Worker: direct vs entry socket (HTTP), loopback WebSocket vs dispatchFetch upgrade (NATS bridge); ${ROUNDS} interleaved rounds`,
  standalone: true,
  async run() {
    const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-hops-"));
    const w = await hostWorker({ root: PACKAGE_ROOT, host: "127.0.0.1", port: 0, stateDir: dir, vars: {}, verbose: false, directSocket: true });
    const direct = httpCaller(Number(new URL(w.directUrl!).port), CONCURRENCY * 2);
    const entry = httpCaller(w.port, CONCURRENCY * 2);
    const tunnel = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(w.loopbackUrl, "nats") });
    const compressed = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(w.loopbackUrl, "nats"), compress: true });
    const viaDispatch = await dispatchFetchBridge(w);
    const conns: NatsConnection[] = [];
    try {
      await direct.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: "bench.inbox", ttl: 0 }) });
      for (let i = 0; i < MAILBOXES; i++) await direct.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: `bench.hops.${i}`, ttl: 0 }) });
      const natsVia = async (port: number) => {
        const nc = await connect({ servers: `127.0.0.1:${port}` });
        conns.push(nc);
        return nc;
      };
      const ncTunnel = await natsVia(tunnel.port);
      const ncCompressed = await natsVia(compressed.port);
      const ncDispatch = await natsVia((viaDispatch.address() as { port: number }).port);
      /** Rate, and CPU µs per operation: of workerd alone, and of this process tree (client and bridge too: the client's share is the same on both sides). */
      const withCpu = async (run: () => Promise<{ rate: number; count: number }>) => {
        const w0 = treeCpuMs([w.runtimePid!]);
        const c0 = treeCpuMs([process.pid]);
        const r = await run();
        const c1 = treeCpuMs([process.pid]);
        const w1 = treeCpuMs([w.runtimePid!]);
        const per = (a?: number, b?: number) => (a !== undefined && b !== undefined ? ((b - a) * 1000) / r.count : NaN);
        return { rate: r.rate, cpu: per(c0, c1), workerd: per(w0, w1) };
      };
      const http = (c: typeof direct) => () => withCpu(() => timeit(SLICE_MS, CONCURRENCY, async () => void (await c.call("GET", "/healthz"))));
      const send = (c: typeof direct, boxes: number) => () => {
        let n = 0;
        return withCpu(() => timeit(SLICE_MS, CONCURRENCY, async () => void (await c.call("POST", `/mq9/$mq9.AI.MSG.SEND.bench.hops.${n++ % boxes}`, { body: PAYLOAD }))));
      };
      const nats = (nc: NatsConnection) => () => withCpu(() => measureRequests(nc, SUBJECT, SLICE_MS));
      const pairs = [
        { case: "GET /healthz", a: "direct socket", b: "entry socket", runA: http(direct), runB: http(entry) },
        { case: "mq9 SEND over HTTP, 1 mailbox", a: "direct socket", b: "entry socket", runA: send(direct, 1), runB: send(entry, 1) },
        { case: `mq9 SEND over HTTP, ${MAILBOXES} mailboxes`, a: "direct socket", b: "entry socket", runA: send(direct, MAILBOXES), runB: send(entry, MAILBOXES) },
        { case: "mq9 SEND via NATS TCP bridge", a: "ws to the HTTP port, permessage-deflate (what the bridges do)", b: "the same, uncompressed", runA: nats(ncCompressed), runB: nats(ncTunnel) },
        { case: "mq9 SEND via NATS TCP bridge", a: "ws to the HTTP port, permessage-deflate (what the bridges do)", b: "dispatchFetch upgrade", runA: nats(ncCompressed), runB: nats(ncDispatch) },
      ];
      const rows: Record<string, string | number>[] = [];
      const detail: Record<string, unknown> = {};
      for (const p of pairs) {
        const a: { rate: number; cpu: number; workerd: number }[] = [];
        const b: { rate: number; cpu: number; workerd: number }[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          if (r % 2 === 0) {
            a.push(await p.runA());
            b.push(await p.runB());
          } else {
            b.push(await p.runB());
            a.push(await p.runA());
          }
        }
        const ratios = a.map((x, i) => x.rate / b[i]!.rate);
        const rate = (xs: typeof a) => Math.round(median(xs.map((x) => x.rate)));
        const cpu = (xs: typeof a, k: "cpu" | "workerd" = "cpu") => Math.round(median(xs.map((x) => x[k])));
        rows.push({
          case: p.case, A: p.a, B: p.b, "A req/s": rate(a), "B req/s": rate(b), "A ÷ B": round3(median(ratios)),
          "workerd µs/op A → B": `${cpu(a, "workerd")} → ${cpu(b, "workerd")}`, "all µs/op A → B": `${cpu(a)} → ${cpu(b)}`,
        });
        detail[`${p.case}: ${p.a} vs ${p.b}`] = {
          a: p.a, b: p.b, ratios: ratios.map(round3),
          aPerRound: a.map((x) => Math.round(x.rate)), bPerRound: b.map((x) => Math.round(x.rate)),
          aCpuUsPerOp: a.map((x) => Math.round(x.cpu)), bCpuUsPerOp: b.map((x) => Math.round(x.cpu)),
          aWorkerdUsPerOp: a.map((x) => Math.round(x.workerd)), bWorkerdUsPerOp: b.map((x) => Math.round(x.workerd)),
        };
      }
      return { rows, detail: { rounds: ROUNDS, sliceMs: SLICE_MS, concurrency: CONCURRENCY, cases: detail } };
    } finally {
      for (const nc of conns) await nc.close().catch(() => {});
      await tunnel.close();
      await compressed.close();
      await new Promise((r) => viaDispatch.close(r));
      direct.close();
      entry.close();
      await w.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
