/**
 * The Worker's Miniflare options, from wrangler.toml through wrangler's own
 * config → Miniflare translation (`unstable_readConfig` +
 * `unstable_getMiniflareWorkerOptions`, what the vitest pool uses): bindings,
 * `[vars]` and `.dev.vars`, Durable Object classes and their SQLite
 * migrations — never a hand-copied list.
 *
 * Loading wrangler (a 10 MB module) takes ~1.5 s of a start, so it is done in
 * a worker thread while the caller loads Miniflare on its own thread; where
 * that fails (e.g. options that cannot be passed between threads) the same
 * translation runs on the calling thread.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { Unstable_MiniflareWorkerOptions } from "wrangler";

/** The translation's result: the Worker's name in wrangler.toml and its options (no script: the bundle is added by the caller). */
export interface ConfiguredWorker {
  name: string;
  workerOptions: Unstable_MiniflareWorkerOptions["workerOptions"];
}

/** The translation itself; the same code runs in the worker thread (`THREAD`). */
function translate(packageJson: string, configPath: string): ConfiguredWorker {
  const wrangler = createRequire(packageJson)("wrangler") as typeof import("wrangler");
  const config = wrangler.unstable_readConfig({ config: configPath }, { hideWarnings: true });
  return { name: config.name ?? "worker", workerOptions: wrangler.unstable_getMiniflareWorkerOptions(config).workerOptions };
}

const THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
try {
  const wrangler = require("node:module").createRequire(workerData.packageJson)("wrangler");
  const config = wrangler.unstable_readConfig({ config: workerData.configPath }, { hideWarnings: true });
  parentPort.postMessage({ name: config.name ?? "worker", workerOptions: wrangler.unstable_getMiniflareWorkerOptions(config).workerOptions });
} catch (e) {
  parentPort.postMessage({ error: String((e && e.stack) || e) });
}`;

/**
 * Starts the translation of `<root>/wrangler.toml` in a worker thread.
 * @returns the options; rejects with wrangler's error for an invalid wrangler.toml
 */
export async function configuredWorker(root: string): Promise<ConfiguredWorker> {
  const packageJson = join(root, "package.json");
  const configPath = join(root, "wrangler.toml");
  const fromThread = await new Promise<ConfiguredWorker | undefined>((resolve) => {
    let worker: Worker;
    try {
      worker = new Worker(THREAD, { eval: true, workerData: { packageJson, configPath } });
    } catch {
      return resolve(undefined);
    }
    worker.once("message", (m: ConfiguredWorker | { error: string }) => resolve("error" in m ? undefined : m));
    worker.once("error", () => resolve(undefined));
    worker.once("exit", () => resolve(undefined));
  });
  return fromThread ?? translate(packageJson, configPath); // on this thread: the same result, or wrangler's own error
}
