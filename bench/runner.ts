/**
 * Benchmark harness. Each file in bench/suites/ exports
 * `suite: BenchSuite`. The runner starts one local broker (real wrangler dev,
 * fresh state dir), runs the selected suites in order, prints their tables
 * and writes each result as JSON to bench/results/<suite>.json.
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
  run(ctx: BenchContext): Promise<{ rows: Record<string, string | number>[]; detail?: unknown }>;
}

/** Runs the suites named in `only` (all when empty). */
export async function runBenchmarks(only: string[]): Promise<void> {
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
  const broker = await startLocalBroker({ stateDir, port: 0 });
  const outDir = resolve(here, "results");
  mkdirSync(outDir, { recursive: true });
  try {
    for (const s of suites) {
      console.log(`\n## ${s.name} — ${s.description}`);
      const res = await s.run({ broker });
      console.table(res.rows);
      const record = { suite: s.name, date: new Date().toISOString(), node: process.version, rows: res.rows, detail: res.detail };
      writeFileSync(join(outDir, `${s.name}.json`), JSON.stringify(record, null, 2) + "\n");
    }
  } finally {
    await broker.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}
