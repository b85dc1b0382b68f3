/**
 * The local broker as `mortarmq dev` (`npm start`) runs it, in this process:
 * the state directory's lock and its sweep of object files that hold nothing
 * (./state-reaper.ts: at start and every `reapEverySeconds`), the Worker in Miniflare (./miniflare-host.ts)
 * and the MortarMQ v0 and NATS TCP bridges (client/bridge/), which reach the
 * Worker over a loopback socket — each TCP connection is one WebSocket
 * straight into workerd (measured against Miniflare's `dispatchFetch`
 * upgrade in bench/suites/local-hops.ts: 12 % less CPU per request).
 *
 * That socket is the Worker's own direct socket (Miniflare
 * `unsafeDirectSockets`): the HTTP port itself when it is one (on a loopback
 * address without `verbose`, ./miniflare-host.ts), else one on a free
 * 127.0.0.1 port next to it: the HTTP port's entry worker adds nothing a
 * bridge needs (the TCP client's
 * address goes along as `X-Forwarded-For`, which the Worker prefers to
 * `CF-Connecting-IP`; no request logs, no response compression on a
 * WebSocket) and costs a pass through another isolate per upgrade and a
 * relay of every WebSocket message (bench/results/experiments/nats-mq9.perf18-ab.json).
 * With `verbose` the bridges use the HTTP port, so their upgrades are logged.
 */
import { resolve } from "node:path";
import type { Writable } from "node:stream";
import { startBridges, type StartedBridge } from "../bridge/bridges";
import { hostWorker } from "./miniflare-host";
import { assertPortFree, PortInUseError } from "./ports";
import { waitForHealthz, type AuthMode } from "./ready";
import { lockStateDir } from "./state-lock";
import { reapEmptyObjectFiles, startStateReaper } from "./state-reaper";
import { ensureStateDir } from "./state-dir";

/** What `startEmbeddedBroker` starts. Ports: 0 picks a free one; an absent bridge is not started. */
export interface EmbeddedBrokerOptions {
  /** Repository root (wrangler.toml, node_modules). */
  root: string;
  host: string;
  port: number;
  /** State directory (created if missing). */
  stateDir: string;
  vars: Record<string, string>;
  /** MortarMQ v0 TCP bridge port. */
  bridgePort?: number;
  /** NATS TCP bridge port. */
  natsPort?: number;
  /** One log line per HTTP request. */
  verbose: boolean;
  /** Seconds between sweeps of object files that hold nothing (./state-reaper.ts); 0: only the sweep at start. Default 60. */
  reapEverySeconds?: number;
  /** How long to wait for /healthz, ms. */
  readyTimeoutMs: number;
  /** Bridge connection failures (e.g. the broker went away). */
  onBridgeError?: (kind: "mortar" | "nats", err: Error) => void;
  stdout?: Writable;
  stderr?: Writable;
}

/** A running embedded broker. */
export interface EmbeddedBroker {
  url: string;
  /** The same port on a loopback address (differs from `url` when listening on 0.0.0.0 / ::). */
  loopbackUrl: string;
  port: number;
  stateDir: string;
  auth: AuthMode;
  bridges: StartedBridge[];
  /** Pid of the workerd process, if found. */
  runtimePid: number | undefined;
  /** Pid of a previous broker's left-over workerd killed to take the state directory over. */
  stoppedOrphan: number | undefined;
  /** Closes the bridges, stops workerd and gives the state directory back (idempotent). */
  stop(): Promise<void>;
}

/**
 * Takes the state directory (stopping a killed launcher's left-over
 * workerd), checks every requested port, starts the Worker, waits for
 * /healthz, then starts the bridges.
 * @throws PortInUseError for a taken port (nothing is left running);
 *   StateDirError for a state directory that cannot be created or written;
 *   Error for a state directory in use, a failed build or start, or no /healthz in time
 */
export async function startEmbeddedBroker(opts: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const stateDir = resolve(opts.stateDir);
  ensureStateDir(stateDir);
  // The lock first: taking over a lock of a launcher that was SIGKILLed alone stops the workerd it left
  // behind, which still listens on the HTTP port a rerun asks for again.
  const lock = await lockStateDir(stateDir);
  process.once("exit", () => lock.release()); // also on an exit that skips stop()
  const cleanups: (() => Promise<void>)[] = [async () => lock.release()];
  const stop = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  };
  try {
    await assertPortFree(opts.host, opts.port, "HTTP", "--port");
    if (opts.bridgePort !== undefined) await assertPortFree(opts.host, opts.bridgePort, "MortarMQ v0 bridge", "--bridge-port");
    if (opts.natsPort !== undefined) await assertPortFree(opts.host, opts.natsPort, "NATS bridge", "--nats-port");
    // workerd is not running yet and the lock is ours: every object file that holds nothing can go
    await reapEmptyObjectFiles({ stateDir, runtimePid: undefined });
    const bridged = opts.bridgePort !== undefined || opts.natsPort !== undefined;
    const worker = await hostWorker({
      root: opts.root, host: opts.host, port: opts.port, stateDir, vars: opts.vars, verbose: opts.verbose, stdout: opts.stdout, stderr: opts.stderr,
      directHttp: true, // on a loopback address without --verbose: no worker in front of the Worker (client/local/miniflare-host.ts)
      directSocket: bridged && !opts.verbose, // the bridges' own way in (see the module comment)
    });
    cleanups.push(() => worker.dispose());
    if (worker.runtimePid !== undefined) lock.recordRuntime(worker.runtimePid);
    const reapEvery = opts.reapEverySeconds ?? 60;
    if (worker.runtimePid !== undefined && reapEvery > 0) {
      const reaper = startStateReaper({ stateDir, runtimePid: worker.runtimePid, intervalMs: reapEvery * 1000,
        onError: (e) => (opts.stderr ?? process.stderr).write(`mortarmq: state directory sweep: ${e.message}\n`) });
      cleanups.push(() => reaper.stop());
    }
    const auth = await waitForHealthz(worker.loopbackUrl, { timeoutMs: opts.readyTimeoutMs });
    const { started, failed } = await startBridges({
      url: worker.directUrl ?? worker.loopbackUrl,
      mortar: opts.bridgePort !== undefined ? { host: opts.host, port: opts.bridgePort } : undefined,
      nats: opts.natsPort !== undefined ? { host: opts.host, port: opts.natsPort } : undefined,
      onConnectionError: opts.onBridgeError,
      // permessage-deflate on the MortarMQ v0 bridge only (client/bridge/tunnel.ts). The NATS bridge is
      // uncompressed: measured in this topology (bridge in the launcher, client in another process),
      // 3 interleaved A/Bs, the same request rate (0.98–1.10×) at 10–12 µs less launcher CPU per request.
      compress: { mortar: true, nats: false },
      zeroMask: true, // a loopback socket of this process's own workerd: no proxy in between
    });
    cleanups.push(async () => {
      await Promise.all(started.map((s) => s.tunnel.close()));
    });
    const f = failed[0];
    if (f) {
      // taken between the check above and now: fail as the check would have
      const code = (f.error as NodeJS.ErrnoException).code;
      const [what, flag, port] = f.kind === "mortar" ? ["MortarMQ v0 bridge", "--bridge-port", opts.bridgePort!] : ["NATS bridge", "--nats-port", opts.natsPort!];
      throw code === "EADDRINUSE" ? new PortInUseError(what, flag, opts.host, port) : f.error;
    }
    return {
      url: worker.url, loopbackUrl: worker.loopbackUrl, port: worker.port, stateDir, auth, bridges: started,
      runtimePid: worker.runtimePid, stoppedOrphan: lock.stoppedOrphan, stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
