/**
 * mq9 push delivery (docs/push.md "Performance"), against its own local
 * broker (PUSH_ALLOW_LOOPBACK=1 and no effective attempt rate limit) and a
 * node:http receiver in this process that answers 200 at once:
 *
 * SENDs go over NATS (nats.js through the TCP bridge: the broker's cheapest
 * SEND path, so the push is what is measured); control requests over HTTP.
 *
 * - SEND→receiver latency: SENDs offered at 500 msg/s (open loop: a timer
 *   sends on schedule, whatever is still in flight) to a mailbox pushed
 *   with concurrency 1 and with 16; latency = the message's arrival at the
 *   receiver − the start of its SEND, both on this process's clock; also
 *   the rate delivered and SEND p50/p99.
 *   A mailbox without push gets the same SENDs first (the reference: what
 *   the broker and this machine sustain at that rate without pushing).
 * - Throughput: PREFILL messages stored first, then a push subscription
 *   created (`deliver: earliest`) with concurrency 1 or 16; msg/s until the
 *   receiver has all of them.
 * - SEND latency while the receiver holds the pushed request (it never
 *   answers), next to SENDs to a mailbox without push, interleaved.
 *
 * The machine is shared and noisy, so every case runs ROUNDS times with the
 * cases interleaved; the rows show the median over rounds and the range.
 *
 * A/B: `PUSH_AB_BASELINE=<git rev> npm run bench -- push` also starts a
 * broker built from that revision (bench/baseline.ts, same vars) and runs
 * every case on both in each round, alternating which goes first; the
 * extra rows give new/old as the median of the per-round ratios, and the
 * record's `detail.baseline` holds the old broker's rounds.
 */
import { Agent, createServer, request } from "node:http";
import { connect } from "nats";
import { startTunnel, toWebSocketUrl } from "../../client/bridge/tunnel";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { startBaseline } from "../baseline";
import { processTree } from "../../client/local/process-tree";
import { readFileSync } from "node:fs";
import type { BenchSuite } from "../runner";
import { median, summarize } from "../stats";

/** Rounds (PUSH_BENCH_ROUNDS overrides). */
const ROUNDS = Math.max(1, Number(process.env.PUSH_BENCH_ROUNDS) || 3);
const OFFERED_PER_S = 500;
const LATENCY_SECONDS = 3;
const PREFILL = 600;
const HELD_PAIRS = 60;

const VARS = { PUSH_ALLOW_LOOPBACK: "1", PUSH_MAX_ATTEMPTS_PER_S: "1000000" };

/** CPU time (user + system) of `root` and its descendants (wrangler, workerd), ms; Linux /proc. */
function treeCpuMs(root: number | undefined): number {
  if (root === undefined) return NaN;
  let ticks = 0;
  for (const pid of processTree(root)) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone, or not Linux */
    }
  }
  return ticks * 10; // USER_HZ = 100
}

const range = (xs: number[], digits = 0) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

export const suite: BenchSuite = {
  name: "push",
  description: `mq9 push: SEND→receiver latency at ${OFFERED_PER_S} msg/s, throughput with concurrency 1 and 16, SEND latency with a held receiver; ${ROUNDS} rounds, own broker`,
  async run() {
    const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-push-"));
    const broker = await startLocalBroker({ stateDir, port: 0, inheritLogs: !!process.env.BENCH_LOGS, vars: VARS });
    const baselineRev = process.env.PUSH_AB_BASELINE;
    const base = baselineRev ? await startBaseline(PACKAGE_ROOT, baselineRev, VARS) : undefined;
    // the receiver: arrival time per payload, answered 200 at once (or held, on /hold)
    const arrivals = new Map<string, number>();
    let onArrival: (() => void) | null = null;
    const held: import("node:http").ServerResponse[] = [];
    const receiver = createServer((req, res) => {
      req.on("error", () => {}); // the broker gave up an attempt (or stopped)
      res.on("error", () => {});
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        arrivals.set(Buffer.concat(chunks).toString(), performance.now());
        if (req.url === "/hold") held.push(res);
        else res.writeHead(200).end();
        onArrival?.();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
    const hook = (path = "/") => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`;
    const waitFor = (ids: string[], timeoutMs: number) =>
      new Promise<boolean>((resolve) => {
        const t = setTimeout(() => { onArrival = null; resolve(false); }, timeoutMs);
        const check = () => {
          if (ids.every((id) => arrivals.has(id))) {
            clearTimeout(t);
            onArrival = null;
            resolve(true);
          }
        };
        onArrival = check;
        check();
      });
    let boxes = 0;
    const te = new TextEncoder();
    const td = new TextDecoder();

    /** The cases against one broker. */
    const target = async (b: LocalBroker) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 }); // workerd closes idle keep-alive sockets at 5 s
      const mq9 = (subject: string, body: string, retry = true): Promise<Record<string, unknown>> =>
        new Promise<Record<string, unknown>>((resolve, reject) => {
          const r = request({ host: "127.0.0.1", port: b.port, path: `/mq9/${subject}`, method: "POST", agent, headers: { "content-length": Buffer.byteLength(body) } }, (res) => {
            const c: Buffer[] = [];
            res.on("data", (d: Buffer) => c.push(d));
            res.on("end", () => {
              const j = JSON.parse(Buffer.concat(c).toString()) as Record<string, unknown>;
              if (j.error !== "") reject(new Error(`${subject}: ${String(j.error)}`));
              else resolve(j);
            });
          });
          // a reused keep-alive socket the server closed just then: send once more on a new one
          r.on("error", (e: NodeJS.ErrnoException) => (retry && r.reusedSocket && e.code === "ECONNRESET" ? mq9(subject, body, false).then(resolve, reject) : reject(e)));
          r.end(body);
        });
      const tunnel = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(b.url, "nats") });
      const nc = await connect({ servers: `127.0.0.1:${tunnel.port}` });
      /** One SEND over NATS (request/reply); rejects on an mq9 error. */
      const send = async (box: string, payload: string) => {
        const r = JSON.parse(td.decode((await nc.request(`$mq9.AI.MSG.SEND.${box}`, te.encode(payload), { timeout: 60_000 })).data)) as { error: string };
        if (r.error !== "") throw new Error(`SEND ${box}: ${r.error}`);
      };
      const mailbox = async () => {
        const name = `bench.push.${Date.now().toString(36)}.${boxes++}`;
        await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name, ttl: 3600 }));
        return name;
      };
      const pushTo = (box: string, concurrency: number, path = "/", deliver = "latest") =>
        mq9(`$mq9.AI.PUSH.CREATE.${box}`, JSON.stringify({ group_name: "bench", url: hook(path), concurrency, deliver, timeout_ms: 60_000 }));

      /** SENDs at OFFERED_PER_S for LATENCY_SECONDS to a mailbox pushed with `concurrency` (0: no push, the reference). */
      const latencyCase = async (concurrency: number) => {
        const box = await mailbox();
        if (concurrency > 0) await pushTo(box, concurrency);
        const sentAt = new Map<string, number>();
        const sendLat: number[] = [];
        const total = OFFERED_PER_S * LATENCY_SECONDS;
        const start = performance.now();
        let issued = 0;
        const inFlight: Promise<void>[] = [];
        await new Promise<void>((done) => {
          const tick = setInterval(() => {
            const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * OFFERED_PER_S));
            for (; issued < due; issued++) {
              const id = `${box}/${issued}`;
              const t = performance.now();
              sentAt.set(id, t);
              inFlight.push(send(box, id).then(() => { sendLat.push(performance.now() - t); }));
            }
            if (issued >= total) {
              clearInterval(tick);
              done();
            }
          }, 2);
        });
        await Promise.all(inFlight);
        const sendEnd = performance.now();
        const all = concurrency === 0 || (await waitFor([...sentAt.keys()], 120_000));
        const lat = [...sentAt].filter(([id]) => arrivals.has(id)).map(([id, t]) => arrivals.get(id)! - t);
        const lastArrival = Math.max(sendEnd, ...[...sentAt.keys()].map((id) => arrivals.get(id) ?? 0));
        return {
          offered: total / ((sendEnd - start) / 1000),
          delivered: lat.length / ((lastArrival - start) / 1000),
          complete: all,
          e2e: summarize(lat),
          send: summarize(sendLat),
        };
      };

      /**
       * PREFILL stored messages, then a push with `concurrency`: msg/s until all
       * arrived, and the broker's CPU time per message meanwhile (its processes:
       * wrangler and workerd) — the figure that bounds the rate on a quiet machine.
       */
      const throughputCase = async (concurrency: number) => {
        const box = await mailbox();
        const ids = Array.from({ length: PREFILL }, (_, i) => `${box}/${i}`);
        for (let i = 0; i < ids.length; i += 32) await Promise.all(ids.slice(i, i + 32).map((id) => send(box, id)));
        const cpu0 = treeCpuMs(b.process.pid);
        const start = performance.now();
        await pushTo(box, concurrency, "/", "earliest");
        await waitFor(ids, 300_000);
        const rate = PREFILL / ((Math.max(...ids.map((id) => arrivals.get(id)!)) - start) / 1000);
        return { rate, cpuMsPerMsg: (treeCpuMs(b.process.pid) - cpu0) / PREFILL };
      };

      /** SEND latency to a mailbox whose receiver holds the push, next to a mailbox without push. */
      const heldCase = async () => {
        const pushed = await mailbox();
        const plain = await mailbox();
        await pushTo(pushed, 1, "/hold");
        await send(pushed, `${pushed}/held`);
        await waitFor([`${pushed}/held`], 30_000);
        const a: number[] = [];
        const b2: number[] = [];
        for (let i = 0; i < HELD_PAIRS; i++) {
          for (const [box, into] of (i % 2 ? [[plain, a], [pushed, b2]] : [[pushed, b2], [plain, a]]) as [string, number[]][]) {
            const t = performance.now();
            await send(box, `${box}/${i}`);
            into.push(performance.now() - t);
          }
        }
        return { plain: summarize(a), pushed: summarize(b2) };
      };
      const close = async () => {
        await nc.close();
        await tunnel.close();
        agent.destroy();
      };
      return { latencyCase, throughputCase, heldCase, close };
    };
    type Target = Awaited<ReturnType<typeof target>>;
    type Lat = Awaited<ReturnType<Target["latencyCase"]>>;
    type Tp = Awaited<ReturnType<Target["throughputCase"]>>;
    type Round = { lat0: Lat; lat1: Lat; lat16: Lat; tp1: Tp; tp16: Tp; held: Awaited<ReturnType<Target["heldCase"]>> };

    const cur = await target(broker);
    const old = base ? await target(base.broker) : null;
    /** Runs `f` on both brokers (when A/B), the new one first in even rounds. */
    const both = async <T,>(round: number, f: (t: Target) => Promise<T>): Promise<[T, T | null]> => {
      if (!old) return [await f(cur), null];
      if (round % 2 === 0) {
        const a = await f(cur);
        return [a, await f(old)];
      }
      const b2 = await f(old);
      return [await f(cur), b2];
    };
    try {
      await cur.throughputCase(1); // warm-up: code loaded, objects created
      await old?.throughputCase(1);
      const rounds: Round[] = [];
      const oldRounds: Round[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const [tp1, tp1o] = await both(round, (t) => t.throughputCase(1));
        const [tp16, tp16o] = await both(round, (t) => t.throughputCase(16));
        const [lat0, lat0o] = await both(round, (t) => t.latencyCase(0));
        const [lat1, lat1o] = await both(round, (t) => t.latencyCase(1));
        const [lat16, lat16o] = await both(round, (t) => t.latencyCase(16));
        const [held, heldo] = await both(round, (t) => t.heldCase());
        rounds.push({ lat0, lat1, lat16, tp1, tp16, held });
        if (old) oldRounds.push({ lat0: lat0o!, lat1: lat1o!, lat16: lat16o!, tp1: tp1o!, tp16: tp16o!, held: heldo! });
      }
      const rows = rowsOf(rounds);
      if (old) {
        const ratio = (label: string, pick: (r: Round) => number, better: string) => {
          const xs = rounds.map((r, i) => pick(r) / pick(oldRounds[i]!));
          rows.push({ case: `A/B new/old: ${label}`, ratio: Number(median(xs).toFixed(2)), rounds: `${range(xs, 2)} (${better})` });
        };
        ratio(`throughput of ${PREFILL} stored messages, concurrency 1`, (r) => r.tp1.rate, "higher is better");
        ratio(`throughput of ${PREFILL} stored messages, concurrency 16`, (r) => r.tp16.rate, "higher is better");
        ratio("broker CPU per pushed message, concurrency 1", (r) => r.tp1.cpuMsPerMsg, "lower is better");
        ratio("broker CPU per pushed message, concurrency 16", (r) => r.tp16.cpuMsPerMsg, "lower is better");
        ratio(`delivered msg/s at ${OFFERED_PER_S} msg/s offered, concurrency 1`, (r) => r.lat1.delivered, "higher is better");
        ratio(`delivered msg/s at ${OFFERED_PER_S} msg/s offered, concurrency 16`, (r) => r.lat16.delivered, "higher is better");
        ratio("SEND→receiver p50, concurrency 1", (r) => r.lat1.e2e.p50, "lower is better");
        ratio("SEND→receiver p50, concurrency 16", (r) => r.lat16.e2e.p50, "lower is better");
        ratio(`reference SEND p50 at ${OFFERED_PER_S} msg/s without push`, (r) => r.lat0.send.p50, "the same code on both: the noise");
      }
      return {
        rows,
        detail: {
          rounds, offeredPerS: OFFERED_PER_S, latencySeconds: LATENCY_SECONDS, prefill: PREFILL,
          ...(base ? { baseline: { rev: base.rev, commit: base.commit, rows: rowsOf(oldRounds), rounds: oldRounds } } : {}),
        },
      };
    } finally {
      for (const res of held) res.destroy();
      await cur.close();
      await old?.close();
      receiver.close();
      await broker.stop();
      await base?.dispose();
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};

/** The table rows of one broker's rounds (medians over rounds, with the range). */
function rowsOf(rounds: {
  lat0: { offered: number; send: { p50: number; p99: number } };
  lat1: { delivered: number; e2e: { p50: number; p99: number }; send: { p50: number; p99: number } };
  lat16: { delivered: number; e2e: { p50: number; p99: number }; send: { p50: number; p99: number } };
  tp1: { rate: number; cpuMsPerMsg: number }; tp16: { rate: number; cpuMsPerMsg: number }; held: { plain: { p50: number }; pushed: { p50: number } };
}[]): Record<string, string | number>[] {
  const rows: Record<string, string | number>[] = [];
  const lat0 = rounds.map((r) => r.lat0);
  rows.push({
    case: `reference: SENDs at ${OFFERED_PER_S} msg/s to a mailbox without push`,
    "SEND p50 ms": median(lat0.map((x) => x.send.p50)),
    "SEND p99 ms": median(lat0.map((x) => x.send.p99)),
    rounds: `SEND p50 ${range(lat0.map((x) => x.send.p50), 1)} ms, achieved ${range(lat0.map((x) => x.offered))} msg/s`,
  });
  for (const [label, pick] of [["concurrency 1", (r: (typeof rounds)[0]) => r.lat1], ["concurrency 16", (r: (typeof rounds)[0]) => r.lat16]] as const) {
    const xs = rounds.map(pick);
    rows.push({
      case: `SEND→receiver at ${OFFERED_PER_S} msg/s, ${label}`,
      "p50 ms": median(xs.map((x) => x.e2e.p50)),
      "p99 ms": median(xs.map((x) => x.e2e.p99)),
      "delivered msg/s": Math.round(median(xs.map((x) => x.delivered))),
      "SEND p50 ms": median(xs.map((x) => x.send.p50)),
      "SEND p99 ms": median(xs.map((x) => x.send.p99)),
      rounds: `p50 ${range(xs.map((x) => x.e2e.p50), 1)} ms, delivered ${range(xs.map((x) => x.delivered))} msg/s`,
    });
  }
  for (const [label, pick] of [["concurrency 1", (r: (typeof rounds)[0]) => r.tp1], ["concurrency 16", (r: (typeof rounds)[0]) => r.tp16]] as const) {
    const xs = rounds.map((r) => pick(r).rate);
    const cpu = rounds.map((r) => pick(r).cpuMsPerMsg);
    rows.push({
      case: `throughput of ${PREFILL} stored messages, ${label}`, "msg/s": Math.round(median(xs)), "ms/msg": Number((1000 / median(xs)).toFixed(2)),
      "broker CPU ms/msg": Number(median(cpu).toFixed(2)), rounds: `${range(xs)} msg/s, CPU ${range(cpu, 2)} ms/msg`,
    });
  }
  const ratio = rounds.map((r) => r.held.pushed.p50 / r.held.plain.p50);
  rows.push({
    case: "SEND p50 while the receiver holds the push / without push",
    "p50 ms": median(rounds.map((r) => r.held.pushed.p50)),
    "plain p50 ms": median(rounds.map((r) => r.held.plain.p50)),
    ratio: Number(median(ratio).toFixed(2)),
    rounds: `ratio ${range(ratio, 2)}`,
  });
  return rows;
}
