/**
 * Before/after of a change to the mq9 request path, interleaved in one run:
 * a broker built from a base revision (default `main`, bench/baseline.ts)
 * and one from this checkout, both `mortarmq dev` on fresh state with their
 * own NATS TCP bridges, and a local nats-server with a trivial responder
 * (Debian `nats-server`; its rows are skipped when missing).
 *
 * Cases (`--cases`, comma-separated; default all):
 * - `nats`: mq9 SEND request/reply with nats.js through the launcher's NATS
 *   bridge, 32 in flight on one connection (the nats-mq9 suite's
 *   measureRequests), next to the same client against nats-server;
 * - `http100`: mq9 SEND over HTTP keep-alive, 32 concurrent, round-robin
 *   over 100 mailboxes (every SEND its own commit);
 * - `http1`: the same to one mailbox.
 *
 * Every round runs each case on both brokers back to back (order
 * alternating; for `nats` the native arm right after), so the ratios new ÷
 * base and broker ÷ native are taken from one round. Reported per case:
 * the median rate of each arm, the median of the per-round ratios, and CPU
 * µs per operation split into the launcher process (its TCP bridges),
 * workerd, and this process (the clients) — for native: nats-server and
 * this process (client and responder).
 *
 * Options: `--base <rev>` (default main), `--rounds N` (default 5),
 * `--slice ms` (default 2000), `--cases nats,http100,http1`. The record
 * goes to bench/results/perf-ab.json (copy it to a named file to keep it).
 */
import { connect, type NatsConnection } from "nats";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { startBaseline, type Baseline } from "../baseline";
import { ownCpuMs, splitCpuMs, treeCpuMs } from "../cpu";
import { startNatsServer } from "../nats-server";
import type { BenchSuite } from "../runner";
import { PACKAGE_ROOT } from "../../client/local/root";
import { median, round3 } from "../stats";
import { CONCURRENCY, MAILBOXES, PAYLOAD, SUBJECT, httpRate, prepareMq9, type Mq9Clients } from "../mq9-target";
import { measureRequests } from "./nats-mq9";



type Arm = "base" | "new";

interface Target extends Mq9Clients {
  arm: Arm;
  broker: LocalBroker;
}

/** CPU µs per operation: the launcher (bridges), workerd, this process (clients). */
interface Split {
  launcher: number;
  workerd: number;
  client: number;
}

async function prepare(arm: Arm, broker: LocalBroker): Promise<Target> {
  return { arm, broker, ...(await prepareMq9(broker, "bench.ab")) };
}

type CaseName = "nats" | "http100" | "http1";

const CASES: Record<CaseName, (t: Target, ms: number) => Promise<{ rate: number; ops: number; failed?: number }>> = {
  nats: async (t, ms) => {
    const m = await measureRequests(t.nats, SUBJECT, ms);
    return { rate: m.rate, ops: m.count };
  },
  http100: (t, ms) => {
    let n = 0;
    return httpRate(ms, () => t.http.call("POST", `/mq9/$mq9.AI.MSG.SEND.${t.boxes[n++ % MAILBOXES]}`, { body: PAYLOAD }));
  },
  http1: (t, ms) => httpRate(ms, () => t.http.call("POST", `/mq9/$mq9.AI.MSG.SEND.${t.boxes[0]}`, { body: PAYLOAD })),
};

async function measured(c: CaseName, t: Target, ms: number): Promise<{ rate: number; failed: number; split?: Split }> {
  const pid = t.broker.pids[0]!;
  const s0 = splitCpuMs(pid);
  const own0 = ownCpuMs();
  const m = await CASES[c](t, ms);
  const own1 = ownCpuMs();
  const s1 = splitCpuMs(pid);
  const per = (x: number) => Math.round((x * 1000) / Math.max(1, m.ops));
  return {
    rate: m.rate, failed: m.failed ?? 0,
    ...(s0 && s1 ? { split: { launcher: per(s1.self - s0.self), workerd: per(s1.children - s0.children), client: per(own1 - own0) } } : {}),
  };
}

export const suite: BenchSuite = {
  name: "perf-ab",
  description: "mq9 SEND over the NATS bridge and HTTP: base revision vs this checkout (and native nats-server), interleaved rounds",
  standalone: true,
  async run({ options }) {
    const baseRev = options.base ?? "main";
    const rounds = Number(options.rounds ?? 5);
    const sliceMs = Number(options.slice ?? 2000);
    const cases = (options.cases ?? "nats,http100,http1").split(",").filter(Boolean) as CaseName[];
    for (const c of cases) if (!(c in CASES)) throw new Error(`unknown case ${c} (nats, http100, http1)`);
    const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-ab-"));
    let baseline: Baseline | undefined;
    let current: LocalBroker | undefined;
    const targets: Target[] = [];
    const ns = cases.includes("nats") ? await startNatsServer() : undefined;
    let responder: NatsConnection | undefined;
    let native: NatsConnection | undefined;
    try {
      baseline = await startBaseline(PACKAGE_ROOT, baseRev);
      current = await startLocalBroker({ stateDir: join(dir, "new"), port: 0, bridges: { mortar: 0, nats: 0 } });
      const base = await prepare("base", baseline.broker);
      const now = await prepare("new", current);
      targets.push(base, now);
      if (ns) {
        const probe = await now.nats.request(SUBJECT, new TextEncoder().encode(PAYLOAD), { timeout: 30_000 });
        const reply = new Uint8Array(probe.data.length).fill(0x20);
        responder = await connect({ servers: `127.0.0.1:${ns.port}` });
        responder.subscribe(SUBJECT, { callback: (_e, m) => m.respond(reply) });
        await responder.flush();
        native = await connect({ servers: `127.0.0.1:${ns.port}` });
      }
      const rows: Record<string, string | number>[] = [];
      const perRound: Record<string, unknown> = {};
      const data = Object.fromEntries(cases.map((c) => [c, { base: [] as number[], new: [] as number[], native: [] as number[], split: { base: [] as Split[], new: [] as Split[] }, nativeCpu: [] as { server: number; client: number }[], failed: 0 }]));
      for (let r = 0; r < rounds; r++) {
        for (const c of cases) {
          const d = data[c]!;
          for (const t of r % 2 === 0 ? [base, now] : [now, base]) {
            const m = await measured(c, t, sliceMs);
            d[t.arm].push(m.rate);
            if (m.split) d.split[t.arm].push(m.split);
            d.failed += m.failed;
          }
          if (c === "nats" && native && ns) {
            const [sv0, own0] = [treeCpuMs([ns.proc.pid!]), ownCpuMs()];
            const n = await measureRequests(native, SUBJECT, sliceMs);
            const [sv1, own1] = [treeCpuMs([ns.proc.pid!]), ownCpuMs()];
            d.native.push(n.rate);
            if (sv0 !== undefined && sv1 !== undefined) d.nativeCpu.push({ server: Math.round(((sv1 - sv0) * 1000) / n.count), client: Math.round(((own1 - own0) * 1000) / n.count) });
          }
          console.log(`  round ${r + 1}/${rounds} ${c}: base ${Math.round(d.base[r]!)} new ${Math.round(d.new[r]!)}${d.native[r] ? ` native ${Math.round(d.native[r]!)}` : ""} ` +
            `cpu base ${JSON.stringify(d.split.base[r])} new ${JSON.stringify(d.split.new[r])}${d.nativeCpu[r] ? ` native ${JSON.stringify(d.nativeCpu[r])}` : ""}`);
        }
      }
      for (const c of cases) {
        const d = data[c]!;
        const ratios = d.new.map((x, i) => x / d.base[i]!);
        const medSplit = (xs: Split[]) => (xs.length ? `${median(xs.map((x) => x.launcher))} / ${median(xs.map((x) => x.workerd))} / ${median(xs.map((x) => x.client))}` : "n/a");
        const row: Record<string, string | number> = {
          case: c, "base req/s": Math.round(median(d.base)), "new req/s": Math.round(median(d.new)), "new ÷ base": round3(median(ratios)),
          "CPU µs/op launcher / workerd / client, base": medSplit(d.split.base), "…, new": medSplit(d.split.new),
        };
        const detail: Record<string, unknown> = { base: d.base.map(Math.round), new: d.new.map(Math.round), ratios: ratios.map(round3), cpu: d.split };
        if (d.native.length) {
          const vs = (xs: number[]) => xs.map((x, i) => x / d.native[i]!);
          row["vs native: base → new"] = `${round3(median(vs(d.base)))} → ${round3(median(vs(d.new)))}`;
          row["native CPU µs/op server / client+responder"] = `${median(d.nativeCpu.map((x) => x.server))} / ${median(d.nativeCpu.map((x) => x.client))}`;
          Object.assign(detail, { native: d.native.map(Math.round), baseVsNative: vs(d.base).map(round3), newVsNative: vs(d.new).map(round3), nativeCpu: d.nativeCpu });
        }
        if (d.failed) row.failed = d.failed;
        rows.push(row);
        perRound[c] = detail;
      }
      return {
        rows,
        detail: {
          base: { rev: baseRev, commit: baseline.commit }, rounds, sliceMs, concurrency: CONCURRENCY, payloadBytes: PAYLOAD.length,
          natsServer: ns?.version ?? "not installed (native rows skipped)",
          note: "Each round runs each case on both brokers back to back (order alternating), then native nats-server; ratios are medians of per-round ratios.",
          perRound,
        },
      };
    } finally {
      await native?.close();
      await responder?.close();
      await ns?.stop();
      for (const t of targets) {
        await t.nats.close().catch(() => {});
        t.http.close();
      }
      await current?.stop();
      await baseline?.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
