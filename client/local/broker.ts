/**
 * Starts and stops a real local broker: `wrangler dev` (workerd) with
 * on-disk state. Used by `mortarmq dev`, the end-to-end tests and the
 * benchmarks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { isHealthProbeLog } from "./health";
import { killTree } from "./process-tree";
import { lockStateDir } from "./state-lock";

const require = createRequire(import.meta.url);
/** Root of this package (holds wrangler.toml). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface LocalBrokerOptions {
  host?: string;
  /** HTTP port; 0 picks a free one. */
  port?: number;
  /** On-disk state directory (created if missing). */
  stateDir: string;
  /** Extra `--var NAME:value` bindings (e.g. AUTH_TOKENS). */
  vars?: Record<string, string>;
  /** Pass wrangler's output through to this process's stdout/stderr (without the request-log lines of /healthz probes). */
  inheritLogs?: boolean;
  /** How long to wait for /healthz, ms (default 60000). */
  readyTimeoutMs?: number;
}

export interface LocalBroker {
  port: number;
  url: string;
  stateDir: string;
  /** Auth mode the broker reported on /healthz: "open" (no tokens, tenant `default`) or "tokens". */
  auth: "open" | "tokens";
  process: ChildProcess;
  /** Resolves when the wrangler process exits. */
  exited: Promise<number | null>;
  /** Stops wrangler (SIGINT, then SIGKILL after 5 s) and waits for exit. */
  stop(): Promise<void>;
}

/** Finds a free TCP port on `host`. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

/** Resolves when `port` on `host` can be listened on; rejects (EADDRINUSE, …) otherwise. */
export async function assertPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((res, rej) => {
    const srv = createServer();
    srv.once("error", (e: NodeJS.ErrnoException) =>
      rej(new Error(e.code === "EADDRINUSE" ? `${host}:${port} is already in use (another broker running? choose another --port)` : `${host}:${port}: ${e.message}`)));
    srv.listen(port, host, () => srv.close(() => res()));
  });
}

/**
 * Spawns `wrangler dev` and resolves once GET /healthz answers 200.
 * Throws if the requested port is taken (so another broker's /healthz is
 * never mistaken for this one), if another running broker uses the state
 * directory (client/local/state-lock.ts), if wrangler exits first, or if the
 * broker is not ready in time.
 */
export async function startLocalBroker(opts: LocalBrokerOptions): Promise<LocalBroker> {
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port && opts.port > 0 ? opts.port : await freePort(host);
  if (opts.port && opts.port > 0) await assertPortFree(host, port);
  const stateDir = resolve(opts.stateDir);
  mkdirSync(stateDir, { recursive: true });
  const wranglerBin = require.resolve("wrangler/bin/wrangler.js");
  const args = [
    wranglerBin, "dev",
    "--config", resolve(PACKAGE_ROOT, "wrangler.toml"),
    "--ip", host,
    "--port", String(port),
    "--persist-to", stateDir,
    "--inspector-port", String(await freePort(host)),
    "--show-interactive-dev-session=false",
    "--log-level", opts.inheritLogs ? "info" : "warn",
  ];
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}:${v}`);
  const unlock = lockStateDir(stateDir); // one broker per state directory (client/local/state-lock.ts)
  const child = spawn(process.execPath, args, {
    cwd: PACKAGE_ROOT,
    env: {
      ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "1", NO_UPDATE_NOTIFIER: "1", CLOUDFLARE_CF_FETCH_ENABLED: "false",
      ...(opts.inheritLogs && process.stdout.isTTY && process.env.FORCE_COLOR === undefined ? { FORCE_COLOR: "1" } : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (opts.inheritLogs) {
    forwardLogs(child.stdout!, process.stdout);
    forwardLogs(child.stderr!, process.stderr);
  }
  let log = "";
  child.stdout?.on("data", (d) => { log = (log + d).slice(-8000); });
  child.stderr?.on("data", (d) => { log = (log + d).slice(-8000); });
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)));
  let dead = false;
  exited.then(() => { dead = true; unlock(); });
  const url = `http://${host}:${port}`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  let auth: LocalBroker["auth"] = "open";
  while (true) {
    if (dead) throw new Error(`wrangler dev exited before the broker was ready:\n${log}`);
    if (Date.now() > deadline) {
      if (child.pid !== undefined) killTree(child.pid); // wrangler's workerd children too
      throw new Error(`broker not ready on ${url} in time:\n${log}`);
    }
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.status === 200) {
        auth = ((await r.json()) as { auth?: string }).auth === "tokens" ? "tokens" : "open";
        break;
      }
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    port, url, stateDir, auth, process: child, exited,
    async stop() {
      if (dead) return;
      child.kill("SIGINT");
      // wrangler stops its workerd children on SIGINT; if it hangs, kill the whole tree (not wrangler alone)
      const t = setTimeout(() => child.pid !== undefined && killTree(child.pid), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Copies `from` to `to` line by line, leaving out wrangler's log lines of successful /healthz probes. */
function forwardLogs(from: Readable, to: Writable): void {
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    if (!isHealthProbeLog(line)) to.write(line + "\n");
  });
}
