/**
 * A local nats-server for comparison benchmarks (Debian package:
 * `apt-get install nats-server`). Returns undefined when the binary is
 * missing, so a suite can report its NATS row as skipped.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { connect } from "nats";
import { freePort } from "../client/local/broker";

/** A running nats-server. */
export interface NatsServer {
  port: number;
  version: string;
  proc: ChildProcess;
  /** Stops the server and waits for it to exit. */
  stop(): Promise<void>;
}

/** Finds the nats-server binary on PATH or in the Debian location. */
export function findNatsServer(): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/usr/bin"];
  return dirs.map((d) => join(d, "nats-server")).find((p) => existsSync(p));
}

/**
 * Starts nats-server on a free port (with JetStream and file storage in
 * `jetStreamDir` when given) and waits until a client can connect.
 * Returns undefined when nats-server is not installed.
 */
export async function startNatsServer(opts: { jetStreamDir?: string } = {}): Promise<NatsServer | undefined> {
  const bin = findNatsServer();
  if (!bin) return undefined;
  const port = await freePort();
  const args = ["-a", "127.0.0.1", "-p", String(port)];
  if (opts.jetStreamDir) args.push("-js", "-sd", opts.jetStreamDir);
  const proc = spawn(bin, args, { stdio: "ignore" });
  const version = await new Promise<string>((resolve) => {
    const v = spawn(bin, ["--version"]);
    let out = "";
    v.stdout.on("data", (d) => (out += d));
    v.on("close", () => resolve(out.trim()));
  });
  for (let i = 0; i < 100; i++) {
    try {
      const nc = await connect({ servers: `127.0.0.1:${port}`, reconnect: false });
      await nc.close();
      const exited = new Promise<void>((r) => proc.once("exit", () => r()));
      return { port, version, proc, stop: () => (proc.kill(), exited) };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  proc.kill();
  throw new Error("nats-server did not start");
}
