/**
 * Writes wire/mortar/codec.gen.ts (size, encode and decode of every
 * MortarMQ v0 layout) from the field tables in wire/mortar/layouts.ts.
 * Run with `npm run gen:codec` after changing a table.
 */
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { renderCodecModule } from "../../wire/mortar/codegen";

const target = resolve(dirname(fileURLToPath(import.meta.url)), "../../wire/mortar/codec.gen.ts");
writeFileSync(target, renderCodecModule());
console.log(`wrote ${target}`);
