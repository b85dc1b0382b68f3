/**
 * `mortarmq dev`: the local broker (what `npm start` runs). Starts
 * `wrangler dev` with on-disk state and, next to it, the TCP bridges for
 * MortarMQ v0 (default port 7070) and NATS (default port 4222); prints one
 * line per listening address; Ctrl-C shuts everything down.
 */
import type { Command } from "commander";
import { startBridges } from "../bridge/bridges";
import { startLocalBroker } from "../local/broker";

interface DevOptions {
  host: string;
  port: string;
  state: string;
  bridgePort: string | false;
  natsPort: string | false;
}

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
    .action(async (opts: DevOptions) => {
      const broker = await startLocalBroker({
        host: opts.host,
        port: Number(opts.port),
        stateDir: opts.state,
        inheritLogs: true,
      });
      const { started, failed } = await startBridges({
        url: broker.url,
        mortar: opts.bridgePort ? { host: opts.host, port: Number(opts.bridgePort) } : undefined,
        nats: opts.natsPort ? { host: opts.host, port: Number(opts.natsPort) } : undefined,
      });
      console.log(`mortarmq: broker      http://${opts.host}:${broker.port}  (state: ${broker.stateDir})`);
      console.log(`mortarmq: health      http://${opts.host}:${broker.port}/healthz`);
      console.log(`mortarmq: NATS/WS     ws://${opts.host}:${broker.port}/nats`);
      for (const s of started) console.log(`mortarmq: ${s.line}`);
      for (const f of failed) console.warn(`mortarmq: ${f.line}`);
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
      await broker.exited;
      await Promise.all(started.map((s) => s.tunnel.close()));
      if (!stopping) process.exitCode = 1;
    });
}
