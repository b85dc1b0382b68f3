/**
 * Benchmark harness. Each file in bench/suites/ exports
 * `suite: BenchSuite`. The runner starts one local broker through
 * startLocalBroker (`mortarmq dev`, fresh state dir, both TCP bridges on free
 * ports) unless every selected suite starts its own (`standalone`), runs the
 * selected suites in order, prints their tables and writes each result as
 * JSON to bench/results/<suite>.json.
 *
 * `--launcher wrangler` runs the suites against the earlier `wrangler dev`
 * launcher instead (results go to bench/results/<suite>.wrangler.json); the
 * interleaved comparison of the two is the `launchers` suite.
 *
 * `--baseline <rev>` also starts a broker built from that revision
 * (bench/baseline.ts) and runs every suite against it first, then against
 * this checkout: before and after in one run on the same machine. The
 * record then holds `baseline: {rev, commit, rows, detail}` beside the
 * current `rows`/`detail`. With `--interleave N` (N ≥ 2) each suite runs N
 * rounds against both brokers, alternating which goes first, and the record
 * adds `ratios`: per row, for every numeric column, the median over rounds
 * of that round's this-checkout ÷ baseline value (bench/interleave.ts) — a
 * shared, noisy machine's load hits both arms of a round alike.
 *
 * Other `--name value` / `--name=value` arguments are suite options
 * (`BenchContext.options`), e.g. `npm run bench -- mailbox-flood --count 20000`.
 */
import { readdirSync, writeFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../client/local/broker";
import { startBaseline, type Baseline } from "./baseline";
import { medianRatios, type RoundPair } from "./interleave";

const here = dirname(fileURLToPath(import.meta.url));

/** What a suite gets: the running broker and the command line's suite options (name without the dashes → value). */
export interface BenchContext {
  broker: LocalBroker;
  options: Readonly<Record<string, string>>;
}

/** One benchmark suite. `run` returns rows for the table and any JSON detail. */
export interface BenchSuite {
  name: string;
  description: string;
  /** Starts its own brokers: `ctx.broker` is not used (the runner starts none for it, and no baseline run). */
  standalone?: boolean;
  run(ctx: BenchContext): Promise<{ rows: Record<string, string | number>[]; detail?: unknown }>;
}

/** Which launcher the runner's broker uses. */
export type Launcher = "miniflare" | "wrangler";

/**
 * Splits `npm run bench` arguments into suite names, `--baseline <rev>` /
 * `--baseline=<rev>`, `--launcher <name>` / `--launcher=<name>` and suite
 * options (`--name value` / `--name=value`).
 * @throws Error when a flag has no value or the launcher is unknown
 */
export function parseBenchArgs(args: string[]): { only: string[]; baseline?: string; launcher: Launcher; rounds: number; options: Record<string, string> } {
  const only: string[] = [];
  const options: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) {
      only.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = a.slice(2, eq < 0 ? undefined : eq);
    const value = eq < 0 ? args[++i] : a.slice(eq + 1);
    if (value === undefined || value === "") throw new Error(`--${name} needs a value`);
    options[name] = value;
  }
  const { baseline, launcher = "miniflare", interleave, ...rest } = options;
  if (launcher !== "miniflare" && launcher !== "wrangler") throw new Error(`--launcher expects miniflare or wrangler, got "${launcher}"`);
  const rounds = interleave === undefined ? 1 : Number(interleave);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--interleave expects a whole number of rounds, got "${interleave}"`);
  if (rounds > 1 && baseline === undefined) throw new Error("--interleave needs --baseline <rev>");
  return { only, baseline, launcher, rounds, options: rest };
}

/**
 * Runs the suites named in `only` (all when empty), each against the
 * `baseline` revision first when given; with `rounds` > 1 (and a baseline)
 * both arms run `rounds` times interleaved and the record gets `ratios`.
 */
export async function runBenchmarks(only: string[], baselineRev?: string, launcher: Launcher = "miniflare", options: Record<string, string> = {}, rounds = 1): Promise<void> {
  const dir = join(here, "suites");
  const files = readdirSync(dir).filter((f) => f.endsWith(".ts")).sort();
  const suites: BenchSuite[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { suite?: BenchSuite };
    if (mod.suite && (only.length === 0 || only.includes(mod.suite.name))) suites.push(mod.suite);
  }
  if (suites.length === 0) {
    console.log("no benchmark suites selected");
    return;
  }
  const needBroker = !suites.every((s) => s.standalone);
  const baseline: Baseline | undefined = baselineRev === undefined || !needBroker ? undefined : await startBaseline(PACKAGE_ROOT, baselineRev);
  const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-"));
  const outDir = resolve(here, "results");
  mkdirSync(outDir, { recursive: true });
  let broker: LocalBroker | undefined;
  try {
    if (needBroker) broker = await startLocalBroker({ stateDir, port: 0, launcher, bridges: { mortar: 0, nats: 0 } });
    for (const s of suites) {
      console.log(`\n## ${s.name} — ${s.description}`);
      let before: Awaited<ReturnType<BenchSuite["run"]>> | undefined;
      let res!: Awaited<ReturnType<BenchSuite["run"]>>;
      const pairs: RoundPair[] = [];
      for (let round = 0; round < rounds; round++) {
        const baseFirst = round % 2 === 0;
        const runBase = async () => {
          if (!baseline || s.standalone) return;
          console.log(`baseline ${baseline.rev} (${baseline.commit.slice(0, 10)})${rounds > 1 ? `, round ${round + 1}/${rounds}` : ""}:`);
          before = await s.run({ broker: baseline.broker, options });
          console.table(before.rows);
        };
        const runNew = async () => {
          if (baseline && !s.standalone) console.log(`this checkout${rounds > 1 ? `, round ${round + 1}/${rounds}` : ""}:`);
          res = await s.run({ broker: broker!, options });
          console.table(res.rows);
        };
        if (baseFirst) { await runBase(); await runNew(); } else { await runNew(); await runBase(); }
        if (before) pairs.push({ base: before.rows, current: res.rows });
      }
      const ratios = rounds > 1 ? medianRatios(pairs) : undefined;
      if (ratios) {
        console.log(`this checkout ÷ baseline, median of ${rounds} interleaved rounds:`);
        console.table(ratios);
      }
      const record = {
        suite: s.name, date: new Date().toISOString(), node: process.version, ...(s.standalone ? {} : { launcher }), rows: res.rows, detail: res.detail,
        ...(baseline && before ? { baseline: { rev: baseline.rev, commit: baseline.commit, rows: before.rows, detail: before.detail } } : {}),
        ...(ratios ? { interleaved: { rounds, ratios, pairs } } : {}),
      };
      const file = s.standalone || launcher === "miniflare" ? `${s.name}.json` : `${s.name}.${launcher}.json`;
      writeFileSync(join(outDir, file), JSON.stringify(record, null, 2) + "\n");
    }
  } finally {
    await broker?.stop();
    await baseline?.dispose();
    rmSync(stateDir, { recursive: true, force: true });
  }
}
