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
 */
import { readdirSync, writeFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startLocalBroker, type LocalBroker } from "../client/local/broker";

const here = dirname(fileURLToPath(import.meta.url));

/** What a suite gets: the running broker. */
export interface BenchContext {
  broker: LocalBroker;
}

/** One benchmark suite. `run` returns rows for the table and any JSON detail. */
export interface BenchSuite {
  name: string;
  description: string;
  /** Starts its own brokers: `ctx.broker` is not used (the runner starts none for it). */
  standalone?: boolean;
  run(ctx: BenchContext): Promise<{ rows: Record<string, string | number>[]; detail?: unknown }>;
}

/** Runs the suites named in `args` (all when none); `--launcher wrangler|miniflare` picks the launcher. */
export async function runBenchmarks(args: string[]): Promise<void> {
  const at = args.indexOf("--launcher");
  const launcher = at >= 0 ? args[at + 1] : "miniflare";
  if (launcher !== "miniflare" && launcher !== "wrangler") throw new Error(`--launcher expects miniflare or wrangler, got ${launcher}`);
  const only = at >= 0 ? args.filter((_, i) => i !== at && i !== at + 1) : args;
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
  const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-"));
  const broker = suites.every((s) => s.standalone)
    ? undefined
    : await startLocalBroker({ stateDir, port: 0, launcher, bridges: { mortar: 0, nats: 0 } });
  const outDir = resolve(here, "results");
  mkdirSync(outDir, { recursive: true });
  try {
    for (const s of suites) {
      console.log(`\n## ${s.name} — ${s.description}`);
      const res = await s.run({ broker: broker! });
      console.table(res.rows);
      const record = {
        suite: s.name, date: new Date().toISOString(), node: process.version, ...(s.standalone ? {} : { launcher }), rows: res.rows, detail: res.detail,
      };
      const file = s.standalone || launcher === "miniflare" ? `${s.name}.json` : `${s.name}.${launcher}.json`;
      writeFileSync(join(outDir, file), JSON.stringify(record, null, 2) + "\n");
    }
  } finally {
    await broker?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}
