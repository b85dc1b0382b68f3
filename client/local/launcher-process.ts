/** A local broker's launcher as a child Node process (`mortarmq dev`, or the earlier `wrangler dev`): its output kept for errors, stopping it. */
import { spawn, type ChildProcess } from "node:child_process";
import { killTree } from "./process-tree";
import { PACKAGE_ROOT } from "./root";

/** A spawned launcher. */
export interface LauncherProcess {
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** The last ~8,000 characters it wrote (stdout and stderr). */
  log(): string;
}

/**
 * Runs `node <args>` in the repository root.
 * @param opts.ipc open an IPC channel (`mortarmq dev` reports readiness over it)
 * @param opts.env environment on top of this process's
 * @param opts.inheritLogs also copy its output to this process's stdout / stderr
 */
export function spawnLauncher(args: string[], opts: { ipc?: boolean; env?: Record<string, string>; inheritLogs?: boolean }): LauncherProcess {
  const child = spawn(process.execPath, args, {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, ...opts.env },
    stdio: opts.ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (d: Buffer) => (log = (log + d).slice(-8000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  if (opts.inheritLogs) {
    child.stdout!.pipe(process.stdout);
    child.stderr!.pipe(process.stderr);
  }
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)));
  return { child, exited, log: () => log };
}

/** Stops `child` with SIGINT, its whole process tree with SIGKILL after `graceMs`; resolves on exit. */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGINT");
  const t = setTimeout(() => child.pid !== undefined && killTree(child.pid), graceMs);
  await exited;
  clearTimeout(t);
}
