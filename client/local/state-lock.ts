/**
 * One local broker per state directory. Two `wrangler dev` processes on the
 * same `--persist-to` directory each run their own copy of every Durable
 * Object over the same SQLite files: their in-memory state diverges (one
 * assigns a sequence the other already wrote: `UNIQUE constraint failed`),
 * so the second start is refused instead.
 *
 * The lock is the file `<stateDir>/broker.pid` holding the owning process id;
 * a lock whose process no longer runs (a killed `npm start`) is taken over.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Name of the lock file inside the state directory. */
export const STATE_LOCK_FILE = "broker.pid";

/** True when a process with this id exists (signal 0 checks without signalling). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes the state directory `stateDir` (which must exist) for this process
 * and returns the function that gives it back (idempotent; it removes the
 * lock only while it is still this process's).
 * @throws Error naming the directory and the other broker's pid when a
 *   running process holds it.
 */
export function lockStateDir(stateDir: string): () => void {
  const path = join(stateDir, STATE_LOCK_FILE);
  const mine = String(process.pid);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, mine, { flag: "wx" });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      const owner = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (Number.isInteger(owner) && owner > 0 && running(owner)) {
        throw new Error(`state directory ${stateDir} is in use by another broker (pid ${owner}); stop it, or choose another --state `
          + `(if no broker runs, delete ${path})`);
      }
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    try {
      if (readFileSync(path, "utf8") === mine) rmSync(path, { force: true });
    } catch {
      /* already gone */
    }
  };
}
