/**
 * `mortarmq dev`: the local broker (what `npm start` runs). Hosts the Worker
 * in Miniflare in this process (client/local/embedded.ts: one Node process
 * and its workerd, on-disk state) with the TCP bridges for MortarMQ v0
 * (default port 7070) and NATS (default port 4222) next to it; prints one
 * line per listening address and the auth mode (open or tokens); Ctrl-C
 * shuts everything down. A port already in use — HTTP or a bridge — stops
 * it before anything starts (PORT_IN_USE; 0 picks a free port). If workerd
 * exits, or /healthz stops answering for HEALTH_DEAD_AFTER_MS (probed every
 * HEALTH_INTERVAL_MS), it says so, stops the bridges and exits with status 1.
 * Quiet by default: `--verbose` logs one line per HTTP request; colour codes
 * only on a terminal. Bridge connection failures are logged to stderr.
 *
 * Worker vars (wrangler.toml `[vars]`: AUTH_TOKENS, CORS_ORIGINS, …) are set
 * with `--var NAME=value` (repeatable) or the `--auth-tokens <list>` shortcut.
 * ALLOWED_HOSTS is always set: the loopback names and the `--host` address
 * (every address of the machine for 0.0.0.0 / ::), plus any names given with
 * `--var ALLOWED_HOSTS=…` (client/local/allowed-hosts.ts).
 *
 * Started by startLocalBroker (client/local/broker.ts) with an IPC channel,
 * it sends one `DevReadyMessage` once ready and stops when the channel closes.
 */
import { hostname, networkInterfaces } from "node:os";
import type { Command } from "commander";
import { HEALTH_INTERVAL_MS, HealthWatch } from "../local/health";
import type { PortInUseError } from "../local/ports";
import type { DevReadyMessage } from "../local/ready";
import type { StateDirInUseError } from "../local/state-lock";
import { CliError, usageError } from "./errors";
import { devAllowedHosts, type MachineNames } from "../local/allowed-hosts";
import { parseIntOption } from "./parse";

interface DevOptions {
  host: string;
  port: string;
  state: string;
  bridgePort: string | false;
  natsPort: string | false;
  var: string[];
  authTokens?: string;
  allowLoopbackPush?: boolean;
  reapEvery: string;
  verbose?: boolean;
}

/**
 * `mortarmq dev`'s push vars: endpoints on this machine (http://127.0.0.1:…)
 * are allowed (`PUSH_ALLOW_LOOPBACK=1`) when the broker runs open — no
 * AUTH_TOKENS and no ADMIN_TOKEN among `vars` — or when asked
 * (`--allow-loopback-push`); with tokens, a tenant could otherwise make the
 * broker call services on this machine (docs/push.md "Endpoint rules").
 * An explicit `--var PUSH_ALLOW_LOOPBACK=…` wins.
 */
export function devPushVars(vars: Readonly<Record<string, string>>, allowLoopback: boolean): Record<string, string> {
  const open = !vars.AUTH_TOKENS && !vars.ADMIN_TOKEN;
  return open || allowLoopback ? { PUSH_ALLOW_LOOPBACK: "1", ...vars } : { ...vars };
}

/** The report for a port in use: what it is for, and how to choose another. */
export function portInUse(e: PortInUseError): CliError {
  const no = e.flag === "--port" ? "" : `, or ${e.flag.replace("--", "--no-")}`;
  return new CliError("PORT_IN_USE", e.message, `stop the other broker, or choose another port with ${e.flag} <port> (0 picks a free one)${no}`);
}

/** Worker var names: what wrangler accepts as a binding name. */
const VAR_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Builds the Worker vars from repeated `--var NAME=value` options and the
 * `--auth-tokens` shortcut (= `--var AUTH_TOKENS=<list>`). Throws Error with
 * a message for the user on a malformed option, a name given twice, or
 * `--auth-tokens` together with `--var AUTH_TOKENS=…`.
 */
export function devVars(varOptions: readonly string[], authTokens?: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const opt of varOptions) {
    const eq = opt.indexOf("=");
    const name = eq < 0 ? opt : opt.slice(0, eq);
    if (eq < 0 || !VAR_NAME_RE.test(name)) throw new Error(`--var expects NAME=value (e.g. --var CORS_ORIGINS=https://app.example), got "${opt}"`);
    if (Object.hasOwn(vars, name)) throw new Error(`--var ${name} given more than once`);
    vars[name] = opt.slice(eq + 1);
  }
  if (authTokens !== undefined) {
    if (Object.hasOwn(vars, "AUTH_TOKENS")) throw new Error("use either --auth-tokens or --var AUTH_TOKENS=…, not both");
    vars.AUTH_TOKENS = authTokens;
  }
  return vars;
}

/** The startup line that says how clients authenticate (DESIGN §6: an open broker says so). */
export function authLine(auth: "open" | "tokens"): string {
  return auth === "open"
    ? 'mortarmq: auth        OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured: every client is tenant "default" (use --auth-tokens <token>:<tenant>,… or --var ADMIN_TOKEN=… to require tokens)'
    : "mortarmq: auth        tokens required (AUTH_TOKENS or ADMIN_TOKEN is set): clients send a token (HTTP Bearer, NATS auth_token, MortarMQ CONNECT)";
}

/** This machine's host name and interface addresses (for a broker bound to 0.0.0.0 / ::). */
function machineNames(): MachineNames {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  return { hostname: hostname(), addresses };
}

/** The hint of a usage error of `dev`. */
const DEV_HELP = "see `mortarmq dev --help`";

const collect = (value: string, previous: string[]) => [...previous, value];

/** The report for a state directory another running broker holds. */
export function stateDirInUse(e: StateDirInUseError): CliError {
  return new CliError("STATE_DIR_IN_USE", `state directory ${e.stateDir} is in use by another broker (pid ${e.owner})`,
    `stop it, or choose another --state (if no broker runs, delete ${e.lockPath})`);
}

/** Registers the `dev` command on `program`. */
export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("run the broker locally (the Worker in Miniflare, on-disk state, no account needed) with its TCP bridges")
    .option("--host <host>", "address to listen on; the broker answers to loopback names and this address (add names with --var ALLOWED_HOSTS=…)", "127.0.0.1")
    .option("--port <port>", "HTTP/WebSocket port (0: a free one)", "8787")
    .option("--state <dir>", "directory for on-disk state", ".mortarmq/state")
    .option("--bridge-port <port>", "MortarMQ v0 TCP bridge port (0: a free one)", "7070")
    .option("--no-bridge-port", "do not start the MortarMQ v0 TCP bridge")
    .option("--nats-port <port>", "NATS TCP bridge port (0: a free one)", "4222")
    .option("--no-nats-port", "do not start the NATS TCP bridge")
    .option("--var <NAME=value>", "set a Worker var (repeatable), e.g. --var CORS_ORIGINS=https://app.example", collect, [])
    .option("--auth-tokens <list>", 'require tokens: comma-separated "token:tenant" pairs (same as --var AUTH_TOKENS=<list>)')
    .option("--allow-loopback-push", "allow push endpoints on this machine also when tokens are required (always allowed on an open broker)")
    .option("--reap-every <seconds>", "remove the files of objects that hold nothing from the state directory this often (0: only at start)", "60")
    .option("--verbose", "log one line per HTTP request")
    .action(async (opts: DevOptions) => {
      let vars: Record<string, string>;
      try {
        // push endpoints on this machine: on an open broker, or with --allow-loopback-push (docs/push.md)
        vars = devPushVars(devVars(opts.var, opts.authTokens), opts.allowLoopbackPush === true);
        // the Host names it answers to: loopback, the --host address, names asked for (DNS rebinding; docs/operations.md)
        vars.ALLOWED_HOSTS = devAllowedHosts(opts.host, vars.ALLOWED_HOSTS, machineNames());
        // the auth line below says whether it runs open: the Worker does not log it again on its first request
        vars.AUTH_MODE_ANNOUNCED ??= "1";
      } catch (e) {
        throw usageError((e as Error).message, DEV_HELP); // reported by main()
      }
      let port: number, bridgePort: number | undefined, natsPort: number | undefined, reapEverySeconds: number;
      try {
        port = parseIntOption("--port", opts.port, 0, 65535);
        reapEverySeconds = parseIntOption("--reap-every", opts.reapEvery, 0, 86_400);
        bridgePort = opts.bridgePort ? parseIntOption("--bridge-port", opts.bridgePort, 0, 65535) : undefined;
        natsPort = opts.natsPort ? parseIntOption("--nats-port", opts.natsPort, 0, 65535) : undefined;
      } catch (e) {
        throw usageError((e as Error).message, DEV_HELP); // this command's help, not `mortarmq --help`
      }
      const [{ startEmbeddedBroker }, { PortInUseError }, { StateDirInUseError }, { PACKAGE_ROOT }, { running }] = await Promise.all([
        import("../local/embedded"), import("../local/ports"), import("../local/state-lock"), import("../local/root"), import("../local/process-tree"),
      ]);
      let broker: Awaited<ReturnType<typeof startEmbeddedBroker>>;
      try {
        broker = await startEmbeddedBroker({
          root: PACKAGE_ROOT, host: opts.host, port, stateDir: opts.state, vars, bridgePort, natsPort,
          verbose: opts.verbose === true, readyTimeoutMs: 60_000, reapEverySeconds,
          onBridgeError: (kind, e) => console.error(`mortarmq: ${kind === "mortar" ? "MortarMQ v0" : "NATS"} bridge: ${e.message}`),
        });
      } catch (e) {
        if (e instanceof PortInUseError) throw portInUse(e);
        if (e instanceof StateDirInUseError) throw stateDirInUse(e);
        throw e;
      }
      if (broker.stoppedOrphan !== undefined) {
        console.warn(`mortarmq: the previous broker on ${broker.stateDir} was killed and left its workerd (pid ${broker.stoppedOrphan}) running; stopped it`);
      }
      console.log(`mortarmq: broker      ${broker.url}  (state: ${broker.stateDir})`);
      console.log(`mortarmq: health      ${broker.url}/healthz`);
      console.log(`mortarmq: NATS/WS     ${broker.url.replace(/^http/, "ws")}/nats`);
      console.log(`mortarmq: console     ${broker.url}/console`);
      for (const s of broker.bridges) console.log(`mortarmq: ${s.line}`);
      console.log(authLine(broker.auth));
      let stopping = false;
      const stop = async (code: number) => {
        if (stopping) return;
        stopping = true;
        clearInterval(health);
        await broker.stop();
        console.log(`mortarmq: stopped${code === 0 ? "" : " (status 1)"}`);
        process.exit(code);
      };
      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => void stop(0));
      if (process.send) {
        const ready: DevReadyMessage = {
          type: "mortarmq-dev-ready", url: broker.url, port: broker.port, stateDir: broker.stateDir, auth: broker.auth,
          bridges: Object.fromEntries(broker.bridges.map((b) => [b.kind, b.tunnel.port])), runtimePid: broker.runtimePid,
        };
        process.send(ready);
        process.once("disconnect", () => void stop(0)); // the process that started this one is gone
      }
      const watch = new HealthWatch(Date.now());
      const health = setInterval(() => {
        if (stopping) return;
        if (broker.runtimePid !== undefined && !running(broker.runtimePid)) {
          console.error(`mortarmq: workerd (pid ${broker.runtimePid}) exited; stopping`);
          void stop(1);
          return;
        }
        void fetch(`${broker.loopbackUrl}/healthz`, { signal: AbortSignal.timeout(HEALTH_INTERVAL_MS) }).then(
          (r) => r.ok, () => false,
        ).then((ok) => {
          if (stopping || !watch.observe(ok, Date.now())) return;
          console.error(`mortarmq: the broker at ${broker.url} has not answered /healthz for ${Math.round(watch.silentFor(Date.now()) / 1000)} s `
            + "(workerd hangs); stopping");
          void stop(1);
        });
      }, HEALTH_INTERVAL_MS);
    });
}
