#!/usr/bin/env node
// Builds the published form of @mortarmq/mq9 into client/mq9/dist/ (README.md "Building"):
//   dist/node/     ESM for Node ≥ 20 (exports condition `import`/`default`),
//   dist/browser/  ESM for browsers and Workers (`browser`, `worker`, `workerd`): the TCP
//                  transport and the `ws` fallback replaced by their .browser.ts stubs,
//   dist/types/    declarations (tsc), their relative imports given `.js` so that
//                  `moduleResolution: NodeNext` resolves them.
// The JS is bundled by esbuild (wire/ code the client uses is inlined; `nats`, `nats.ws`,
// `ws` and `@a2a-js/sdk` (the `./a2a` entry's) stay imports, each loaded only when its transport is chosen), with source maps —
// the sources inside the node build's maps only, which keeps the tarball near half its 100 KB bound.
// Run by `npm run build -w @mortarmq/mq9` and before `npm pack` (prepack).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, "dist");
const require = createRequire(import.meta.url);
const esbuild = require("esbuild");

/** The optional peer dependencies: never bundled. */
const PEERS = ["nats", "nats.ws", "ws", "@a2a-js/sdk"]; // @a2a-js/sdk: its subpaths too (esbuild marks a package's subpaths external with it)

/** esbuild plugin: `./x` → `./x.browser.ts` where that stub exists (the `browser` map of package.json). */
const browserStubs = {
  name: "mq9-browser-stubs",
  setup(b) {
    const map = JSON.parse(readFileSync(join(HERE, "package.json"), "utf8")).browser;
    for (const [from, to] of Object.entries(map)) {
      const name = from.replace(/^\.\//, "").replace(/\.ts$/, "");
      b.onResolve({ filter: new RegExp(`^\\./${name.replace(/[.]/g, "\\.")}$`) }, (args) =>
        args.importer.startsWith(HERE) ? { path: join(HERE, to) } : undefined);
    }
  },
};

/** Adds `.js` (or `/index.js`) to every relative specifier of the declarations under `dir`. */
function fixDeclarationSpecifiers(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) fixDeclarationSpecifiers(p);
    else if (name.endsWith(".d.ts")) {
      const text = readFileSync(p, "utf8");
      const fixed = text.replace(/((?:from|import)\s*\(?\s*)(["'])(\.{1,2}\/[^"']*)\2/g, (all, pre, q, spec) => {
        if (/\.js$/.test(spec)) return all;
        const base = resolve(dirname(p), spec);
        if (existsSync(`${base}.d.ts`)) return `${pre}${q}${spec}.js${q}`;
        if (existsSync(join(base, "index.d.ts"))) return `${pre}${q}${spec}/index.js${q}`;
        throw new Error(`${p}: cannot resolve ${spec}`);
      });
      if (fixed !== text) writeFileSync(p, fixed);
    }
  }
}

/** Builds everything into dist/ (removed first). */
export async function buildMq9() {
  rmSync(DIST, { recursive: true, force: true });
  const common = {
    absWorkingDir: HERE,
    entryPoints: { index: join(HERE, "index.ts"), a2a: join(HERE, "a2a-sdk/index.ts") }, // `.` and `./a2a`
    bundle: true, splitting: true, format: "esm", sourcemap: true,
    target: "es2022", external: PEERS, logLevel: "warning", legalComments: "none",
    chunkNames: "chunks/[name]-[hash]",
  };
  await esbuild.build({ ...common, outdir: join(DIST, "node"), platform: "node", target: "node20" });
  // the `./a2a` entry's own map without the sources' text (as in the browser build): the tarball stays under its 100 KB bound
  const a2aMap = join(DIST, "node", "a2a.js.map");
  const { sourcesContent: _dropped, ...lean } = JSON.parse(readFileSync(a2aMap, "utf8"));
  writeFileSync(a2aMap, JSON.stringify(lean));
  await esbuild.build({ ...common, outdir: join(DIST, "browser"), platform: "browser", plugins: [browserStubs], sourcesContent: false });
  const tsc = require.resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(HERE, "tsconfig.build.json")], { stdio: "inherit" });
  fixDeclarationSpecifiers(join(DIST, "types"));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await buildMq9();
