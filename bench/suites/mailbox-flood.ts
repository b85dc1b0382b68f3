/**
 * A mailbox flood on the local runtime (#14 item 3; docs/operations.md
 * "Under a flood (local runtime)"), on a broker started by this suite with
 * two static tenants:
 * - `flooder` creates `--count` mailboxes (default 100,000; TTL 1 day, so
 *   they all exist at the end) over mq9 HTTP at its allowed rate: the
 *   broker's MQ9_MAILBOX_CREATES_PER_S is raised to `--rate` (default 200
 *   CREATEs/s; the built-in default of 20/s would need 83 min) and
 *   MQ9_MAILBOXES_PER_TENANT to the count + 1,000. The client paces its
 *   CREATEs at `--rate` with up to `--clients` in flight (default 16) and
 *   waits out a 429's Retry-After;
 * - the RSS of every process of the broker (wrangler and its workerd
 *   children, /proc/<pid>/status VmRSS) is sampled every SAMPLE_MS
 *   throughout, with the mailboxes created so far: peak, and the trend
 *   after warm-up (least-squares slope of RSS over mailboxes created, MiB
 *   per 10,000 mailboxes; bounded = about 0);
 * - `bystander` publishes MortarMQ PUBs (open loop, one every PUB_EVERY_MS,
 *   128-byte values, one partition) and its PUB latency is measured in
 *   windows: one idle window before the flood, then rounds of an idle
 *   window (the flood paused, after a drain) and a flood window, so idle
 *   and flood are neighbours in time on this shared machine. The ratio is
 *   p99 of the flood windows / p99 of the idle windows (pooled), and the
 *   median of the per-round ratios.
 * Options: --count N, --rate N, --clients N, --window-ms N (default 4000),
 * --max-minutes N (default 30: the flood stops there, and the count reached
 * is what the record says), --compare REV: a second broker built from
 * revision REV (bench/baseline.ts) with its own flooder and bystander runs
 * beside this checkout's; the rounds alternate between the two (one flood
 * at a time, the other broker paused), so both arms' ratios are measured
 * interleaved on this shared machine; the record gets a `compare` row set
 * and `detail.compare` (rounds of the other arm).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { processTree } from "../../client/local/process-tree";
import { MortarClient } from "../../client/sdk";
import type { BenchSuite } from "../runner";
import { summarize } from "../stats";
import { startBaseline, type Baseline } from "../baseline";
import { PACKAGE_ROOT } from "../../client/local/broker";

const FLOODER = "bench-flooder";
const BYSTANDER = "bench-bystander";
const SAMPLE_MS = 1_000;
const PUB_EVERY_MS = 5;
const DRAIN_MS = 1_500;
/** Flood time between two measured rounds, as a multiple of the window (keeps the flood going most of the time). */
const FLOOD_BETWEEN_WINDOWS = 4;
/** Samples before this share of the count are the warm-up (objects start to be evicted ~10 s after their CREATE). */
const WARMUP_SHARE = 0.2;
const VALUE = new Uint8Array(128).fill(0x61);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A positive whole-number suite option, or `dflt`. @throws Error on anything else */
function intOption(options: Readonly<Record<string, string>>, name: string, dflt: number): number {
  const v = options[name];
  if (v === undefined) return dflt;
  const n = Number(v.replace(/_/g, ""));
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1, not ${v}`);
  return n;
}

/** One RSS sample: KiB summed over the broker's processes (and per process), with the mailboxes created so far. */
interface RssSample {
  tS: number;
  created: number;
  rssKiB: number;
  perProcessKiB: Record<string, number>;
  /** CPU time used so far per process (user + system), ms. */
  cpuMs: Record<string, number>;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/** VmRSS (KiB) and CPU time (ms) of each live process of the broker's tree (a process that exited meanwhile is left out). */
function processesOf(root: number): { rss: Record<string, number>; cpu: Record<string, number> } {
  const rss: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  for (const pid of processTree(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const name = /^Name:\s+(\S+)/m.exec(status)?.[1] ?? "?";
      const key = `${pid} ${name}`;
      rss[key] = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields from 3 (state) on
      cpu[key] = ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_S; // utime + stime (fields 14, 15)
    } catch {
      /* gone */
    }
  }
  return { rss, cpu };
}

/** Least-squares slope of y over x (0 with fewer than 2 distinct x). */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0, den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** One broker under test: its flooder and its bystander's PUB latencies. */
interface Arm {
  label: string;
  flood: Flood;
  client: MortarClient;
  topicId: number;
  idle: number[];
  during: number[];
  rounds: { created: number; idle_p99_ms: number; flood_p99_ms: number; ratio: number }[];
  failed: number;
}

/** The flooder: CREATEs paced at `rate`/s, at most `clients` in flight, until `count` exist; pausable. */
class Flood {
  created = 0;
  refused429 = 0;
  other: Record<string, number> = {};
  paused = false;
  private issued = 0;
  /** Numbers of refused CREATEs, to be created again. */
  private readonly retry: number[] = [];
  private blockedUntil = 0;
  private stopped = false;

  /** Ends `run` after the CREATEs in flight. */
  stop(): void {
    this.stopped = true;
  }

  constructor(
    private readonly broker: LocalBroker, private readonly count: number, private readonly rate: number,
    private readonly clients: number, private readonly deadline: number,
  ) {}

  /** Runs until `count` mailboxes were created or the deadline (performance.now() ms) passed. */
  async run(): Promise<void> {
    const t0 = performance.now();
    let sent = 0; // CREATEs the pacing has released
    let pausedMs = 0;
    let pauseStart: number | null = null;
    await Promise.all(Array.from({ length: this.clients }, async () => {
      while (this.retry.length > 0 || this.issued < this.count) {
        const now = performance.now();
        if (now > this.deadline || this.stopped) return;
        if (this.paused) {
          pauseStart ??= now;
          await sleep(20);
          continue;
        }
        if (pauseStart !== null) {
          pausedMs += now - pauseStart;
          pauseStart = null;
        }
        const due = t0 + pausedMs + (sent * 1000) / this.rate; // open-loop pacing, not counting pauses
        const wait = Math.max(due - now, this.blockedUntil - now);
        if (wait > 0) {
          await sleep(Math.min(wait, 50));
          continue;
        }
        sent++;
        const n = this.retry.pop() ?? this.issued++;
        if (!(await this.create(`flood.${Math.floor(n / 1000)}.${n % 1000}`))) this.retry.push(n); // refused: that name again later
      }
    }));
  }

  /** One CREATE; true when it created the mailbox (or it exists from an earlier try). */
  private async create(name: string): Promise<boolean> {
    try {
      const res = await fetch(`${this.broker.url}/mq9/$mq9.AI.MAILBOX.CREATE`, {
        method: "POST", headers: { authorization: `Bearer ${FLOODER}` }, body: JSON.stringify({ name, ttl: 86_400 }),
      });
      await res.arrayBuffer();
      if (res.status === 200 || res.status === 409) {
        this.created++;
        return true;
      }
      if (res.status === 429) {
        this.refused429++;
        this.blockedUntil = performance.now() + Number(res.headers.get("retry-after") ?? "1") * 1000;
      } else {
        this.other[String(res.status)] = (this.other[String(res.status)] ?? 0) + 1;
        await sleep(200);
      }
    } catch (e) {
      const k = `fetch: ${(e as Error).message}`;
      this.other[k] = (this.other[k] ?? 0) + 1;
      await sleep(200);
    }
    return false;
  }
}

/** PUB latencies (ms) of `client` over `ms`, one PUB every PUB_EVERY_MS without waiting for the earlier ones; failures counted. */
async function pubWindow(client: MortarClient, topicId: number, ms: number): Promise<{ latencies: number[]; failed: number }> {
  const latencies: number[] = [];
  let failed = 0;
  const inFlight: Promise<void>[] = [];
  const end = performance.now() + ms;
  for (let next = performance.now(); next < end; next += PUB_EVERY_MS) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    inFlight.push(client.publish(topicId, 0, null, VALUE).then(() => { latencies.push(performance.now() - t); }, () => { failed++; }));
  }
  await Promise.all(inFlight);
  return { latencies, failed };
}

export const suite: BenchSuite = {
  name: "mailbox-flood",
  description: "one tenant creates mailboxes at its allowed rate up to --count (default 100,000): broker RSS sampled throughout; another tenant's MortarMQ PUB p99 idle vs during the flood, interleaved windows",
  async run({ options }) {
    const count = intOption(options, "count", 100_000);
    const rate = intOption(options, "rate", 200);
    const clients = intOption(options, "clients", 16);
    const windowMs = intOption(options, "window-ms", 4_000);
    const maxMinutes = intOption(options, "max-minutes", 30);
    const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-flood-"));
    const vars = {
      AUTH_TOKENS: `${FLOODER}:flooder,${BYSTANDER}:bystander`,
      MQ9_MAILBOX_CREATES_PER_S: String(rate),
      MQ9_MAILBOXES_PER_TENANT: String(count + 1_000),
    };
    const broker = await startLocalBroker({ stateDir, port: 0, vars });
    const base: Baseline | null = options.compare ? await startBaseline(PACKAGE_ROOT, options.compare, vars) : null;
    const root = broker.process.pid!;
    const t0 = performance.now();
    const samples: RssSample[] = [];
    const flood = new Flood(broker, count, rate, clients, performance.now() + maxMinutes * 60_000);
    const sample = () => {
      const { rss: per, cpu } = processesOf(root);
      samples.push({ tS: Math.round((performance.now() - t0) / 100) / 10, created: flood.created, rssKiB: Object.values(per).reduce((a, b) => a + b, 0), perProcessKiB: per, cpuMs: cpu });
    };
    sample();
    const sampler = setInterval(sample, SAMPLE_MS);
    const client = await MortarClient.connect(broker.url, { token: BYSTANDER });
    try {
      const { topicId } = await client.declare("bystander.events", 1);
      await pubWindow(client, topicId, 1_000); // warm-up
      const before = await pubWindow(client, topicId, windowMs);
      const running = flood.run();
      let done = false;
      void running.then(() => { done = true; });
      /** One measured round on one arm: its flood runs (the other arm's is paused), a flood window, a drain, an idle window. */
      const measure = async (a: Arm) => {
        a.flood.paused = false;
        await Promise.race([sleep(windowMs * FLOOD_BETWEEN_WINDOWS), running]);
        if (done) return false;
        const f = await pubWindow(a.client, a.topicId, windowMs); // the flood running
        a.flood.paused = true;
        await sleep(DRAIN_MS); // in-flight CREATEs answered
        const i = await pubWindow(a.client, a.topicId, windowMs); // the flood paused
        a.failed += f.failed + i.failed;
        a.idle.push(...i.latencies);
        a.during.push(...f.latencies);
        const [ip, fp] = [summarize(i.latencies).p99, summarize(f.latencies).p99];
        a.rounds.push({ created: a.flood.created, idle_p99_ms: ip, flood_p99_ms: fp, ratio: Math.round((fp / ip) * 100) / 100 });
        console.log(`  ${a.label}: ${a.flood.created} mailboxes, PUB p99 idle ${ip} ms, flood ${fp} ms`);
        return true;
      };
      const main: Arm = { label: "this checkout", flood, client, topicId, idle: [], during: [], rounds: [], failed: 0 };
      let other: Arm | null = null;
      let otherRun: Promise<void> | null = null;
      if (base) {
        const oc = await MortarClient.connect(base.broker.url, { token: BYSTANDER });
        const { topicId: ot } = await oc.declare("bystander.events", 1);
        await pubWindow(oc, ot, 1_000);
        const of = new Flood(base.broker, count, rate, clients, performance.now() + maxMinutes * 60_000);
        of.paused = true;
        otherRun = of.run();
        other = { label: `baseline ${base.rev}`, flood: of, client: oc, topicId: ot, idle: [], during: [], rounds: [], failed: 0 };
      }
      while (!done) {
        const order = other ? (main.rounds.length % 2 === 0 ? [main, other] : [other, main]) : [main];
        let more = true;
        for (const a of order) {
          for (const b of order) b.flood.paused = true;
          if (!(more = await measure(a))) break;
        }
        if (!more) break;
        if (other && other.rounds.length > 0) console.log(`  RSS ${mib(samples.at(-1)!.rssKiB)} MiB`);
      }
      if (other) {
        other.flood.stop();
        await otherRun;
        await other.client.close().catch(() => {});
      }
      const idle = main.idle, during = main.during, rounds = main.rounds;
      const failed = before.failed + main.failed;
      const floodS = (performance.now() - t0) / 1000;
      await sleep(15_000); // the last mailboxes are evicted
      sample();
      clearInterval(sampler);

      const reached = flood.created;
      const warm = samples.filter((s) => s.created >= reached * WARMUP_SHARE && s.tS <= floodS);
      const rssSlope = warm.length >= 2 ? slope(warm.map((s) => s.created), warm.map((s) => s.rssKiB)) : 0;
      const procs = [...new Set(warm.flatMap((s) => Object.keys(s.perProcessKiB)))];
      const perProcess = Object.fromEntries(procs.map((k) => {
        const w = warm.filter((s) => s.perProcessKiB[k] !== undefined);
        const sl = w.length >= 2 ? slope(w.map((s) => s.created), w.map((s) => s.perProcessKiB[k]!)) : 0;
        return [k, { peak_mib: mib(Math.max(...samples.map((s) => s.perProcessKiB[k] ?? 0))), trend_mib_per_10k: Math.round((sl * 10_000 / 1024) * 10) / 10 }];
      }));
      // CPU per CREATE over the flood, per process (the CPU the bystander's PUBs and the idle windows used is in it too)
      const first = samples.find((x) => x.created > 0) ?? samples[0]!;
      const last = [...samples].reverse().find((x) => x.tS <= floodS) ?? samples.at(-1)!;
      const cpuPerCreate = Object.fromEntries(Object.keys(last.cpuMs).map((k) => [k,
        last.created > first.created ? Math.round(((last.cpuMs[k]! - (first.cpuMs[k] ?? 0)) / (last.created - first.created)) * 10) / 10 : 0]));
      const cpuShare = Object.fromEntries(Object.keys(last.cpuMs).map((k) => [k,
        Math.round(((last.cpuMs[k]! - (first.cpuMs[k] ?? 0)) / ((last.tS - first.tS) * 1000)) * 100)]));
      const peak = samples.reduce((m, s) => (s.rssKiB > m.rssKiB ? s : m), samples[0]!);
      const at = (share: number) => {
        const s = samples.find((x) => x.created >= reached * share);
        return s ? mib(s.rssKiB) : null;
      };
      const [bS, iS, dS] = [summarize(before.latencies), summarize(idle), summarize(during)];
      const rows = [
        { measure: "mailboxes created", value: reached, note: `of ${count} (stops after ${maxMinutes} min), paced at ${rate}/s (MQ9_MAILBOX_CREATES_PER_S=${rate}; default 20)` },
        { measure: "achieved CREATE rate", value: Math.round(flood.created / floodS), note: `CREATEs/s over ${Math.round(floodS)} s incl. the paused windows` },
        { measure: "429 refusals / other answers", value: flood.refused429, note: JSON.stringify(flood.other) },
        { measure: "RSS at start (MiB)", value: mib(samples[0]!.rssKiB), note: "all broker processes" },
        { measure: "RSS peak (MiB)", value: mib(peak.rssKiB), note: `at ${peak.created} mailboxes` },
        { measure: "RSS at 25/50/75/100 % (MiB)", value: [at(0.25), at(0.5), at(0.75), at(1)].join(" / "), note: "of the mailboxes created" },
        { measure: "RSS trend after warm-up", value: Math.round((rssSlope * 10_000 / 1024) * 10) / 10, note: `MiB per 10,000 mailboxes (least squares over ${warm.length} samples from ${WARMUP_SHARE * 100} %)` },
        { measure: "RSS 15 s after the flood (MiB)", value: mib(samples.at(-1)!.rssKiB), note: "" },
        ...Object.entries(perProcess).map(([k, v]) => ({
          measure: `  process ${k}`, value: v.peak_mib,
          note: `peak MiB; trend ${v.trend_mib_per_10k} MiB per 10,000 mailboxes; CPU ${cpuPerCreate[k] ?? "?"} ms per CREATE, ${cpuShare[k] ?? "?"} % of a core during the flood`,
        })),
        { measure: "PUB p99 before the flood (ms)", value: bS.p99, note: `p50 ${bS.p50}, n ${bS.n}` },
        { measure: "PUB p99 idle windows (ms)", value: iS.p99, note: `p50 ${iS.p50}, n ${iS.n} (flood paused)` },
        { measure: "PUB p99 flood windows (ms)", value: dS.p99, note: `p50 ${dS.p50}, n ${dS.n}` },
        { measure: "PUB p99 ratio flood / idle", value: iS.p99 ? Math.round((dS.p99 / iS.p99) * 100) / 100 : 0, note: `pooled over ${rounds.length} rounds; median of per-round ratios ${median(rounds.map((r) => r.ratio))}` },
        { measure: "PUB p99 ratio flood / before", value: bS.p99 ? Math.round((dS.p99 / bS.p99) * 100) / 100 : 0, note: "the flood windows vs the idle window before the flood" },
        { measure: "PUBs failed", value: failed, note: "" },
      ];
      const armRows = (a: Arm) => {
        const [i, d] = [summarize(a.idle), summarize(a.during)];
        return { arm: a.label, rounds: a.rounds.length, mailboxes: a.flood.created, idle_p99_ms: i.p99, flood_p99_ms: d.p99, pooled_ratio: i.p99 ? Math.round((d.p99 / i.p99) * 100) / 100 : 0, median_round_ratio: median(a.rounds.map((r) => r.ratio)), failed: a.failed };
      };
      const compare = other ? [armRows(main), armRows(other)] : undefined;
      if (compare) console.table(compare);
      return {
        rows,
        detail: {
          count, reached, maxMinutes, rate, clients, windowMs, pubEveryMs: PUB_EVERY_MS, sampleMs: SAMPLE_MS, vars: { ...vars, AUTH_TOKENS: "(two static tokens)" },
          rounds,
          ...(other && base ? { compare: { rev: base.rev, commit: base.commit, arms: compare, rounds: other.rounds } } : {}),
          cpuMsPerCreate: cpuPerCreate, cpuPercentOfACore: cpuShare,
          rss: samples.map((s) => ({ t_s: s.tS, created: s.created, rss_mib: mib(s.rssKiB), processes: Object.fromEntries(Object.entries(s.perProcessKiB).map(([k, v]) => [k, mib(v)])) })),
        },
      };
    } finally {
      clearInterval(sampler);
      await client.close().catch(() => {});
      await broker.stop();
      await base?.dispose();
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};
