/** Types of client/scripts/build-swap.js (making a new build current in a build cache; see that file). */

/**
 * Writes `manifest` as `cacheDir/current.json` atomically (its `build` field
 * names the new `build-*` directory) and deletes builds replaced more than
 * `keepOldMs` ms ago.
 */
export declare function makeCurrent(cacheDir: string, manifest: { build: string }, keepOldMs: number): void;
