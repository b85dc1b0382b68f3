/**
 * Processes of a local broker: `wrangler dev` runs workerd as child
 * processes, and so does Miniflare in `mortarmq dev`; a SIGKILL to the
 * Node process alone leaves workerd running (holding the port and the
 * state directory).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** `ps -A -o pid=,ppid=,comm=` as rows; null where `ps` is unavailable. */
function processTable(): { pid: number; ppid: number; comm: string }[] | null {
  let table: string;
  try {
    table = execFileSync("ps", ["-A", "-o", "pid=,ppid=,comm="], { encoding: "utf8" });
  } catch {
    return null;
  }
  const rows: { pid: number; ppid: number; comm: string }[] = [];
  for (const line of table.split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (m) rows.push({ pid: Number(m[1]), ppid: Number(m[2]), comm: m[3]!.trim() });
  }
  return rows;
}

/**
 * Pids of `root` and all its descendants, root first, from `ps` (Linux,
 * macOS). Just `[root]` where `ps` is unavailable.
 */
export function processTree(root: number): number[] {
  const rows = processTable();
  if (!rows) return [root];
  const children = new Map<number, number[]>();
  for (const { pid, ppid } of rows) {
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(pid);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

/**
 * The command name of running process `pid` (the executable's base name, as
 * `ps -o comm` shows it, e.g. "workerd"); undefined when no such process runs
 * or `ps` is unavailable.
 */
export function processCommand(pid: number): string | undefined {
  try {
    const comm = execFileSync("ps", ["-o", "comm=", "-p", String(pid)], { encoding: "utf8" }).trim();
    return comm ? comm.split("/").pop() : undefined;
  } catch {
    return undefined; // ps exits 1: no such process
  }
}

/** Direct children of `parent` whose command name is `comm` (e.g. the workerd a Miniflare instance started). */
export function childrenNamed(parent: number, comm: string): number[] {
  return (processTable() ?? []).filter((r) => r.ppid === parent && r.comm.split("/").pop() === comm).map((r) => r.pid);
}

/**
 * True when a process with this id is alive (signal 0 checks without
 * signalling). A zombie — exited, not reaped yet by its parent (e.g. a
 * SIGKILLed launcher whose parent or init is slow to reap) — is not: on
 * Linux its /proc state is `Z`; elsewhere it counts as alive.
 */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

/** Whether /proc says `pid` is a zombie (false where there is no /proc). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z"; // the state follows "(comm) "
  } catch {
    return false;
  }
}

/** Sends SIGKILL to `root` and every descendant (the ones already gone are skipped). */
export function killTree(root: number): void {
  for (const pid of processTree(root)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}
