/**
 * The earlier local launcher, kept only as a comparison for benchmarks and
 * for the upgrade test (a state directory written by it must be read by
 * `mortarmq dev`): `wrangler dev --persist-to <stateDir>`, which puts a proxy
 * workerd in front of the broker's workerd, and — when bridges are asked
 * for — `mortarmq bridge` in its own Node process, as the earlier
 * `mortarmq dev` ran them. Not a user-facing option.
 */
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { spawnLauncher, stopChild } from "./launcher-process";
import { killTree } from "./process-tree";
import { assertPortFree, freePort } from "./ports";
import { waitForHealthz, type AuthMode } from "./ready";
import { PACKAGE_ROOT } from "./root";
import { lockStateDir } from "./state-lock";
import { WRANGLER_ENV } from "./worker-build";
import { ensureStateDir } from "./state-dir";

const require = createRequire(import.meta.url);

/** What the earlier launcher runs. */
export interface WranglerLaunchOptions {
  host: string;
  /** HTTP port; 0 picks a free one. */
  port: number;
  stateDir: string;
  vars: Record<string, string>;
  bridges: { mortar?: number; nats?: number };
  inheritLogs: boolean;
  readyTimeoutMs: number;
}

/** A running `wrangler dev` (and its bridge process). */
export interface WranglerLaunch {
  port: number;
  url: string;
  stateDir: string;
  auth: AuthMode;
  bridges: { mortar?: number; nats?: number };
  process: ChildProcess;
  /** wrangler's pid and the bridge process's. */
  pids: number[];
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Spawns `wrangler dev` (and `mortarmq bridge` when bridges are asked for)
 * and resolves once GET /healthz answers 200.
 * @throws Error if the port is taken, the state directory is in use, wrangler exits first, or it is not ready in time
 */
export async function launchWranglerDev(opts: WranglerLaunchOptions): Promise<WranglerLaunch> {
  const { host } = opts;
  const port = opts.port > 0 ? opts.port : await freePort(host);
  await assertPortFree(host, port);
  const stateDir = resolve(opts.stateDir);
  ensureStateDir(stateDir);
  const args = [
    require.resolve("wrangler/bin/wrangler.js"), "dev",
    "--config", resolve(PACKAGE_ROOT, "wrangler.toml"),
    "--ip", host,
    "--port", String(port),
    "--persist-to", stateDir,
    "--inspector-port", String(await freePort(host)),
    "--show-interactive-dev-session=false",
    "--log-level", opts.inheritLogs ? "info" : "warn",
  ];
  for (const [k, v] of Object.entries(opts.vars)) args.push("--var", `${k}:${v}`);
  const lock = await lockStateDir(stateDir);
  const { child, exited, log } = spawnLauncher(args, { env: WRANGLER_ENV, inheritLogs: opts.inheritLogs });
  let dead = false;
  void exited.then(() => {
    dead = true;
    lock.release();
  });
  const url = `http://${host}:${port}`;
  let auth: AuthMode;
  try {
    auth = await waitForHealthz(url, { timeoutMs: opts.readyTimeoutMs, failed: () => (dead ? `wrangler dev exited before the broker was ready:\n${log()}` : undefined) });
  } catch (e) {
    if (child.pid !== undefined) killTree(child.pid); // wrangler's workerd children too
    throw new Error(`${(e as Error).message}${dead ? "" : `:\n${log()}`}`);
  }
  const bridges: WranglerLaunch["bridges"] = {};
  let bridge: { child: ChildProcess; exited: Promise<unknown> } | undefined;
  if (opts.bridges.mortar !== undefined || opts.bridges.nats !== undefined) {
    const b = await startBridgeProcess(url, host, opts.bridges);
    Object.assign(bridges, b.ports);
    bridge = b;
  }
  return {
    port, url, stateDir, auth, bridges, process: child, exited,
    pids: [child.pid!, ...(bridge ? [bridge.child.pid!] : [])],
    async stop() {
      if (bridge) await stopChild(bridge.child, bridge.exited);
      if (!dead) await stopChild(child, exited); // wrangler stops its workerd children on SIGINT
    },
  };
}

/** `mortarmq bridge --url <url>` on the requested ports (0: free ones); resolves once it printed its listening lines. */
async function startBridgeProcess(url: string, host: string, want: { mortar?: number; nats?: number }) {
  const ports = {
    mortar: want.mortar === undefined ? undefined : want.mortar || (await freePort(host)),
    nats: want.nats === undefined ? undefined : want.nats || (await freePort(host)),
  };
  const args = [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "bridge", "--url", url];
  args.push(...(ports.mortar === undefined ? ["--no-listen"] : ["--listen", `${host}:${ports.mortar}`]));
  args.push(...(ports.nats === undefined ? ["--no-nats"] : ["--nats", `${host}:${ports.nats}`]));
  const { child, exited } = spawnLauncher(args, {});
  let out = "";
  const want_lines = Number(ports.mortar !== undefined) + Number(ports.nats !== undefined);
  await new Promise<void>((res, rej) => {
    const on = (d: Buffer) => {
      out += d;
      if ((out.match(/^mortarmq: (MortarMQ v0|NATS) +(tcp|nats):\/\//gm) ?? []).length >= want_lines) res();
    };
    child.stdout!.on("data", on);
    child.stderr!.on("data", (d) => (out += d));
    void exited.then(() => rej(new Error(`mortarmq bridge exited:\n${out}`)));
  });
  return { child, exited, ports: Object.fromEntries(Object.entries(ports).filter(([, p]) => p !== undefined)) as { mortar?: number; nats?: number } };
}
