/**
 * Builds the web console (console/, docs/console.md) into `dist/console/`,
 * the directory wrangler.toml's `[assets]` serves through the Worker's
 * `ASSETS` binding:
 *
 *   dist/console/index.html          the page (references the hashed files)
 *   dist/console/app-<hash>.js       the bundle: the UI, preact, uPlot (ESM, minified)
 *   dist/console/app-<hash>.css      styles, uPlot's included
 *
 * Run by wrangler's `[build]` command (`wrangler dev`, `wrangler deploy`),
 * by the local broker launcher (`mortarmq dev`, through ensureConsole) and
 * by the test configuration, so every runtime finds a fresh build; it takes
 * ~0.1 s. `node --import tsx client/scripts/build-console.ts` builds by hand.
 * Exits non-zero when the bundle does not build.
 *
 * Each build records what went into it in `dist/console.inputs.json` (next
 * to the directory, so it is not served): the SHA-256 of every source file
 * esbuild read (console/, preact, uPlot), of console/index.html and of this
 * file, and the files written. ensureConsole rebuilds only when one differs.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Root of this package. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Where the build goes (gitignored: `dist/`). */
export const CONSOLE_DIST = join(ROOT, "dist/console");

/** What a build wrote: file names (relative to CONSOLE_DIST) and their sizes in bytes. */
export interface ConsoleBuild {
  files: Record<string, number>;
}

/** `<outDir>.inputs.json`: what the build in `outDir` was made from. */
interface ConsoleManifest {
  format: 1;
  /** Path relative to the package root → SHA-256 (hex) of its contents. */
  inputs: Record<string, string>;
  /** The build's files (relative to outDir) → size in bytes. */
  files: Record<string, number>;
}

const manifestPath = (outDir: string) => `${outDir}.inputs.json`;

/** SHA-256 (hex) of a file under the package root; null when it cannot be read. */
function hashOf(relPath: string): string | null {
  try {
    return createHash("sha256").update(readFileSync(join(ROOT, relPath))).digest("hex");
  } catch {
    return null;
  }
}

/** Inputs besides esbuild's: the page template and this builder. */
const EXTRA_INPUTS = ["console/index.html", "client/scripts/build-console.ts"];

/**
 * True when `outDir` holds a build whose recorded inputs are all unchanged
 * and whose files are all there (a build by an older builder, or with no
 * record, is not current).
 */
export function consoleBuildCurrent(outDir = CONSOLE_DIST): boolean {
  let m: ConsoleManifest;
  try {
    m = JSON.parse(readFileSync(manifestPath(outDir), "utf8")) as ConsoleManifest;
  } catch {
    return false;
  }
  if (m.format !== 1 || Object.keys(m.inputs).length === 0) return false;
  for (const [file, hash] of Object.entries(m.inputs)) if (hashOf(file) !== hash) return false;
  return Object.keys(m.files).every((f) => existsSync(join(outDir, f)));
}

/**
 * Builds the console unless `outDir` already holds a build of the current
 * sources (consoleBuildCurrent): a start with unchanged sources rewrites no
 * file under a broker that is serving them.
 * @returns whether it built
 * @throws as buildConsole
 */
export async function ensureConsole(outDir = CONSOLE_DIST): Promise<boolean> {
  if (consoleBuildCurrent(outDir)) return false;
  await buildConsole(outDir);
  return true;
}

/**
 * Bundles console/app.tsx with esbuild and writes index.html with the
 * hashed names, in place: each file by one atomic rename, index.html after
 * the files it names, then the previous build's other files are removed.
 * The directory itself is never removed or replaced: the local broker's
 * workerd serves the directory it opened at start, and a replaced one
 * would leave /console answering 503 until a restart.
 * @throws when esbuild reports an error
 */
export async function buildConsole(outDir = CONSOLE_DIST): Promise<ConsoleBuild> {
  const { build } = await import("esbuild"); // only when building (ensureConsole's check needs none of it)
  const out = await build({
    absWorkingDir: ROOT, // metafile inputs relative to the package root
    entryPoints: { app: join(ROOT, "console/app.tsx") },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    entryNames: "[name]-[hash]",
    outdir: outDir,
    write: false,
    metafile: true,
    legalComments: "none",
    logLevel: "silent",
  });
  mkdirSync(outDir, { recursive: true }); // kept, never replaced: a running broker's workerd serves this very directory
  const files: Record<string, number> = {};
  let js = "";
  let css = "";
  for (const f of out.outputFiles) {
    const name = f.path.slice(outDir.length + 1);
    replaceFile(f.path, f.contents);
    files[name] = f.contents.byteLength;
    if (name.endsWith(".js")) js = name;
    if (name.endsWith(".css")) css = name;
  }
  const html = readFileSync(join(ROOT, "console/index.html"), "utf8").replace("%APP_JS%", js).replace("%APP_CSS%", css);
  replaceFile(join(outDir, "index.html"), html); // after the files it names
  files["index.html"] = Buffer.byteLength(html);
  for (const old of readdirSync(outDir)) if (!Object.hasOwn(files, old)) rmSync(join(outDir, old), { recursive: true, force: true }); // the previous build's
  const inputs: Record<string, string> = {};
  for (const file of [...Object.keys(out.metafile.inputs), ...EXTRA_INPUTS]) inputs[file] = hashOf(file) ?? "";
  const manifest: ConsoleManifest = { format: 1, inputs, files };
  replaceFile(manifestPath(outDir), JSON.stringify(manifest, null, 1));
  return { files };
}

/**
 * Writes `path` atomically: a temporary file next to it, then one rename
 * over it, so a reader (the running broker) sees the old file or the new
 * one, never a missing or half-written one.
 */
function replaceFile(path: string, contents: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  buildConsole().then(
    (b) => console.log(`console built: ${Object.entries(b.files).map(([n, s]) => `${n} ${s} B`).join(", ")}`),
    (e: unknown) => {
      console.error(`console build failed: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
