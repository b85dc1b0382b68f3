/** Where this checkout is. */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Root of this package (holds wrangler.toml and node_modules). The CLI bundle keeps each file's own import.meta.url (client/scripts/cli-cache.js). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
