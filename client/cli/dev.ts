/**
 * `mortarmq dev`: the local broker (what `npm start` runs). Starts
 * `wrangler dev` with on-disk state and, next to it, the TCP bridges for
 * MortarMQ v0 (default port 7070) and NATS (default port 4222); prints one
 * line per listening address and the auth mode (open or tokens); Ctrl-C
 * shuts everything down. If wrangler exits, or /healthz stops answering for
 * HEALTH_DEAD_AFTER_MS (probed every HEALTH_INTERVAL_MS), it says so,
 * stops the bridges and exits with status 1. Bridge connection failures
 * (e.g. the broker is down) are logged to stderr.
 *
 * Worker vars (wrangler.toml `[vars]`: AUTH_TOKENS, CORS_ORIGINS, …) are set
 * with `--var NAME=value` (repeatable) or the `--auth-tokens <list>` shortcut.
 */
import type { Command } from "commander";
import { HEALTH_DEAD_AFTER_MS, HEALTH_INTERVAL_MS, HealthWatch } from "../local/health";
import { usageError } from "./errors";
import { parseIntOption } from "./parse";

interface DevOptions {
  host: string;
  port: string;
  state: string;
  bridgePort: string | false;
  natsPort: string | false;
  var: string[];
  authTokens?: string;
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

const collect = (value: string, previous: string[]) => [...previous, value];

/** Registers the `dev` command on `program`. */
export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("run the broker locally (wrangler dev, on-disk state, no account needed) with its TCP bridges")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "HTTP/WebSocket port", "8787")
    .option("--state <dir>", "directory for on-disk state", ".mortarmq/state")
    .option("--bridge-port <port>", "MortarMQ v0 TCP bridge port", "7070")
    .option("--no-bridge-port", "do not start the MortarMQ v0 TCP bridge")
    .option("--nats-port <port>", "NATS TCP bridge port", "4222")
    .option("--no-nats-port", "do not start the NATS TCP bridge")
    .option("--var <NAME=value>", "set a Worker var (repeatable), e.g. --var CORS_ORIGINS=https://app.example", collect, [])
    .option("--auth-tokens <list>", 'require tokens: comma-separated "token:tenant" pairs (same as --var AUTH_TOKENS=<list>)')
    .action(async (opts: DevOptions) => {
      let vars: Record<string, string>;
      try {
        // push endpoints on this machine (http://127.0.0.1:…) are allowed locally; `--var PUSH_ALLOW_LOOPBACK=0` turns it off (docs/push.md)
        vars = { PUSH_ALLOW_LOOPBACK: "1", ...devVars(opts.var, opts.authTokens) };
      } catch (e) {
        throw usageError((e as Error).message, "see `mortarmq dev --help`"); // reported by main(), like a bad --port
      }
      const port = parseIntOption("--port", opts.port, 0, 65535);
      const bridgePort = opts.bridgePort ? parseIntOption("--bridge-port", opts.bridgePort, 0, 65535) : undefined;
      const natsPort = opts.natsPort ? parseIntOption("--nats-port", opts.natsPort, 0, 65535) : undefined;
      const [{ startLocalBroker }, { startBridges }] = await Promise.all([import("../local/broker"), import("../bridge/bridges")]);
      const broker = await startLocalBroker({
        host: opts.host,
        port,
        stateDir: opts.state,
        vars,
        inheritLogs: true,
      });
      const { started, failed } = await startBridges({
        url: broker.url,
        mortar: bridgePort !== undefined ? { host: opts.host, port: bridgePort } : undefined,
        nats: natsPort !== undefined ? { host: opts.host, port: natsPort } : undefined,
        onConnectionError: (kind, e) => console.error(`mortarmq: ${kind === "mortar" ? "MortarMQ v0" : "NATS"} bridge: ${e.message}`),
      });
      console.log(`mortarmq: broker      http://${opts.host}:${broker.port}  (state: ${broker.stateDir})`);
      console.log(`mortarmq: health      http://${opts.host}:${broker.port}/healthz`);
      console.log(`mortarmq: NATS/WS     ws://${opts.host}:${broker.port}/nats`);
      for (const s of started) console.log(`mortarmq: ${s.line}`);
      for (const f of failed) console.warn(`mortarmq: ${f.line}`);
      console.log(authLine(broker.auth));
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        await Promise.all(started.map((s) => s.tunnel.close()));
        await broker.stop();
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      const watch = new HealthWatch(Date.now());
      const health = setInterval(() => {
        void fetch(`${broker.url}/healthz`, { signal: AbortSignal.timeout(HEALTH_INTERVAL_MS) }).then(
          (r) => r.ok, () => false,
        ).then(async (ok) => {
          if (stopping || !watch.observe(ok, Date.now())) return;
          console.error(`mortarmq: the broker at ${broker.url} has not answered /healthz for ${Math.round(watch.silentFor(Date.now()) / 1000)} s `
            + "(wrangler or workerd died or hangs); stopping");
          stopping = true;
          clearInterval(health);
          await Promise.all(started.map((s) => s.tunnel.close()));
          await broker.stop();
          process.exit(1);
        });
      }, HEALTH_INTERVAL_MS);
      health.unref();
      const code = await broker.exited;
      clearInterval(health);
      if (!stopping) console.error(`mortarmq: wrangler dev exited (${code === null ? "killed by a signal" : `code ${code}`}); stopping the bridges`);
      await Promise.all(started.map((s) => s.tunnel.close()));
      if (!stopping) process.exitCode = 1;
    });
}
