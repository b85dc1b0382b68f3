/**
 * Killing a local broker for good: `wrangler dev` runs workerd as child
 * processes, and a SIGKILL to wrangler alone leaves them running (holding
 * the port and the state directory).
 */
import { execFileSync } from "node:child_process";

/**
 * Pids of `root` and all its descendants, root first, from `ps -A -o
 * pid=,ppid=` (Linux, macOS). Just `[root]` where `ps` is unavailable.
 */
export function processTree(root: number): number[] {
  let table: string;
  try {
    table = execFileSync("ps", ["-A", "-o", "pid=,ppid="], { encoding: "utf8" });
  } catch {
    return [root];
  }
  const children = new Map<number, number[]>();
  for (const line of table.split("\n")) {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number);
    if (!pid || ppid === undefined || Number.isNaN(ppid)) continue;
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(pid);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
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
