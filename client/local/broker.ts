/**
 * Starts and stops a real local broker in a child process: `mortarmq dev`
 * (the Worker in Miniflare, ./embedded.ts) with on-disk state — what
 * `npm start` runs. The one way the end-to-end tests and the benchmarks
 * start a broker. `launcher: "wrangler"` runs the earlier `wrangler dev`
 * launcher instead (./wrangler-launcher.ts), for comparisons only.
 */
import type { ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { killTree } from "./process-tree";
import type { AuthMode, DevReadyMessage } from "./ready";
import { PACKAGE_ROOT } from "./root";
import { spawnLauncher, stopChild } from "./launcher-process";
import { launchWranglerDev } from "./wrangler-launcher";

export { PACKAGE_ROOT } from "./root";
export { assertPortFree, freePort } from "./ports";

export interface LocalBrokerOptions {
  host?: string;
  /** HTTP port; 0 picks a free one. */
  port?: number;
  /** On-disk state directory (created if missing). */
  stateDir: string;
  /** Extra Worker vars (e.g. AUTH_TOKENS), on top of wrangler.toml `[vars]` and `.dev.vars`. */
  vars?: Record<string, string>;
  /** TCP bridges to start with the broker (port 0 picks a free one); none when absent. */
  bridges?: { mortar?: number; nats?: number };
  /** Pass the broker's output through to this process's stdout/stderr. */
  inheritLogs?: boolean;
  /** `mortarmq dev --verbose`: one log line per HTTP request. */
  verbose?: boolean;
  /** `mortarmq dev --reap-every`: seconds between sweeps of object files that hold nothing (default 60; client/local/state-reaper.ts). */
  reapEverySeconds?: number;
  /** How long to wait for /healthz, ms (default 60000). */
  readyTimeoutMs?: number;
  /**
   * Internal, for benchmarks and the upgrade test: "wrangler" runs the
   * earlier launcher (`wrangler dev`, a proxy workerd in front of the
   * broker's; bridges in a `mortarmq bridge` process). Default "miniflare".
   */
  launcher?: "miniflare" | "wrangler";
}

export interface LocalBroker {
  port: number;
  url: string;
  stateDir: string;
  /** Auth mode the broker reported on /healthz: "open" (no tokens, tenant `default`) or "tokens". */
  auth: AuthMode;
  /** Which launcher runs it. */
  launcher: "miniflare" | "wrangler";
  /** Ports of the bridges that were started. */
  bridges: { mortar?: number; nats?: number };
  /** The launcher process (`mortarmq dev`, or wrangler); workerd is its child. */
  process: ChildProcess;
  /** Every process of this broker with its descendants: the launcher (and, for "wrangler", its bridge process). */
  pids: number[];
  /** Resolves when the launcher process exits. */
  exited: Promise<number | null>;
  /** Stops the broker (SIGINT, then SIGKILL of its process tree after 5 s) and waits for exit. */
  stop(): Promise<void>;
}

/**
 * Starts a broker and resolves once GET /healthz answered 200.
 * Throws if the requested port is taken (so another broker's /healthz is
 * never mistaken for this one), if another running broker uses the state
 * directory (client/local/state-lock.ts), if the launcher exits first, or if
 * the broker is not ready in time; the error carries the launcher's output.
 */
export async function startLocalBroker(opts: LocalBrokerOptions): Promise<LocalBroker> {
  const host = opts.host ?? "127.0.0.1";
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  if (opts.launcher === "wrangler") {
    const b = await launchWranglerDev({
      host, port: opts.port ?? 0, stateDir: opts.stateDir, vars: opts.vars ?? {}, bridges: opts.bridges ?? {},
      inheritLogs: opts.inheritLogs === true, readyTimeoutMs,
    });
    return { ...b, launcher: "wrangler" };
  }
  const args = [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--host", host, "--port", String(opts.port ?? 0), "--state", resolve(opts.stateDir)];
  const { mortar, nats } = opts.bridges ?? {};
  args.push(...(mortar === undefined ? ["--no-bridge-port"] : ["--bridge-port", String(mortar)]));
  args.push(...(nats === undefined ? ["--no-nats-port"] : ["--nats-port", String(nats)]));
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}=${v}`);
  if (opts.verbose) args.push("--verbose");
  if (opts.reapEverySeconds !== undefined) args.push("--reap-every", String(opts.reapEverySeconds));
  const { child, exited, log } = spawnLauncher(args, { ipc: true, inheritLogs: opts.inheritLogs });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ready = await Promise.race([
    new Promise<DevReadyMessage>((res) => child.on("message", (m: DevReadyMessage) => m?.type === "mortarmq-dev-ready" && res(m))),
    exited.then((code) => new Error(`mortarmq dev exited (${code === null ? "killed by a signal" : `code ${code}`}) before the broker was ready:\n${log()}`)),
    new Promise<Error>((res) => (timer = setTimeout(() => res(new Error(`broker not ready in ${Math.round(readyTimeoutMs / 1000)} s:\n${log()}`)), readyTimeoutMs))),
  ]);
  clearTimeout(timer);
  if (ready instanceof Error) {
    if (child.pid !== undefined) killTree(child.pid); // its workerd too
    throw ready;
  }
  child.channel?.unref(); // the channel alone does not keep this process alive
  return {
    port: ready.port, url: ready.url, stateDir: ready.stateDir, auth: ready.auth, launcher: "miniflare", bridges: ready.bridges,
    process: child, pids: [child.pid!], exited,
    stop: () => stopChild(child, exited),
  };
}
