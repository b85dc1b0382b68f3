/**
 * Removes the SQLite files of Durable Objects that hold nothing from the
 * local broker's state directory (`<stateDir>/v3/do/<worker>-<Class>/<id>.sqlite`).
 * workerd creates such a file for every object it starts, even one that
 * never writes (an unauthenticated session, a request to a mailbox that
 * does not exist), and `deleteAll()` leaves a fresh one behind: without
 * this, every such request would leave a file for ever (issue 28 items 2
 * and 4). A removed file is what the object would see anyway: the next
 * start of that object opens a new, empty database.
 *
 * Never the file of a live object: a file is removed only when
 * - workerd is not running (the sweep at start, under the state lock), or
 *   no workerd file descriptor refers to it (read from `/proc/<pid>/fd`,
 *   Linux; elsewhere only the sweep at start runs);
 * - it has no `-wal`, `-shm` or `-journal` next to it (SQLite removes them
 *   when the last connection closes cleanly);
 * - it holds no row in any table or index (./sqlite-empty.ts, which also
 *   keeps a file with a scheduled alarm);
 * - and still after it was renamed aside and workerd's descriptors were read
 *   again: an object that started in between holds the renamed file open,
 *   and it is renamed back; one that starts after the rename opens a new
 *   file under the old name.
 */
import { existsSync } from "node:fs";
import { open, readdir, readlink, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { sqliteHoldsNothing } from "./sqlite-empty";

/** An object's database file name: workerd names it after the object's 64-hex-digit id. */
const OBJECT_FILE_RE = /^[0-9a-f]{64}\.sqlite$/;
/** Suffix of a file renamed aside while it is checked a last time. */
const ASIDE = ".reaping";
/** How long after the rename the descriptors are read again, ms (an open() under way has installed its descriptor). */
const SETTLE_MS = 20;

/** Where the object files are and who may hold them. */
export interface ReapTarget {
  stateDir: string;
  /** workerd's pid, or undefined when workerd is not running (the sweep at start). */
  runtimePid: number | undefined;
}

/** Paths of every object database file under `stateDir` (none when there is no `v3/do`). */
async function objectFiles(stateDir: string): Promise<string[]> {
  const root = join(stateDir, "v3", "do");
  const out: string[] = [];
  let dirs: string[];
  try {
    dirs = await readdir(root);
  } catch {
    return out;
  }
  for (const d of dirs) {
    let names: string[];
    try {
      names = await readdir(join(root, d));
    } catch {
      continue;
    }
    for (const n of names) if (OBJECT_FILE_RE.test(n) || n.endsWith(`.sqlite${ASIDE}`)) out.push(join(root, d, n));
  }
  return out;
}

/** Paths the process `pid` has open (from `/proc/<pid>/fd`); null where that cannot be read. */
export async function openPaths(pid: number): Promise<Set<string> | null> {
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  const paths = new Set<string>();
  await Promise.all(fds.map(async (fd) => {
    try {
      paths.add(await readlink(`/proc/${pid}/fd/${fd}`));
    } catch { /* closed meanwhile */ }
  }));
  return paths;
}

/** True when `path` has no SQLite companion file (a connection is, or was not cleanly, closed). */
function alone(path: string): boolean {
  return !["-wal", "-shm", "-journal"].some((s) => existsSync(path + s));
}

/** True when the database at `path` holds nothing (./sqlite-empty.ts); false when it cannot be read. */
async function holdsNothing(path: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, "r");
  } catch {
    return false;
  }
  try {
    const { size } = await fh.stat();
    return await sqliteHoldsNothing(size, async (offset, length) => {
      const buf = new Uint8Array(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      return buf.subarray(0, bytesRead);
    });
  } finally {
    await fh.close();
  }
}

/** Files found holding data, by path: their size and modification time then (a later sweep skips them while both are unchanged). */
export type HoldingFiles = Map<string, string>;

/** `size:mtime` of `path`, or null when it cannot be read. */
async function version(path: string): Promise<string | null> {
  return stat(path).then((s) => `${s.size}:${s.mtimeMs}`, () => null);
}

/**
 * One sweep (see the module comment). Answers how many files it removed.
 * Errors of single files are skipped (the file stays); with a `runtimePid`
 * whose descriptors cannot be read nothing is removed. `holding` (kept
 * between sweeps) spares reading again the files found holding data that
 * have not changed since.
 */
export async function reapEmptyObjectFiles(target: ReapTarget, holding: HoldingFiles = new Map()): Promise<number> {
  const live = target.runtimePid === undefined ? new Set<string>() : await openPaths(target.runtimePid);
  if (live === null) return 0;
  const aside: string[] = [];
  const files = await objectFiles(target.stateDir);
  const present = new Set(files);
  for (const p of holding.keys()) if (!present.has(p)) holding.delete(p); // gone since (a purge, a tenant deleted)
  for (const path of files) {
    if (path.endsWith(ASIDE)) {
      // left by a sweep that was cut off: back under its name unless the object made a new file since
      if (!existsSync(path.slice(0, -ASIDE.length))) await rename(path, path.slice(0, -ASIDE.length)).catch(() => {});
      continue;
    }
    if (live.has(path) || !alone(path)) continue;
    const v = await version(path);
    if (v === null || holding.get(path) === v) continue;
    if (!(await holdsNothing(path))) {
      holding.set(path, v);
      continue;
    }
    holding.delete(path);
    try {
      await rename(path, path + ASIDE);
      aside.push(path);
    } catch { /* gone or not ours to move */ }
  }
  if (aside.length === 0) return 0;
  let after = new Set<string>();
  if (target.runtimePid !== undefined) {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    after = (await openPaths(target.runtimePid)) ?? new Set(aside.map((p) => p + ASIDE)); // unreadable now: put every one back
  }
  let removed = 0;
  for (const path of aside) {
    const moved = path + ASIDE;
    const keep = after.has(moved) || !alone(moved) || !(await holdsNothing(moved));
    try {
      if (keep) {
        if (!existsSync(path)) await rename(moved, path);
      } else {
        await unlink(moved);
        removed++;
      }
    } catch { /* left for the next sweep */ }
  }
  return removed;
}

/** A running periodic reaper. */
export interface StateReaper {
  /** Files removed so far. */
  readonly removed: number;
  /** Stops it; resolves once a sweep under way has ended. */
  stop(): Promise<void>;
}

/**
 * Sweeps every `intervalMs` (one sweep at a time) while workerd
 * (`runtimePid`) runs; on a platform without `/proc` the sweeps remove
 * nothing. `onError` hears a sweep that failed as a whole.
 */
export function startStateReaper(opts: { stateDir: string; runtimePid: number; intervalMs: number; onError?: (e: Error) => void }): StateReaper {
  let removed = 0;
  const holding: HoldingFiles = new Map();
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const timer = setInterval(() => {
    running = running.then(async () => {
      if (stopped) return;
      try {
        removed += await reapEmptyObjectFiles({ stateDir: opts.stateDir, runtimePid: opts.runtimePid }, holding);
      } catch (e) {
        opts.onError?.(e as Error);
      }
    });
  }, opts.intervalMs);
  timer.unref();
  return {
    get removed() {
      return removed;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
