/**
 * The Worker bundle that `mortarmq dev` hosts in Miniflare. It is built by
 * wrangler's own bundler — `wrangler deploy --dry-run --outdir` with the
 * repository's wrangler.toml: the same esbuild step, `nodejs_compat`
 * handling and module rules as a deploy — and cached, so a start with
 * unchanged sources builds nothing.
 *
 * Cache: `<root>/.mortarmq/build/` (ignored by git). `current.json` names the
 * build directory and the SHA-256 of every file that went into it (esbuild's
 * metafile inputs — Worker sources and the npm packages they import — plus
 * wrangler.toml, tsconfig.json and this file's FORMAT), with the wrangler
 * version. Any difference rebuilds into a new directory, which is then made
 * current (client/scripts/build-swap.js), so two launchers starting at once never
 * see half a build. Replaced builds are deleted after KEEP_OLD_BUILDS_MS.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { makeCurrent } from "../scripts/build-swap.js";

/** Recorded in `current.json`; a build of another format is rebuilt. */
export const FORMAT = 1;
/** Replaced builds are deleted after this long, ms (a launcher that read `current.json` just before the swap still loads from its build). */
const KEEP_OLD_BUILDS_MS = 10 * 60 * 1000;

/** A bundle ready for Miniflare's `scriptPath` / `modulesRoot`. */
export interface WorkerBundle {
  /** Absolute path of the bundle's main module (ES module). */
  scriptPath: string;
  /** Directory holding the bundle (Miniflare's `modulesRoot`). */
  modulesRoot: string;
  /** True when this call built it, false when the cached build was current. */
  built: boolean;
  /** True when the build wrote modules besides the main one (e.g. `.wasm`, `.txt` by module rules). */
  extraModules: boolean;
}

/** Files wrangler writes next to the bundle that are not modules. */
const NOT_MODULES = new Set(["index.js", "index.js.map", "meta.json", "README.md"]);

const bundleAt = (dir: string, built: boolean): WorkerBundle => ({
  scriptPath: join(dir, "index.js"),
  modulesRoot: dir,
  built,
  extraModules: readdirSync(dir, { recursive: true, encoding: "utf8" }).some((f) => !NOT_MODULES.has(f)),
});

interface Manifest {
  format: number;
  wrangler: string;
  build: string;
  /** Input path (relative to the root) → SHA-256 (hex) of its contents. */
  inputs: Record<string, string>;
}

/** Environment for every wrangler process the local runtime starts: no telemetry, no prompts, no network look-ups. */
export const WRANGLER_ENV: Readonly<Record<string, string>> = {
  WRANGLER_SEND_METRICS: "false",
  CI: process.env.CI ?? "1",
  NO_UPDATE_NOTIFIER: "1",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

/** SHA-256 (hex) of a file's contents; null when it cannot be read. */
function fileHash(path: string): string | null {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return null;
  }
}

/** Files that steer the build besides esbuild's inputs (relative to the root; missing ones are recorded as null). */
const CONFIG_INPUTS = ["wrangler.toml", "tsconfig.json"];

/** The build directory of `current.json` when every recorded input is unchanged, else null. */
export function currentBuild(cacheDir: string, root: string, wranglerVersion: string): string | null {
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(join(cacheDir, "current.json"), "utf8")) as Manifest;
  } catch {
    return null;
  }
  if (m.format !== FORMAT || m.wrangler !== wranglerVersion) return null;
  for (const [file, hash] of Object.entries(m.inputs)) if (fileHash(resolve(root, file)) !== hash) return null;
  const dir = join(cacheDir, m.build);
  return existsSync(join(dir, "index.js")) ? dir : null;
}

/**
 * The bundle of the Worker named by `<root>/wrangler.toml`, built with the
 * installed wrangler when no cached build matches the sources.
 * @param opts.root repository root (holds wrangler.toml and node_modules)
 * @param opts.cacheDir default `<root>/.mortarmq/build`
 * @throws Error with wrangler's output when the build fails (e.g. a syntax error in the Worker)
 */
export async function workerBundle(opts: { root: string; cacheDir?: string }): Promise<WorkerBundle> {
  const root = opts.root;
  const cacheDir = opts.cacheDir ?? join(root, ".mortarmq", "build");
  const require = createRequire(join(root, "package.json"));
  const wranglerBin = require.resolve("wrangler/bin/wrangler.js");
  const wranglerVersion = (JSON.parse(readFileSync(require.resolve("wrangler/package.json"), "utf8")) as { version: string }).version;
  const cached = currentBuild(cacheDir, root, wranglerVersion);
  if (cached) return bundleAt(cached, false);

  const name = `build-${Date.now()}-${process.pid}`;
  const out = join(cacheDir, name);
  mkdirSync(out, { recursive: true });
  const meta = join(out, "meta.json");
  await new Promise<void>((res, rej) => {
    execFile(
      process.execPath,
      [wranglerBin, "deploy", "--dry-run", "--outdir", out, "--metafile", meta, "--config", join(root, "wrangler.toml")],
      { cwd: root, env: { ...process.env, ...WRANGLER_ENV, WRANGLER_LOG: "warn", FORCE_COLOR: "0" }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return res();
        rmSync(out, { recursive: true, force: true });
        rej(new Error(`building the Worker with wrangler failed:\n${stripVTControlCharacters(`${stdout}${stderr}`).trim() || err.message}`));
      },
    );
  });
  const inputs: Record<string, string> = {};
  const metafile = JSON.parse(readFileSync(meta, "utf8")) as { inputs: Record<string, unknown> };
  for (const file of [...Object.keys(metafile.inputs), ...CONFIG_INPUTS]) inputs[file] = fileHash(resolve(root, file))!;
  const manifest: Manifest = { format: FORMAT, wrangler: wranglerVersion, build: name, inputs };
  makeCurrent(cacheDir, manifest, KEEP_OLD_BUILDS_MS);
  return bundleAt(out, true);
}
