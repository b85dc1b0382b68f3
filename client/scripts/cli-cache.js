// Start-up cache of the `mortarmq` CLI (plain JS: it runs before any
// TypeScript loader). Loading the CLI through tsx costs ~150 ms per run
// (tsx's loader thread, one hook round trip per module); so on its first run
// the CLI is bundled into plain ESM with esbuild — the copy tsx itself uses,
// so the transform is the same — and later runs import that bundle directly
// (~2.3× faster start). Nothing is built at `npm install`.
//
// The cache lives in <root>/node_modules/.cache/mortarmq-cli/<hash of root>/:
// `current.json` names the build directory and every source file that went
// into it with its mtime and size; any change (or another esbuild version, or
// another FORMAT) rebuilds into a new directory before `current.json` is
// swapped with a rename, so a concurrent run never sees half a build. Older
// builds are removed an hour after they were replaced. Any failure (no
// esbuild, a read-only node_modules, a build error) returns null and the
// launcher falls back to tsx; MORTARMQ_CLI_CACHE=0 always uses tsx.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { makeCurrent } from "./build-swap.js";

/** Recorded in the manifest; a build of another format is rebuilt (this file is an input too). */
export const FORMAT = 2;
/** Replaced builds are deleted after this long, ms (a run started before the swap may still load lazy chunks from them). */
const KEEP_OLD_BUILDS_MS = 60 * 60 * 1000;

/** Repository root (holds client/ and node_modules/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The CLI's `main(argv)` from the cached bundle, building it first when a
 * source changed; null when the cache cannot be used (the caller then loads
 * client/cli/main.ts through tsx).
 * @param {{ root?: string, cacheDir?: string }} [opts] for tests: another root or cache directory
 * @returns {Promise<((argv: string[]) => Promise<void>) | null>}
 */
export async function loadCachedCli(opts = {}) {
  if (process.env.MORTARMQ_CLI_CACHE === "0") return null;
  const root = opts.root ?? ROOT;
  const cacheDir = opts.cacheDir ?? join(root, "node_modules", ".cache", "mortarmq-cli", createHash("sha256").update(root).digest("hex").slice(0, 16));
  try {
    const esbuild = createRequire(createRequire(join(root, "package.json")).resolve("tsx/esm/api"))("esbuild");
    const dir = currentBuild(cacheDir, esbuild.version) ?? (await build(root, cacheDir, esbuild));
    const mod = await import(pathToFileURL(join(dir, "main.mjs")).href);
    return typeof mod.main === "function" ? mod.main : null;
  } catch {
    return null;
  }
}

/**
 * The directory of the current build if every input is unchanged, else null.
 * @param {string} cacheDir
 * @param {string} esbuildVersion
 * @returns {string | null}
 */
export function currentBuild(cacheDir, esbuildVersion) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(cacheDir, "current.json"), "utf8"));
  } catch {
    return null;
  }
  if (manifest.format !== FORMAT || manifest.esbuild !== esbuildVersion) return null;
  for (const [file, [mtimeMs, size]] of Object.entries(manifest.inputs)) {
    try {
      const s = statSync(file);
      if (s.mtimeMs !== mtimeMs || s.size !== size) return null;
    } catch {
      return null;
    }
  }
  return join(cacheDir, manifest.build);
}

/**
 * Bundles client/cli/main.ts (npm packages stay imports, dynamic imports
 * become lazy chunks) into a new build directory and makes it current.
 * `import.meta.url` keeps each source file's own URL, as under tsx.
 * @returns {Promise<string>} the build directory
 */
async function build(root, cacheDir, esbuild) {
  const name = `build-${Date.now()}-${process.pid}`;
  const out = join(cacheDir, name);
  mkdirSync(cacheDir, { recursive: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { main: join(root, "client", "cli", "main.ts") },
    outdir: out,
    outExtension: { ".js": ".mjs" }, // .mjs: under node_modules/ no package.json says "type": "module"
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    metafile: true,
    logLevel: "silent",
    plugins: [sourceImportMetaUrl],
  });
  const inputs = {};
  // tsconfig.json steers the transform; this file holds the build options
  for (const file of [...Object.keys(result.metafile.inputs), "tsconfig.json", fileURLToPath(import.meta.url)]) {
    const abs = resolve(root, file);
    const s = statSync(abs);
    inputs[abs] = [s.mtimeMs, s.size];
  }
  makeCurrent(cacheDir, { format: FORMAT, esbuild: esbuild.version, build: name, inputs }, KEEP_OLD_BUILDS_MS);
  return out;
}

/** esbuild plugin: `import.meta.url` in a bundled TypeScript file is that file's URL (client/local/root.ts finds the repository with it). */
const sourceImportMetaUrl = {
  name: "source-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      const url = JSON.stringify(pathToFileURL(args.path).href);
      return { contents: text.includes("import.meta.url") ? text.replaceAll("import.meta.url", url) : text, loader: "ts" };
    });
  },
};
