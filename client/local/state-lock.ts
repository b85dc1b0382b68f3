/**
 * One local broker per state directory. Two brokers on the same directory
 * each run their own copy of every Durable Object over the same SQLite
 * files: their in-memory state diverges (one assigns a sequence the other
 * already wrote: `UNIQUE constraint failed`), so the second start is refused
 * instead.
 *
 * The lock is the file `<stateDir>/broker.pid`: the owning process id on its
 * first line and, once known, `runtime <pid>` — the workerd process that
 * owner started — on the second. A lock whose owner no longer runs (a killed
 * `npm start`) is taken over; if its workerd is still running (a SIGKILL of
 * the Node process leaves it behind, still serving the old port over the same
 * files) it is killed first, as a crash would have — every acknowledged
 * write is already on disk.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processCommand, running } from "./process-tree";

/** Name of the lock file inside the state directory. */
export const STATE_LOCK_FILE = "broker.pid";

/** Command name of the runtime process recorded in the lock. */
const RUNTIME_COMMAND = "workerd";

/** The state directory is held by another running broker. */
export class StateDirInUseError extends Error {
  override readonly name = "StateDirInUseError";

  /** @param lockPath the lock file, named so a user can delete it if no broker runs */
  constructor(readonly stateDir: string, readonly owner: number, readonly lockPath: string) {
    super(`state directory ${stateDir} is in use by another broker (pid ${owner}); stop it, or choose another --state `
      + `(if no broker runs, delete ${lockPath})`);
  }
}

/** A state directory held by this process. */
export interface StateLock {
  /** Gives the directory back (idempotent; removes the lock only while it is still this process's). */
  release(): void;
  /** Records the pid of the workerd this broker started, so a start after this process was killed can stop it. */
  recordRuntime(pid: number): void;
  /** The pid of a previous broker's left-over workerd that was killed to take the directory over, if any. */
  stoppedOrphan?: number;
}

/** Owner pid and recorded runtime pid of a lock file's text. */
export function parseLock(text: string): { owner: number; runtime?: number } {
  const [first = "", second = ""] = text.split("\n");
  const runtime = /^runtime (\d+)$/.exec(second.trim());
  return { owner: Number.parseInt(first, 10), ...(runtime ? { runtime: Number(runtime[1]) } : {}) };
}

/** SIGKILLs `pid` if it still runs as a workerd; resolves with whether it did, once the process is gone (at most ~5 s). */
async function killOrphanRuntime(pid: number): Promise<boolean> {
  if (processCommand(pid) !== RUNTIME_COMMAND) return false; // gone, or the pid now belongs to something else
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    return false;
  }
  for (let i = 0; i < 100 && processCommand(pid) === RUNTIME_COMMAND; i++) await new Promise((r) => setTimeout(r, 50));
  return true;
}

/**
 * Takes the state directory `stateDir` (which must exist) for this process.
 * @throws StateDirInUseError naming the directory and the other broker's
 *   pid when a running process holds it.
 */
export async function lockStateDir(stateDir: string): Promise<StateLock> {
  const path = join(stateDir, STATE_LOCK_FILE);
  const mine = String(process.pid);
  let stoppedOrphan: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${mine}\n`, { flag: "wx" });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      const { owner, runtime } = parseLock(readFileSync(path, "utf8"));
      if (Number.isInteger(owner) && owner > 0 && running(owner)) {
        throw new StateDirInUseError(stateDir, owner, path);
      }
      if (runtime !== undefined && (await killOrphanRuntime(runtime))) stoppedOrphan = runtime;
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  const ours = () => {
    try {
      return parseLock(readFileSync(path, "utf8")).owner === process.pid;
    } catch {
      return false;
    }
  };
  let released = false;
  return {
    stoppedOrphan,
    recordRuntime(pid) {
      if (!released && ours()) writeFileSync(path, `${mine}\nruntime ${pid}\n`);
    },
    release() {
      if (released) return;
      released = true;
      if (ours()) rmSync(path, { force: true });
    },
  };
}
