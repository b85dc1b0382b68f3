/**
 * Hosts the production bundle with the bill meter (./meter-entry.js) in
 * Miniflare, in this process: the bundle `wrangler deploy --dry-run` writes
 * (client/local/worker-build.ts, cached), the Worker's options from
 * wrangler.toml through wrangler's own translation (client/local/worker-options.ts),
 * and an entry module that re-exports the bundle with every Durable Object
 * class wrapped. Fresh state per host (a temporary directory), so each
 * workload starts from nothing. The console's static assets are left out
 * (no workload reads them).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Miniflare } from "miniflare";
import { PACKAGE_ROOT } from "../../client/local/root";
import { workerBundle } from "../../client/local/worker-build";
import { configuredWorker } from "../../client/local/worker-options";
import type { MeterSnapshot } from "./units";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** A running metered broker. */
export interface MeteredBroker {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The meter's counters now (GET /__bill/snapshot; not itself counted). */
  snapshot(): Promise<MeterSnapshot>;
  /** Stops workerd and deletes the state. */
  dispose(): Promise<void>;
}

/**
 * The entry module's source: ./meter-entry.js plus one wrapped export per
 * Durable Object class in `classes` and the bundle's other exports as they are.
 */
export function meterEntrySource(classes: string[]): string {
  const base = readFileSync(join(here, "meter-entry.js"), "utf8");
  const lines = classes.map((c) => `export const ${c} = wrapObjectClass(${JSON.stringify(c)}, bundle.${c});`);
  return `${base}\n${lines.join("\n")}\nexport * from "./index.js";\n`;
}

/**
 * Starts the metered Worker on a free loopback port.
 * @param vars Worker vars on top of wrangler.toml's `[vars]`
 * @throws Error when the bundle cannot be built or workerd does not start
 */
export async function startMeteredBroker(vars: Record<string, string> = {}): Promise<MeteredBroker> {
  const bundle = await workerBundle({ root: PACKAGE_ROOT });
  if (bundle.extraModules) throw new Error("the bill meter expects a one-module bundle");
  const { name, workerOptions } = await configuredWorker(PACKAGE_ROOT);
  const classes = [...new Set(Object.values(workerOptions.durableObjects ?? {}).map((d) => (typeof d === "string" ? d : (d as { className: string }).className)))];
  const { Miniflare: MiniflareClass, Log, LogLevel } = require("miniflare") as typeof import("miniflare");
  const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bill-"));
  const { assets: _assets, ...options } = workerOptions;
  const bindings = { ...options.bindings } as Record<string, unknown>;
  delete bindings.ASSETS;
  const mf: Miniflare = new MiniflareClass({
    host: "127.0.0.1",
    port: 0,
    log: new Log(LogLevel.WARN),
    cf: false,
    telemetry: { enabled: false },
    defaultPersistRoot: join(stateDir, "v3"),
    workers: [
      {
        ...options,
        name,
        bindings: { ...bindings, ...vars } as Record<string, string>,
        modulesRoot: bundle.modulesRoot,
        modules: [
          { type: "ESModule", path: join(bundle.modulesRoot, "bill-meter-entry.js"), contents: meterEntrySource(classes) },
          { type: "ESModule", path: bundle.scriptPath, contents: readFileSync(bundle.scriptPath, "utf8") },
        ],
      },
    ],
  } as ConstructorParameters<typeof MiniflareClass>[0]);
  let url: URL;
  try {
    url = await mf.ready;
  } catch (e) {
    await mf.dispose().catch(() => {});
    rmSync(stateDir, { recursive: true, force: true });
    throw e;
  }
  const origin = url.origin;
  return {
    url: origin,
    port: Number(url.port),
    async snapshot() {
      const res = await fetch(`${origin}/__bill/snapshot`);
      if (!res.ok) throw new Error(`meter snapshot: ${res.status}`);
      return (await res.json()) as MeterSnapshot;
    },
    async dispose() {
      await mf.dispose().catch(() => {});
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
