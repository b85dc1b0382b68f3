/**
 * `mortarmq dev`: the local broker (what `npm start` runs). Starts
 * `wrangler dev` with on-disk state, then prints one line per listening
 * address; Ctrl-C shuts everything down.
 */
import type { Command } from "commander";
import { startLocalBroker } from "../local/broker";

/** Registers the `dev` command on `program`. */
export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("run the broker locally (wrangler dev, on-disk state, no account needed)")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "HTTP/WebSocket port", "8787")
    .option("--state <dir>", "directory for on-disk state", ".mortarmq/state")
    .action(async (opts: { host: string; port: string; state: string }) => {
      const broker = await startLocalBroker({
        host: opts.host,
        port: Number(opts.port),
        stateDir: opts.state,
        inheritLogs: true,
      });
      console.log(`mortarmq: broker   http://${opts.host}:${broker.port}  (state: ${broker.stateDir})`);
      console.log(`mortarmq: health   http://${opts.host}:${broker.port}/healthz`);
      const stop = async () => {
        await broker.stop();
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await broker.exited;
      process.exitCode = 1;
    });
}
