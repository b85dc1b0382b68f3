/**
 * The embedded local runtime: the broker's Worker hosted in THIS Node
 * process through Miniflare's API (`new Miniflare(…)`), one workerd child
 * process, no proxy in front of it (what `wrangler dev` adds: a second
 * workerd that every request and WebSocket message crosses).
 *
 * - The bundle comes from wrangler's bundler, cached (./worker-build.ts).
 * - The web console's static assets (wrangler.toml `[assets]`, dist/console/)
 *   are built when their sources changed (client/scripts/build-console.ts
 *   ensureConsole; wrangler's `[build]` command runs only with a new bundle)
 *   and served through the `ASSETS` binding from wrangler's translation.
 *   Requests go straight to the Worker, not through Miniflare's assets
 *   router (run_worker_first: the router would only hand each one on, at
 *   about the Worker's own CPU cost again).
 * - The Worker's options come from wrangler.toml through wrangler's own
 *   config → Miniflare translation (./worker-options.ts): bindings, vars
 *   (and `.dev.vars`), Durable Object classes and their SQLite migrations.
 *   `vars` override them.
 * - State: `<stateDir>/v3`, the directory `wrangler dev --persist-to
 *   <stateDir>` uses, under the same Worker name, so Durable Object storage
 *   (`v3/do/<worker>-<Class>/<id>.sqlite`) written by the earlier
 *   `wrangler dev` launcher is read as is.
 * - The HTTP port is one of two sockets (`directHttp`):
 *   - a direct socket to the Worker's `DirectHttp` entrypoint
 *     (worker/index.ts; Miniflare's `unsafeDirectSockets`): no worker in
 *     between — in the same run 20–30 % less workerd CPU per mq9 SEND and
 *     GET /healthz than the entry socket (bench/suites/local-hops.ts). workerd
 *     tells the Worker no client address there, so it is used only on a
 *     loopback address (127.0.0.1, ::1), whose every client has that same
 *     address: the Worker is told it (var LOCAL_CLIENT_ADDRESS; NATS INFO
 *     `client_ip`);
 *   - otherwise Miniflare's entry socket: its entry worker, in the same
 *     workerd, gives each request what Cloudflare's edge would
 *     (`CF-Connecting-IP` — NATS INFO `client_ip` reads it — a `request.cf`,
 *     `Accept-Encoding`) and calls the Worker in-process; with `verbose` it
 *     also logs one line per request.
 *   A direct socket (`directSocket`, loopback only) can also be opened next to
 *   the entry socket, for the TCP bridges, which name their client's address
 *   themselves (./embedded.ts).
 * - Outbound `fetch()` (push attempts, an embeddings server) reaches public
 *   addresses only, checked by workerd on the address it connects to, plus
 *   loopback with PUSH_ALLOW_LOOPBACK=1 and the EMBEDDINGS_URL host (./outbound.ts).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { stripVTControlCharacters } from "node:util";
import type { Log as MiniflareLog, Miniflare as MiniflareType } from "miniflare";
import { isHealthProbeLog, isRuntimeNoise } from "./health";
import { outboundNetwork } from "./outbound";
import { PortInUseError } from "./ports";
import { childrenNamed } from "./process-tree";
import { ensureConsole } from "../scripts/build-console";
import { workerBundle } from "./worker-build";
import { configuredWorker } from "./worker-options";

/** What to host. */
export interface HostOptions {
  /** Repository root (wrangler.toml, node_modules). */
  root: string;
  /** Address of the HTTP port. */
  host: string;
  /** HTTP/WebSocket port; 0 picks a free one. */
  port: number;
  /** State directory (must exist); Miniflare persists under `<stateDir>/v3`. */
  stateDir: string;
  /** Worker vars on top of wrangler.toml `[vars]` and `.dev.vars`. */
  vars: Record<string, string>;
  /** Log one line per HTTP request (/healthz probes are left out; only on the entry socket: see directHttp). */
  verbose: boolean;
  /**
   * The HTTP port as a direct socket to the Worker (see the module comment);
   * only on a loopback address (127.0.0.1, ::1) and without `verbose`,
   * otherwise ignored (the entry socket). Default false.
   */
  directHttp?: boolean;
  /** Also open a direct socket to the Worker on a free loopback port (`directUrl`: the TCP bridges, bench/suites/local-hops.ts). */
  directSocket?: boolean;
  /** Open workerd's V8 inspector (Chrome DevTools protocol) on this loopback port, for CPU profiles (bench/tools/profile-mq9.ts). */
  inspectorPort?: number;
  /** Where the Worker's console output and Miniflare's messages go (default: this process's stdout / stderr). */
  stdout?: Writable;
  stderr?: Writable;
}

/** A running hosted Worker. */
export interface HostedWorker {
  /** `http://host:port` of the HTTP port. */
  url: string;
  port: number;
  /** A loopback URL of the same port, for clients in this process (the TCP bridges). */
  loopbackUrl: string;
  /** With `directSocket` or a direct HTTP port: a loopback URL straight to the Worker, past Miniflare's entry worker. */
  directUrl?: string;
  /** The Miniflare instance (in-process clients: `dispatchFetch`). */
  miniflare: MiniflareType;
  /** Pid of the workerd process, if it could be found. */
  runtimePid: number | undefined;
  /** Stops workerd (Miniflare's dispose); resolves once it is gone. */
  dispose(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Miniflare's Log, writing lines to `out` without colour codes unless `out` is a terminal, and without /healthz probe lines. */
function makeLog(LogClass: typeof MiniflareLog, level: number, out: Writable): MiniflareLog {
  const tty = (out as { isTTY?: boolean }).isTTY === true;
  return new (class extends LogClass {
    protected override log(message: string): void {
      if (isHealthProbeLog(message)) return;
      out.write((tty ? message : stripVTControlCharacters(message)) + "\n");
    }
  })(level);
}

/** Copies a workerd output stream line by line, without known runtime noise, without colour codes unless `to` is a terminal. */
function forwardRuntimeOutput(from: Readable, to: Writable): void {
  const tty = (to as { isTTY?: boolean }).isTTY === true;
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    if (isRuntimeNoise(line)) return;
    to.write((tty ? line : stripVTControlCharacters(line)) + "\n");
  });
}

/** `host` as the host part of a URL (an IPv6 address in brackets). */
const urlHost = (host: string) => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);

/** The port of `url`, also when it is its scheme's default (`http://h:80`: `URL.port` is then ""). */
export function portOfUrl(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}

/** The loopback address for reaching a socket bound to `host` from this machine, as a URL host. */
export function loopbackHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return urlHost(host);
}

/** The Worker's entrypoint for direct sockets (worker/index.ts `DirectHttp`). */
const DIRECT_ENTRYPOINT = "DirectHttp";

/** `host` as the address every client of a socket bound to it has, when there is one (a loopback address). */
export function soleClientAddress(host: string): string | undefined {
  if (host === "127.0.0.1") return host;
  if (host === "::1" || host === "[::1]") return "::1";
  return undefined;
}

/**
 * Builds (or reuses) the bundle and starts it in Miniflare.
 * @throws PortInUseError when the port is in use (Miniflare's ERR_ADDRESS_IN_USE);
 *   Error when the build (Worker or console) fails or workerd does not start.
 */
export async function hostWorker(opts: HostOptions): Promise<HostedWorker> {
  const stdout = opts.stdout ?? process.stdout;
  const stderr = opts.stderr ?? process.stderr;
  const bundle = await workerBundle({ root: opts.root });
  await ensureConsole(join(opts.root, "dist", "console")); // after the bundle: its build may have run wrangler's [build] (the same build)
  const configured = configuredWorker(opts.root); // in a worker thread, while this one loads Miniflare
  configured.catch(() => {}); // awaited below
  const { Miniflare, Log, LogLevel } = require("miniflare") as typeof import("miniflare");
  const { name, workerOptions } = await configured;
  const peer = opts.directHttp && !opts.verbose ? soleClientAddress(opts.host) : undefined;
  const sockets: { host: string; port: number; entrypoint: string }[] = [];
  if (peer !== undefined) sockets.push({ host: peer, port: opts.port, entrypoint: DIRECT_ENTRYPOINT }); // peer is the host, unbracketed
  else if (opts.directSocket) sockets.push({ host: "127.0.0.1", port: 0, entrypoint: DIRECT_ENTRYPOINT });
  const bindings = { ...workerOptions.bindings, ...(peer !== undefined ? { LOCAL_CLIENT_ADDRESS: peer } : {}), ...opts.vars };
  const outbound = await outboundNetwork(bindings); // public addresses only (push SSRF: ./outbound.ts)
  const signalListeners = { SIGINT: process.listeners("SIGINT"), SIGTERM: process.listeners("SIGTERM") };
  const mf: MiniflareType = new Miniflare({
    // With a direct HTTP port Miniflare's entry socket is still opened (Miniflare needs it): on a free loopback port.
    host: peer !== undefined ? "127.0.0.1" : opts.host,
    port: peer !== undefined ? 0 : opts.port,
    logRequests: opts.verbose,
    log: makeLog(Log, opts.verbose ? LogLevel.INFO : LogLevel.WARN, stdout),
    handleRuntimeStdio: (out: Readable, err: Readable) => {
      forwardRuntimeOutput(out, stdout);
      forwardRuntimeOutput(err, stderr);
    },
    cf: false, // no fetch of workers.cloudflare.com: nothing here may need the internet
    telemetry: { enabled: false },
    ...(opts.inspectorPort !== undefined ? { inspectorPort: opts.inspectorPort } : {}),
    defaultPersistRoot: join(opts.stateDir, "v3"),
    workers: [
      {
        ...workerOptions,
        name,
        bindings,
        outboundService: outbound,
        // One ES module (the bundle imports only runtime built-ins): handed over as is, which spares Miniflare
        // parsing 1.3 MB to find imports (~3 s of a start on a loaded machine); other modules are found by that scan.
        ...(bundle.extraModules
          ? { modules: true, scriptPath: bundle.scriptPath }
          : { modules: [{ type: "ESModule" as const, path: bundle.scriptPath, contents: readFileSync(bundle.scriptPath, "utf8") }] }),
        modulesRoot: bundle.modulesRoot,
        // Every request straight to the Worker. With `[assets]` Miniflare's entry would send each one through
        // two more workers (the assets router and its RPC proxy, ~40 % of the isolates' CPU on GET /healthz);
        // with run_worker_first = true they only hand it on to the Worker, which reads the console's files
        // through its ASSETS binding itself. A route for every URL makes the entry call the Worker directly
        // (only then: without run_worker_first the router must answer asset paths itself).
        ...(workerOptions.assets?.routerConfig?.invoke_user_worker_ahead_of_assets === true ? { routes: ["*/*"] } : {}),
        ...(sockets.length > 0 ? { unsafeDirectSockets: sockets } : {}),
      },
    ],
  });
  // Miniflare's exit hook exits the process at once on SIGINT / SIGTERM (status 130 / 143); the launcher stops
  // in order instead (bridges, workerd, state lock). Its `exit` listener stays: workerd never outlives this process's exit.
  for (const [signal, before] of Object.entries(signalListeners)) {
    for (const l of process.listeners(signal as NodeJS.Signals)) if (!before.includes(l)) process.removeListener(signal, l);
  }
  let entry: URL;
  let direct: URL | undefined;
  try {
    entry = await mf.ready;
    if (sockets.length > 0) direct = await mf.unsafeGetDirectURL(undefined, DIRECT_ENTRYPOINT);
  } catch (e) {
    await mf.dispose().catch(() => {});
    if ((e as { code?: string }).code === "ERR_ADDRESS_IN_USE") throw new PortInUseError("HTTP", "--port", opts.host, opts.port); // taken since the check
    throw e;
  }
  const port = portOfUrl(peer !== undefined ? direct! : entry);
  const loopbackUrl = `http://${loopbackHost(opts.host)}:${port}`;
  return {
    url: `http://${urlHost(opts.host)}:${port}`,
    port,
    loopbackUrl,
    ...(direct ? { directUrl: direct.origin } : {}),
    miniflare: mf,
    runtimePid: childrenNamed(process.pid, "workerd")[0],
    dispose: () => mf.dispose(),
  };
}
