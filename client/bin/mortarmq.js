#!/usr/bin/env node
// `mortarmq` CLI launcher. The CLI is TypeScript (sharing wire/ with the
// Worker) and needs no build step: it runs from a bundle cached on first use
// (client/scripts/cli-cache.js), or, when that cache cannot be used, straight
// from the sources through tsx.
import { loadCachedCli } from "../scripts/cli-cache.js";

let main = await loadCachedCli();
if (!main) {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../cli/main.ts"));
}
await main(process.argv);
