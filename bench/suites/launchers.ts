/**
 * The embedded runtime (`mortarmq dev`: the Worker in Miniflare, one Node
 * process and its workerd) against the earlier launcher (`wrangler dev`: a
 * proxy workerd in front of the broker's workerd; the TCP bridges in a
 * separate `mortarmq bridge` process, as the earlier `mortarmq dev` ran
 * them), both started by this suite on fresh state, same machine, same run.
 *
 * Cases (the operations of the noop-floor, mq9-http, nats-mq9, mortar-pub
 * and mortar-e2e suites, in shorter slices):
 * - GET /healthz and mq9 SEND (64 B; one mailbox and 100 mailboxes) over
 *   node:http keep-alive, 32 concurrent;
 * - mq9 SEND request/reply with nats.js through each launcher's NATS TCP
 *   bridge, 32 in flight, next to the same client against a local
 *   nats-server with a trivial responder (Debian `nats-server`; skipped
 *   when missing);
 * - MortarMQ pipelined PUB (1,000 in flight, 128 B, one partition, WebSocket)
 *   and PUB→MSG→ACK throughput (one producer, one acking consumer).
 *
 * The machine is shared, so every case runs in ROUNDS rounds; in each round
 * the two launchers run back to back, in alternating order, and the round's
 * ratio new ÷ old is taken from that pair. Reported per case: the median
 * rate of each launcher, the median of the per-round ratios, the CPU time
 * the broker's processes spent per operation (bench/cpu.ts: it hardly moves
 * with other load on the machine, where rates do) — for `mortarmq dev` also
 * split into the launcher process (its TCP bridges), workerd and this
 * process (the clients), and for native nats-server into the server and
 * this process (client and responder) — and all per-round figures. Targets (issue 18): ≥ 2× on /healthz and SEND;
 * NATS bridge ≥ 0.6× native; PUB and PUB→MSG→ACK not below the old one
 * beyond noise.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { startNatsServer } from "../nats-server";
import type { BenchSuite } from "../runner";
import { ownCpuMs, splitCpuMs, treeCpuMs } from "../cpu";
import { median, round3 } from "../stats";
import { CONCURRENCY, MAILBOXES, PAYLOAD, SUBJECT, httpRate as httpSlice, prepareMq9, type HttpRate, type Mq9Clients } from "../mq9-target";
import { e2eThroughput } from "./mortar-e2e";
import { pipelinedPub } from "./mortar-pub";
import { measureRequests } from "./nats-mq9";

const ROUNDS = 7;
const HTTP_SLICE_MS = 1_500;
const NATS_SLICE_MS = 2_000;
const PUB_SLICE_MS = 3_000;


type Name = "wrangler" | "miniflare";

/** One launcher under test, with its clients. */
interface Target extends Mq9Clients {
  name: Name;
  broker: LocalBroker;
}

async function target(name: Name, dir: string): Promise<Target> {
  const broker = await startLocalBroker({
    stateDir: join(dir, name), port: 0, launcher: name, bridges: { mortar: 0, nats: 0 },
    inheritLogs: process.env.BENCH_BROKER_LOGS === "1", // the brokers' own output, to see why a case failed
  });
  return { name, broker, ...(await prepareMq9(broker, "bench.launchers")) };
}

/** One measurement: operations per second, how many operations were done, and how many HTTP requests failed (not counted as done). */
type Measured = HttpRate;

/** A case, run once per launcher per round. */
interface Case {
  name: string;
  unit: string;
  measure(t: Target, round: number): Promise<Measured>;
}

/**
 * HTTP requests with CONCURRENCY in flight for HTTP_SLICE_MS. A failed request
 * (e.g. the earlier launcher's proxy answering 503 "Your worker restarted
 * mid-request") is counted, not retried, and not in the rate.
 */
const httpRate = (op: () => Promise<unknown>): Promise<Measured> => httpSlice(HTTP_SLICE_MS, op);

const CASES: Case[] = [
  { name: "GET /healthz", unit: "req/s", measure: (t) => httpRate(() => t.http.call("GET", "/healthz")) },
  { name: "mq9 SEND over HTTP, 1 mailbox", unit: "req/s", measure: (t) => httpRate(() => t.http.call("POST", `/mq9/$mq9.AI.MSG.SEND.${t.boxes[0]}`, { body: PAYLOAD })) },
  {
    name: `mq9 SEND over HTTP, ${MAILBOXES} mailboxes`, unit: "req/s",
    measure: (t) => {
      let n = 0;
      return httpRate(() => t.http.call("POST", `/mq9/$mq9.AI.MSG.SEND.${t.boxes[n++ % MAILBOXES]}`, { body: PAYLOAD }));
    },
  },
  {
    name: "mq9 SEND via the NATS TCP bridge (nats.js)", unit: "req/s",
    measure: async (t) => {
      const m = await measureRequests(t.nats, SUBJECT, NATS_SLICE_MS);
      return { rate: m.rate, ops: m.count };
    },
  },
  {
    name: "MortarMQ pipelined PUB, WebSocket", unit: "msg/s",
    measure: async (t, r) => {
      const m = await pipelinedPub(t.broker.url, `bench-launchers-pub-${r}`, false, 1, PUB_SLICE_MS, 0);
      return { rate: m.rate, ops: m.count };
    },
  },
  {
    name: "MortarMQ PUB→MSG→ACK, consumed", unit: "msg/s",
    measure: async (t, r) => {
      const m = await e2eThroughput(t.broker.url, PUB_SLICE_MS, `bench-launchers-e2e-${r}`);
      return { rate: m.consumeRate, ops: m.consumed };
    },
  },
];

/** Where one operation's CPU went, µs: the launcher process (mortarmq dev: with its TCP bridges), workerd, and this process (the clients). */
interface CpuSplit {
  launcher: number;
  workerd: number;
  client: number;
}

/**
 * Runs `c` on `t`, with the CPU time the broker's processes spent per
 * operation (µs; undefined without /proc) and, for `mortarmq dev`, that
 * time split by process, with this process's (the clients').
 */
async function measureWithCpu(c: Case, t: Target, round: number): Promise<Measured & { cpuUsPerOp?: number; split?: CpuSplit }> {
  const cpu0 = treeCpuMs(t.broker.pids);
  const split0 = t.name === "miniflare" ? splitCpuMs(t.broker.pids[0]!) : undefined;
  const own0 = ownCpuMs();
  const m = await c.measure(t, round).catch((e: Error) => Promise.reject(new Error(`${c.name}, ${t.name} launcher, round ${round}: ${e.message}`)));
  const own1 = ownCpuMs();
  const cpu1 = treeCpuMs(t.broker.pids);
  const split1 = t.name === "miniflare" ? splitCpuMs(t.broker.pids[0]!) : undefined;
  const perOp = (ms: number) => (ms * 1000) / m.ops;
  return {
    ...m,
    ...(cpu0 !== undefined && cpu1 !== undefined && m.ops > 0 ? { cpuUsPerOp: perOp(cpu1 - cpu0) } : {}),
    ...(split0 && split1 && m.ops > 0
      ? { split: { launcher: perOp(split1.self - split0.self), workerd: perOp(split1.children - split0.children), client: perOp(own1 - own0) } }
      : {}),
  };
}

export const suite: BenchSuite = {
  name: "launchers",
  description: `mortarmq dev (Miniflare) vs the earlier wrangler dev launcher, ${ROUNDS} interleaved rounds per case`,
  standalone: true,
  async run() {
    const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-launchers-"));
    const targets: Target[] = [];
    const ns = await startNatsServer();
    let responder: NatsConnection | undefined;
    let nativeClient: NatsConnection | undefined;
    try {
      targets.push(await target("wrangler", dir), await target("miniflare", dir));
      const [old, now] = targets as [Target, Target];
      if (ns) {
        const probe = await now.nats.request(SUBJECT, new TextEncoder().encode(PAYLOAD), { timeout: 30_000 });
        const reply = new Uint8Array(probe.data.length).fill(0x20);
        responder = await connect({ servers: `127.0.0.1:${ns.port}` });
        responder.subscribe(SUBJECT, { callback: (_e, m) => m.respond(reply) });
        await responder.flush();
        nativeClient = await connect({ servers: `127.0.0.1:${ns.port}` });
      }
      const rows: Record<string, string | number>[] = [];
      const detail: Record<string, unknown> = {};
      for (const c of CASES) {
        const rates: Record<Name | "native", number[]> = { wrangler: [], miniflare: [], native: [] };
        const cpu: Record<Name, number[]> = { wrangler: [], miniflare: [] };
        const splits: CpuSplit[] = [];
        /** Native nats-server: its CPU and this process's (client and trivial responder) per request, µs. */
        const nativeCpu: { server: number; client: number }[] = [];
        const failed: Record<Name, number> = { wrangler: 0, miniflare: 0 };
        const errors: Record<Name, string[]> = { wrangler: [], miniflare: [] };
        const ratios: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          for (const t of r % 2 === 0 ? [old, now] : [now, old]) {
            const m = await measureWithCpu(c, t, r);
            rates[t.name].push(m.rate);
            if (m.cpuUsPerOp !== undefined) cpu[t.name].push(m.cpuUsPerOp);
            if (m.split) splits.push(m.split);
            failed[t.name] += m.failed ?? 0;
            if (m.firstError && errors[t.name].length < 3) errors[t.name].push(m.firstError);
          }
          ratios.push(rates.miniflare[r]! / rates.wrangler[r]!);
          if (c.name.includes("NATS") && nativeClient) {
            const [server0, own0] = [treeCpuMs([ns!.proc.pid!]), ownCpuMs()];
            const n = await measureRequests(nativeClient, SUBJECT, NATS_SLICE_MS);
            const [server1, own1] = [treeCpuMs([ns!.proc.pid!]), ownCpuMs()];
            rates.native.push(n.rate);
            if (server0 !== undefined && server1 !== undefined) nativeCpu.push({ server: ((server1 - server0) * 1000) / n.count, client: ((own1 - own0) * 1000) / n.count });
          }
        }
        const row: Record<string, string | number> = {
          case: c.name,
          [`wrangler dev ${c.unit}`]: Math.round(median(rates.wrangler)),
          [`mortarmq dev ${c.unit}`]: Math.round(median(rates.miniflare)),
          "new ÷ old": round3(median(ratios)),
        };
        const perRound: Record<string, unknown> = {
          wrangler: rates.wrangler.map(Math.round), miniflare: rates.miniflare.map(Math.round), ratios: ratios.map(round3),
        };
        if (cpu.wrangler.length === ROUNDS && cpu.miniflare.length === ROUNDS) {
          row["broker CPU µs/op old → new"] = `${Math.round(median(cpu.wrangler))} → ${Math.round(median(cpu.miniflare))}`;
          Object.assign(perRound, { cpuUsPerOp: { wrangler: cpu.wrangler.map(Math.round), miniflare: cpu.miniflare.map(Math.round) } });
        }
        if (splits.length === ROUNDS) {
          const med = (k: keyof CpuSplit) => Math.round(median(splits.map((x) => x[k])));
          row["new: CPU µs/op launcher / workerd / client"] = `${med("launcher")} / ${med("workerd")} / ${med("client")}`;
          Object.assign(perRound, { cpuSplitNew: splits.map((x) => ({ launcher: Math.round(x.launcher), workerd: Math.round(x.workerd), client: Math.round(x.client) })) });
        }
        if (rates.native.length > 0) {
          const vsNative = (n: Name) => rates[n].map((x, i) => x / rates.native[i]!);
          row["vs native nats-server"] = `${round3(median(vsNative("miniflare")))} (old ${round3(median(vsNative("wrangler")))})`;
          if (nativeCpu.length === ROUNDS) {
            row["native: CPU µs/op nats-server / client+responder"] = `${Math.round(median(nativeCpu.map((x) => x.server)))} / ${Math.round(median(nativeCpu.map((x) => x.client)))}`;
          }
          Object.assign(perRound, { native: rates.native.map(Math.round), miniflareVsNative: vsNative("miniflare").map(round3), wranglerVsNative: vsNative("wrangler").map(round3) });
        }
        rows.push(row);
        detail[c.name] = perRound;
        if (failed.wrangler + failed.miniflare > 0) {
          row["failed requests old / new"] = `${failed.wrangler} / ${failed.miniflare}`;
          Object.assign(perRound, { failed, errors });
        }
        if (old.http.resent + now.http.resent > 0) Object.assign(perRound, { httpResentSoFar: { wrangler: old.http.resent, miniflare: now.http.resent } });
        console.log(`  ${c.name}: ${JSON.stringify(perRound)}`);
      }
      return {
        rows,
        detail: {
          rounds: ROUNDS, httpSliceMs: HTTP_SLICE_MS, natsSliceMs: NATS_SLICE_MS, pubSliceMs: PUB_SLICE_MS, concurrency: CONCURRENCY,
          payloadBytes: PAYLOAD.length, natsServer: ns?.version ?? "not installed (native rows skipped)",
          note: "Each round runs both launchers back to back (order alternating); new ÷ old is the median of the per-round ratios. "
            + "The NATS bridge of wrangler dev runs in its own mortarmq bridge process (as the earlier mortarmq dev ran it); "
            + "mortarmq dev runs its bridges in the launcher process.",
          perRound: detail,
        },
      };
    } finally {
      await nativeClient?.close();
      await responder?.close();
      await ns?.stop();
      for (const t of targets) {
        await t.nats.close().catch(() => {});
        t.http.close();
        await t.broker.stop();
      }
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
