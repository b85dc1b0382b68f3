/**
 * The clients as their users get them (issue 29), against one real local
 * broker (token required, CORS for the page's origin, NATS TCP bridge):
 *
 * - `@mortarmq/mq9` packed with `npm pack` (its prepack builds it), the
 *   tarball installed into a fresh project with `npm install --offline`
 *   (from the npm cache the repository's own install filled); a small
 *   program (test/fixtures/mq9-package/) type-checked by `tsc --strict`
 *   under `moduleResolution` NodeNext and Bundler, run in Node (two agents,
 *   request/reply, over http, nats-ws and nats), bundled with esbuild and run
 *   in Chromium from another origin (http, nats-ws), and run in a Worker in
 *   Miniflare (http, nats-ws). Tarball ≤ 100 KB; installed ≤ 1 MB for an HTTP-only user.
 * - The shared case table (test/fixtures/mq9-cases.json) with the
 *   TypeScript client over http, nats-ws and nats: every step gives the
 *   table's result. (`MQ9_CASES_WRITE=1` writes the http results into the
 *   table as its expectations instead — review the diff.)
 * - The Python client's unittest suite (client/python/tests/, the table
 *   among them) run with `python3 -m unittest` against the same broker.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { Mq9Client, type Mq9TransportName } from "@mortarmq/mq9";
import { PACKAGE_ROOT } from "../../client/local/broker";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { loadCaseTable, projectOnto, runCaseTable, type ClientFactory } from "../fixtures/mq9-cases";

const run = promisify(execFile);
const TOKEN = "mq9-packages-token";
/** Chromium as docs/testing.md sets it up. */
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const MAX_TARBALL_BYTES = 100 * 1024;
const MAX_INSTALLED_BYTES = 1024 * 1024;

/** Serves the page's bundle on a port of its own (an origin other than the broker's). */
let pageScript = "";
const pageServer: Server = createServer((req, res) => {
  if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(pageScript);
  else if (req.url === "/") res.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><meta charset="utf-8"><script type="module" src="/app.js"></script>');
  else res.writeHead(404).end();
});
await new Promise<void>((r) => pageServer.listen(0, "127.0.0.1", r));
const PAGE_ORIGIN = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;

const ctx = useLocalBroker("mq9-packages", { vars: { AUTH_TOKENS: `${TOKEN}:acme`, CORS_ORIGINS: PAGE_ORIGIN, PUSH_ALLOW_LOOPBACK: "1" }, natsBridge: true });
const work = mkdtempSync(join(tmpdir(), "mortarmq-mq9-packages-"));
afterAll(async () => {
  await new Promise((r) => pageServer.close(r));
  rmSync(work, { recursive: true, force: true });
});

/** Bytes of every file under `dir` (symbolic links not followed). */
function treeBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += treeBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

const EXPECTED = (transport: string) => ({ transport, answer: "echo: ping", correlated: true, missing: "mailbox_not_found", signature: [true, false] });

describe("@mortarmq/mq9 as a user installs it", () => {
  it("packs, installs offline, type-checks under NodeNext and Bundler, runs in Node, Chromium and a Worker", { timeout: 300_000 }, async () => {
    // pack (prepack builds dist/) and install the tarball alone into a fresh project, offline
    const packed = JSON.parse((await run("npm", ["pack", "--workspace", "@mortarmq/mq9", "--pack-destination", work, "--json", "--loglevel=error"], { cwd: PACKAGE_ROOT })).stdout) as { filename: string; entryCount: number }[];
    const tarball = join(work, packed[0]!.filename);
    const app = join(work, "app");
    mkdirSync(app);
    // `crypto: false`: nats.ws has an unused Node fallback that esbuild would otherwise try to bundle (client/mq9/README.md)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "mq9-user", private: true, type: "module", browser: { crypto: false } }));
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: app });
    const tarballBytes = statSync(tarball).size;
    const installedBytes = treeBytes(join(app, "node_modules"));
    console.log(`@mortarmq/mq9: tarball ${tarballBytes} B (${packed[0]!.entryCount} files), installed for HTTP only ${installedBytes} B`);
    expect(readdirSync(join(app, "node_modules")).filter((n) => !n.startsWith("."))).toEqual(["@mortarmq"]);
    expect(tarballBytes).toBeLessThanOrEqual(MAX_TARBALL_BYTES);
    expect(installedBytes).toBeLessThanOrEqual(MAX_INSTALLED_BYTES);

    // what a Node user of the NATS transports adds (optional peer dependencies) and the Node types: the repository's own copies
    for (const dep of ["nats", "nats.ws", "ws", "@types/node"]) {
      mkdirSync(join(app, "node_modules", dep, ".."), { recursive: true });
      symlinkSync(join(PACKAGE_ROOT, "node_modules", dep), join(app, "node_modules", dep));
    }
    cpSync(join(PACKAGE_ROOT, "test/fixtures/mq9-package"), app, { recursive: true });
    // a Node project (Node's types, no DOM library) and a browser/Worker project (DOM, no Node types), the package's declarations checked too
    const base = { target: "ES2022", strict: true, skipLibCheck: false };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...base, lib: ["ES2022"], types: ["node"], module: "NodeNext", moduleResolution: "NodeNext", outDir: "out" }, include: ["*.ts"] }));
    writeFileSync(join(app, "tsconfig.bundler.json"), JSON.stringify({ compilerOptions: { ...base, lib: ["ES2022", "DOM"], types: [], module: "ESNext", moduleResolution: "Bundler", noEmit: true }, files: ["page.ts", "worker.ts"] }));
    const tsc = join(PACKAGE_ROOT, "node_modules/typescript/bin/tsc");
    await run(process.execPath, [tsc, "-p", "tsconfig.bundler.json"], { cwd: app }).catch((e: { stdout: string }) => expect.fail(`Bundler: ${e.stdout}`));
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app }).catch((e: { stdout: string }) => expect.fail(`NodeNext: ${e.stdout}`));

    // Node: the compiled program, every transport
    const { broker, natsBridge } = ctx;
    const node = await run(process.execPath, ["out/node-main.js", TOKEN, "http", broker.url, "nats-ws", broker.url, "nats", `nats://127.0.0.1:${natsBridge.port}`], { cwd: app });
    expect(node.stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual([EXPECTED("http"), EXPECTED("nats-ws"), EXPECTED("nats")]);

    // a browser: esbuild bundle of the page, served from another origin than the broker's
    const page = await build({ absWorkingDir: app, entryPoints: ["page.ts"], bundle: true, platform: "browser", format: "esm", target: "es2022", write: false, metafile: true, logLevel: "silent" });
    pageScript = page.outputFiles[0]!.text;
    expect(Object.keys(page.metafile.inputs).filter((i) => /node_modules\/(nats|ws)\//.test(i))).toEqual([]);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      const tab = await browser.newPage();
      const errors: string[] = [];
      tab.on("pageerror", (e) => errors.push(e.message));
      await tab.goto(`${PAGE_ORIGIN}/`);
      await tab.waitForFunction(() => "mq9Scenario" in globalThis);
      for (const t of ["http", "nats-ws"]) {
        const result = await tab.evaluate(([u, k, tr]) => (globalThis as unknown as { mq9Scenario: (...a: string[]) => Promise<unknown> }).mq9Scenario(u!, k!, tr!), [broker.url, TOKEN, t]);
        expect(result).toEqual(EXPECTED(t));
      }
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }

    // a Cloudflare Worker: bundled as wrangler does (workerd/worker/browser conditions), run by Miniflare
    const worker = await build({ absWorkingDir: app, entryPoints: ["worker.ts"], bundle: true, platform: "browser", conditions: ["workerd", "worker", "browser"], format: "esm", target: "es2022", write: false, logLevel: "silent" });
    const mf = new Miniflare({ modules: true, script: worker.outputFiles[0]!.text, compatibilityDate: "2026-04-26" });
    try {
      for (const t of ["http", "nats-ws"]) {
        const res = await mf.dispatchFetch(`http://worker/?url=${encodeURIComponent(broker.url)}&token=${TOKEN}&transport=${t}`);
        expect(await res.json()).toEqual(EXPECTED(t));
      }
    } finally {
      await mf.dispose();
    }
  });
});

describe("the shared case table (test/fixtures/mq9-cases.json)", () => {
  const table = loadCaseTable(PACKAGE_ROOT);

  /** Clients of one transport, made on first use and closed after the run. */
  function clientsOf(t: Mq9TransportName, opened: Mq9Client[]): ClientFactory {
    const made = new Map<string, Promise<Mq9Client>>();
    return (kind) => {
      if (!made.has(kind)) {
        const { broker, natsBridge } = ctx;
        const live = t === "nats" ? `nats://127.0.0.1:${natsBridge.port}` : broker.url;
        const url = kind === "unreachable" ? (t === "nats" ? "nats://127.0.0.1:1" : "http://127.0.0.1:1") : live;
        const p = Mq9Client.connect(url, { transport: t, token: kind === "bad_token" ? "not-a-token" : TOKEN, reconnect: false, timeoutMs: 10_000 });
        made.set(kind, p.then((c) => (opened.push(c), c)));
      }
      return made.get(kind)!;
    };
  }

  it.each(["http", "nats-ws", "nats"] as const)("gives the table's results over %s", { timeout: 120_000 }, async (t) => {
    const opened: Mq9Client[] = [];
    const prefix = `ts${t.replace("-", "")}${Math.random().toString(16).slice(2, 8)}`;
    try {
      const results = await runCaseTable(table, clientsOf(t, opened), prefix);
      if (process.env.MQ9_CASES_WRITE === "1" && t === "http") {
        for (const c of table.cases) c.steps.forEach((s, i) => (s.expect = results[c.name]![i]));
        writeFileSync(join(PACKAGE_ROOT, "test/fixtures/mq9-cases.json"), `${JSON.stringify(table, null, 1)}\n`);
        return;
      }
      for (const c of table.cases) {
        const got = c.steps.map((s, i) => projectOnto(results[c.name]![i], s.expect));
        expect(got, c.name).toEqual(c.steps.map((s) => s.expect));
      }
    } finally {
      for (const c of opened) await c.close();
    }
  });
});

describe("the Python client (client/python)", () => {
  it("python3 -m unittest passes against the broker (the shared case table among its tests)", { timeout: 180_000 }, async () => {
    const py = await run("python3", ["-m", "unittest", "-v"], {
      cwd: join(PACKAGE_ROOT, "client/python"),
      env: { ...process.env, MQ9_TEST_URL: ctx.broker.url, MQ9_TEST_TOKEN: TOKEN, PYTHONDONTWRITEBYTECODE: "1" },
    }).catch((e: { stderr: string }) => expect.fail(e.stderr));
    // unittest reports on stderr: every test named, none failed
    expect(py.stderr).toMatch(/^Ran \d+ tests? in /m);
    expect(py.stderr).toMatch(/\nOK\n?$/);
    expect(py.stderr).toContain("test_every_case_gives_the_tables_results");
  });
});
