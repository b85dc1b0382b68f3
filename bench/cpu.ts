/**
 * CPU time of a broker's processes (Linux /proc), for benchmarks on a shared
 * machine: the CPU a request costs barely moves with other load, where its
 * wall-clock rate does. Undefined where /proc is not available.
 */
import { readFileSync } from "node:fs";
import { processTree } from "../client/local/process-tree";

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux). */
const TICKS_PER_S = 100;

/** User + system CPU time of one process, ms; 0 once it is gone; undefined without /proc. */
function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" && readableProc() ? 0 : undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // after "pid (comm) "
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S; // utime, stime
}

const readableProc = () => {
  try {
    readFileSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
};

/** User + system CPU time of `roots` and all their descendants, ms; undefined without /proc. */
export function treeCpuMs(roots: number[]): number | undefined {
  let total = 0;
  for (const pid of roots.flatMap((r) => processTree(r))) {
    const ms = processCpuMs(pid);
    if (ms === undefined) return undefined;
    total += ms;
  }
  return total;
}

/**
 * CPU time of `root` alone and of its descendants (for `mortarmq dev`: the
 * launcher with its TCP bridges, and workerd), ms; undefined without /proc.
 */
export function splitCpuMs(root: number): { self: number; children: number } | undefined {
  const self = processCpuMs(root);
  const all = treeCpuMs([root]);
  return self === undefined || all === undefined ? undefined : { self, children: all - self };
}

/** CPU time this process has used (user + system), ms. */
export function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
