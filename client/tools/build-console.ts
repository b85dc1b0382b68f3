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
 * by the local broker launcher and by the test configuration, so every
 * runtime finds a fresh build; it takes ~0.1 s. `node --import tsx
 * client/tools/build-console.ts` builds by hand. Exits non-zero when the
 * bundle does not build.
 */
import { build } from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * Bundles console/app.tsx with esbuild and writes index.html with the
 * hashed names; removes the previous build's files first.
 * @throws when esbuild reports an error
 */
export async function buildConsole(outDir = CONSOLE_DIST): Promise<ConsoleBuild> {
  const out = await build({
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
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const files: Record<string, number> = {};
  let js = "";
  let css = "";
  for (const f of out.outputFiles) {
    const name = f.path.slice(outDir.length + 1);
    writeFileSync(f.path, f.contents);
    files[name] = f.contents.byteLength;
    if (name.endsWith(".js")) js = name;
    if (name.endsWith(".css")) css = name;
  }
  const html = readFileSync(join(ROOT, "console/index.html"), "utf8").replace("%APP_JS%", js).replace("%APP_CSS%", css);
  writeFileSync(join(outDir, "index.html"), html);
  files["index.html"] = Buffer.byteLength(html);
  return { files };
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
