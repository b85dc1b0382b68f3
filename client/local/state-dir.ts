/**
 * The local broker's state directory (`mortarmq dev --state <dir>`): made
 * if missing and checked writable before anything starts, so an impossible
 * or unwritable path is one clear error at once. Node 20's
 * `mkdirSync(dir, { recursive: true })` is not used: on some paths that
 * can never exist (`/proc/nope`) it loops forever instead of throwing.
 */
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** The state directory cannot be used; the message names the path and why (`state directory /x: cannot create /x: permission denied`). */
export class StateDirError extends Error {
  constructor(readonly stateDir: string, readonly reason: string) {
    super(`state directory ${stateDir}: ${reason}`);
    this.name = "StateDirError";
  }
}

/** The reason in a Node fs error's message (`ENOENT: no such file or directory, mkdir '/x'` → `no such file or directory`). */
function reasonOf(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return /^[A-Z0-9_]+: ([^,]+)/.exec(err.message ?? "")?.[1] ?? err.code ?? String(e);
}

/**
 * Makes `dir` (an absolute path) and its missing parents, one level at a
 * time, then writes and removes a probe file in it.
 * @throws StateDirError when a level cannot be created, a part of the path
 *   is not a directory, or the directory cannot be written
 */
export function ensureStateDir(dir: string): void {
  const missing: string[] = [];
  for (let p = dir; ; p = dirname(p)) {
    try {
      if (!statSync(p).isDirectory()) throw new StateDirError(dir, `${p} is not a directory`);
      break;
    } catch (e) {
      if (e instanceof StateDirError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      // ENOTDIR: a part of the path above is a file (found as the walk goes up)
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(p) === p) throw new StateDirError(dir, `cannot read ${p}: ${reasonOf(e)}`);
      missing.unshift(p);
    }
  }
  for (const p of missing) {
    try {
      mkdirSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw new StateDirError(dir, `cannot create ${p}: ${reasonOf(e)}`);
    }
  }
  const probe = join(dir, `.write-test-${process.pid}`);
  try {
    writeFileSync(probe, "");
  } catch (e) {
    throw new StateDirError(dir, `cannot write in it: ${reasonOf(e)}`);
  }
  rmSync(probe, { force: true });
}
