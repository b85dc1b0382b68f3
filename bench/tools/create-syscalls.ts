/**
 * What one mq9 MAILBOX.CREATE costs the local runtime's workerd process
 * (#14 item 3): storage syscalls (fsync, fdatasync, pwrite64, openat,
 * unlinkat — one SQLite commit is one or more fsyncs) and CPU µs, per
 * CREATE. Linux only; needs `strace` on PATH and permission to ptrace.
 *
 *   npx tsx bench/tools/create-syscalls.ts [--count 300] [--rounds 2] [--in-flight 4] [--root DIR ...]
 *
 * Each `--root` is a checkout (or `git worktree`) whose own
 * client/local/broker.ts starts its broker (default: this checkout); with
 * two roots the rounds alternate between them, so old and new are
 * measured interleaved on this shared machine. A round: a broker with a
 * fresh state directory and a high creation rate, 50 warm-up CREATEs, then
 * `--count` CREATEs for CPU (/proc/<pid>/stat of workerd, no tracer
 * attached), then `--count` more under `strace -f -c -p <workerd>`; both are
 * counted until 15 s after the last answer (the idle broker's CPU rate,
 * measured first, subtracted), so the work a CREATE starts after its reply
 * (index update, usage report) and the eviction of the idle object ~10 s
 * later (its database closed: WAL checkpoint, files unlinked) are in it. Prints one JSON
 * object per root: per-CREATE medians over the rounds, and every round.
 */
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LocalBroker, LocalBrokerOptions } from "../../client/local/broker";
import { processTree } from "../../client/local/process-tree";

const TRACED = ["fsync", "fdatasync", "pwrite64", "write", "openat", "unlinkat", "ftruncate"] as const;
const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const roots = args.flatMap((a, i) => (a === "--root" ? [resolve(args[i + 1]!)] : []));
if (roots.length === 0) roots.push(resolve(import.meta.dirname, "../.."));
const count = opt("count", 300);
const rounds = opt("rounds", 2);
const inFlight = opt("in-flight", 4);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Median (the mean of the middle two for an even count). */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? 0 : s.length % 2 ? s[m]! : Math.round(((s[m - 1]! + s[m]!) / 2) * 100) / 100;
};
/** How long after a batch of CREATEs its work is counted, ms: workerd evicts an idle object ~10 s after its last request, and closing its database (WAL checkpoint, -wal/-shm unlinked) is part of what a CREATE costs. */
const SETTLE_MS = 15_000;

/** The workerd process of a broker (the one with the most RSS when there are several). */
function workerdOf(broker: LocalBroker): number {
  const pids = processTree(broker.process.pid!).filter((p) => {
    try {
      return /^Name:\s+workerd$/m.test(readFileSync(`/proc/${p}/status`, "utf8"));
    } catch {
      return false;
    }
  });
  const rss = (p: number) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
  pids.sort((a, b) => rss(b) - rss(a));
  if (pids.length === 0) throw new Error("no workerd process found");
  return pids[0]!;
}

/** utime + stime of `pid`, µs. */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1_000_000) / 100;
}

/** `n` CREATEs of fresh names (prefix `p`), `inFlight` at a time; throws on any answer but 200. */
async function creates(broker: LocalBroker, p: string, n: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < n) {
      const i = next++;
      const res = await fetch(`${broker.url}/mq9/$mq9.AI.MAILBOX.CREATE`, {
        method: "POST", body: JSON.stringify({ name: `${p}.${i}`, ttl: 86_400 }),
      });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`CREATE ${p}.${i}: ${res.status} ${body}`);
    }
  }));
}

/** Parses `strace -c` output: calls per syscall. */
function parseCounts(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
    if (m) out[m[2]!] = Number(m[1]);
  }
  return out;
}

/** A root's broker starter (its own client/local/broker.ts). */
async function starter(root: string): Promise<(o: LocalBrokerOptions) => Promise<LocalBroker>> {
  const mod = (await import(pathToFileURL(join(root, "client/local/broker.ts")).href)) as { startLocalBroker(o: LocalBrokerOptions): Promise<LocalBroker> };
  return mod.startLocalBroker;
}

async function round(root: string): Promise<Record<string, number>> {
  const start = await starter(root);
  const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-create-syscalls-"));
  const broker = await start({ stateDir, port: 0, vars: { MQ9_MAILBOX_CREATES_PER_S: "10000", MQ9_MAILBOXES_PER_TENANT: "1000000" } });
  try {
    const pid = workerdOf(broker);
    const i0 = cpuUs(pid);
    await sleep(3_000);
    const idleUsPerS = (cpuUs(pid) - i0) / 3; // subtracted for the settle time
    await creates(broker, "warm", 50);
    await sleep(SETTLE_MS);
    const c0 = cpuUs(pid);
    const t0 = performance.now();
    await creates(broker, "cpu", count);
    const wallMs = performance.now() - t0;
    await sleep(SETTLE_MS);
    const cpu = (cpuUs(pid) - c0 - (SETTLE_MS / 1000) * idleUsPerS) / count;
    const out = join(stateDir, "strace.txt");
    const tracer = spawn("strace", ["-f", "-c", "-o", out, "-e", `trace=${TRACED.join(",")}`, "-p", String(pid)], { stdio: "ignore" });
    await sleep(1_000);
    await creates(broker, "traced", count);
    await sleep(SETTLE_MS);
    tracer.kill("SIGINT");
    await new Promise((r) => tracer.once("exit", r));
    const counts = parseCounts(readFileSync(out, "utf8"));
    const per = Object.fromEntries(TRACED.map((k) => [k, Math.round(((counts[k] ?? 0) / count) * 100) / 100]));
    return { ...per, cpu_us: Math.round(cpu), creates_per_s_untraced: Math.round((count / wallMs) * 1000) };
  } finally {
    await broker.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const results: Record<string, Record<string, number>[]> = Object.fromEntries(roots.map((r) => [r, []]));
for (let i = 0; i < rounds; i++) {
  for (const root of roots) {
    const r = await round(root);
    console.error(`round ${i + 1} ${root}: ${JSON.stringify(r)}`);
    results[root]!.push(r);
  }
}
for (const root of roots) {
  const rs = results[root]!;
  const keys = Object.keys(rs[0]!);
  let rev = "";
  try {
    rev = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch { /* not a git checkout */ }
  console.log(JSON.stringify({ root: existsSync(root) ? rev : root, count, in_flight: inFlight, rounds: rs.length, median_per_create: Object.fromEntries(keys.map((k) => [k, median(rs.map((r) => r[k]!))])), rounds_detail: rs }));
}
