/** Types of client/scripts/cli-cache.js (the CLI start-up cache; see that file). */

/** Repository root. */
export declare const ROOT: string;

/**
 * The CLI's `main(argv)` from the cached bundle (built first when a source
 * changed), or null when the cache cannot be used or MORTARMQ_CLI_CACHE=0.
 */
export declare function loadCachedCli(opts?: { root?: string; cacheDir?: string }): Promise<((argv: string[]) => Promise<void>) | null>;

/** The current build's directory if every input recorded in `cacheDir/current.json` is unchanged, else null. */
export declare function currentBuild(cacheDir: string, esbuildVersion: string): string | null;

/** Format of the cache's manifest; a build of another format is rebuilt. */
export declare const FORMAT: number;
