// Making a new build current in a build cache (plain JS: the CLI start-up
// cache, client/scripts/cli-cache.js, uses it before any TypeScript loader; the
// Worker bundle cache, client/local/worker-build.ts, too). A cache directory
// holds `build-*` directories and `current.json`, whose `build` field names
// the current one. A new build is made current by renaming a fully written
// `current.json` over the old one, so a concurrent reader never sees half a
// build; a replaced build is deleted once it has not been current for
// `keepOldMs` (a reader that read the old `current.json` may still load it).
import { readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Writes `manifest` (which names the new build in its `build` field) as
 * `cacheDir/current.json`, atomically, and removes the builds replaced more
 * than `keepOldMs` ago.
 * @param {string} cacheDir
 * @param {{ build: string }} manifest
 * @param {number} keepOldMs
 */
export function makeCurrent(cacheDir, manifest, keepOldMs) {
  const tmp = join(cacheDir, `current.json.${process.pid}`);
  writeFileSync(tmp, JSON.stringify(manifest));
  markReplaced(cacheDir);
  renameSync(tmp, join(cacheDir, "current.json"));
  removeOldBuilds(cacheDir, manifest.build, keepOldMs);
}

/** Sets the mtime of the build that is current now to the time it stops being current. */
function markReplaced(cacheDir) {
  try {
    const old = JSON.parse(readFileSync(join(cacheDir, "current.json"), "utf8")).build;
    const now = new Date();
    utimesSync(join(cacheDir, old), now, now);
  } catch {
    /* no current build yet */
  }
}

/** Deletes builds other than `keep` that were replaced more than `keepOldMs` ago (their mtime, see markReplaced). */
function removeOldBuilds(cacheDir, keep, keepOldMs) {
  for (const entry of readdirSync(cacheDir)) {
    if (!entry.startsWith("build-") || entry === keep) continue;
    const dir = join(cacheDir, entry);
    try {
      if (Date.now() - statSync(dir).mtimeMs > keepOldMs) rmSync(dir, { recursive: true, force: true });
    } catch {
      /* removed by a concurrent run */
    }
  }
}
