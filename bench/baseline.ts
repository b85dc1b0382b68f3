/**
 * A second broker built from another revision of this repository, so a
 * suite can measure before and after in one run on the same machine
 * (`npm run bench -- <suite> --baseline <rev>`). The revision's files are
 * extracted with `git archive` into a temporary directory that shares this
 * checkout's node_modules; its own launcher (client/local/broker.ts of that
 * revision) starts it. Nothing in the repository or its worktrees changes.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LocalBroker, LocalBrokerOptions } from "../client/local/broker";

/** A started baseline broker and how to clean it up. */
export interface Baseline {
  /** The revision as given, and the commit it names. */
  rev: string;
  commit: string;
  broker: LocalBroker;
  /** Stops the broker and removes the extracted tree and its state. */
  dispose(): Promise<void>;
}

/** Extracts `rev` of the repository at `root` and starts its broker. Throws if git or the broker fails. */
export async function startBaseline(root: string, rev: string): Promise<Baseline> {
  const commit = execFileSync("git", ["-C", root, "rev-parse", "--verify", `${rev}^{commit}`], { encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-baseline-"));
  try {
    execFileSync("sh", ["-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, root, commit, dir]);
    symlinkSync(resolve(root, "node_modules"), join(dir, "node_modules"), "dir");
    const mod = (await import(pathToFileURL(join(dir, "client/local/broker.ts")).href)) as {
      startLocalBroker(o: LocalBrokerOptions): Promise<LocalBroker>;
    };
    const broker = await mod.startLocalBroker({ stateDir: join(dir, ".bench-state"), port: 0 });
    return {
      rev, commit, broker,
      async dispose() {
        await broker.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
