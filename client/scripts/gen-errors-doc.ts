/**
 * Writes docs/errors.md from the error registry in wire/mortar/errors.ts.
 * Run with `npm run docs:errors`.
 */
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { renderErrorsMarkdown } from "../../wire/mortar/errors-doc";

const target = resolve(dirname(fileURLToPath(import.meta.url)), "../../docs/errors.md");
writeFileSync(target, renderErrorsMarkdown());
console.log(`wrote ${target}`);
