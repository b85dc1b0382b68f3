/**
 * `mortarmq bridge`: TCP listeners that tunnel each connection over its own
 * WebSocket to a broker (local or deployed), so TCP clients (MortarMQ v0
 * SDKs, NATS clients and the `nats` CLI) can reach it. The broker comes from
 * the global `--url` / MORTARMQ_URL. The global `--token` / MORTARMQ_TOKEN
 * applies to the NATS tunnel only (sent as a bearer token on its upgrades);
 * MortarMQ v0 clients authenticate with their own CONNECT token.
 * Per-connection failures (e.g. the broker is down) are logged to stderr.
 * The tunnels themselves are client/bridge/ (also started by `mortarmq dev`).
 */
import type { Command } from "commander";
import { globals } from "./context";

/** Registers the `bridge` command on `program`. */
export function registerBridge(program: Command): void {
  program
    .command("bridge")
    .description("tunnel TCP connections to a broker over WebSocket (MortarMQ v0 → /v0/mortar, NATS → /nats); "
      + "the global --token is sent as a bearer token on NATS tunnels only — MortarMQ v0 clients authenticate with their CONNECT token")
    .option("--listen <host:port>", "MortarMQ v0 TCP listener", "127.0.0.1:7070")
    .option("--no-listen", "do not start the MortarMQ v0 listener")
    .option("--nats <host:port>", "NATS TCP listener", "127.0.0.1:4222")
    .option("--no-nats", "do not start the NATS listener")
    .action(async (opts: { listen: string | false; nats: string | false }, cmd: Command) => {
      const g = globals(cmd);
      const [{ startBridges }, { parseHostPort }] = await Promise.all([import("../bridge/bridges"), import("../bridge/tunnel")]); // ws: loaded only here (startup)
      const { started, failed } = await startBridges({
        url: g.url,
        mortar: opts.listen ? parseHostPort(opts.listen) : undefined,
        nats: opts.nats ? parseHostPort(opts.nats) : undefined,
        token: g.token,
        onConnectionError: (kind, e) => console.error(`mortarmq: ${kind === "mortar" ? "MortarMQ v0" : "NATS"} bridge: ${e.message}`),
      });
      for (const f of failed) console.error(`mortarmq: ${f.line}`);
      if (started.length === 0) {
        console.error("mortarmq: no bridge is listening");
        process.exitCode = 1;
        return;
      }
      for (const s of started) console.log(`mortarmq: ${s.line}`);
      const stop = async () => {
        await Promise.all(started.map((s) => s.tunnel.close()));
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}
