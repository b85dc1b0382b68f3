/**
 * The floors of docs/architecture.md, enforced: every relative import of a
 * source file resolves into a room its floor may use.
 *
 *   wire/    → wire/ only (plus npm packages that run everywhere: zod)
 *   objects/ → objects/, wire/
 *   worker/  → worker/, objects/, wire/
 *   client/  → client/, wire/
 *   console/ → console/, wire/ (the web console: a browser page speaking the
 *              broker's HTTP APIs, so it links none of the broker and none of
 *              the Node client; docs/console.md)
 *
 * Also: no platform module (`cloudflare:*`, `node:*`) in wire/ or console/,
 * and no `cloudflare:*` module in client/.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const ALLOWED: Record<string, readonly string[]> = {
  wire: ["wire"],
  objects: ["objects", "wire"],
  worker: ["worker", "objects", "wire"],
  client: ["client", "wire"],
  console: ["console", "wire"],
};

/** Import specifiers of a TypeScript/JavaScript source: static, type-only, re-exports, dynamic and `import("…")` types. */
export function importSpecifiers(source: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[^\w$.])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']|(?:^|[^\w$.])import\s*\(\s*["']([^"']+)["']\s*\)/gm;
  for (const m of source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "").matchAll(re)) out.push((m[1] ?? m[2])!);
  return out;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (/\.(ts|tsx|js|mjs)$/.test(name) && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** Every import that leaves its floor, as `file: specifier` lines. */
function violations(): string[] {
  const bad: string[] = [];
  for (const room of Object.keys(ALLOWED)) {
    for (const file of sources(join(PACKAGE_ROOT, room))) {
      for (const spec of importSpecifiers(readFileSync(file, "utf8"))) {
        const rel = relative(PACKAGE_ROOT, file);
        if (spec.startsWith(".")) {
          const target = relative(PACKAGE_ROOT, resolve(dirname(file), spec)).split(sep)[0]!;
          if (!ALLOWED[room]!.includes(target)) bad.push(`${rel}: ${spec}`);
        } else if ((room === "wire" || room === "console") && /^(node|cloudflare):/.test(spec)) {
          bad.push(`${rel}: ${spec}`);
        } else if (room === "client" && spec.startsWith("cloudflare:")) {
          bad.push(`${rel}: ${spec}`);
        }
      }
    }
  }
  return bad;
}

describe("floors", () => {
  it("the import scanner sees every form of import", () => {
    const src = [
      'import { a } from "../../worker/a";',
      'import type { B } from "../worker/b";',
      'export { c } from "./c";',
      'export * from "./d";',
      'const e = await import("../e");',
      'type F = import("../f").F;',
      'import "./g";',
      '// import { h } from "../h";',
      "/* import { i } from \"../i\"; */",
    ].join("\n");
    expect(importSpecifiers(src)).toEqual(["../../worker/a", "../worker/b", "./c", "./d", "../e", "../f", "./g"]);
  });

  it("no file imports from a higher floor (objects/ and wire/ never import worker/, wire/ never imports objects/, client/ and console/ only wire/)", () => {
    expect(violations()).toEqual([]);
  });
});

/** The one module that may touch a Durable Object's storage alarm (docs/architecture.md "The alarm scheduler"). */
const ALARM_OWNER = "objects/shared/scheduler.ts";

/** Calls of the storage alarm API in `source` (comments ignored), as `name(` strings. */
export function alarmCalls(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  return [...code.matchAll(/\b(setAlarm|deleteAlarm|getAlarm)\s*\(/g)].map((m) => `${m[1]}(`);
}

describe("one owner of the alarm", () => {
  it("the scanner sees alarm calls in code, not in comments", () => {
    const src = ["await this.ctx.storage.setAlarm(at);", "void storage.deleteAlarm ();", "// storage.getAlarm()", "/* setAlarm(1) */ x.getAlarm()"].join("\n");
    expect(alarmCalls(src)).toEqual(["setAlarm(", "deleteAlarm(", "getAlarm("]);
  });

  it("no source file but the scheduler calls setAlarm, deleteAlarm or getAlarm", () => {
    const bad: string[] = [];
    for (const room of ["objects", "worker", "wire"]) {
      for (const file of sources(join(PACKAGE_ROOT, room))) {
        const rel = relative(PACKAGE_ROOT, file).split(sep).join("/");
        if (rel === ALARM_OWNER) continue;
        for (const call of alarmCalls(readFileSync(file, "utf8"))) bad.push(`${rel}: ${call}`);
      }
    }
    expect(bad).toEqual([]);
    expect(alarmCalls(readFileSync(join(PACKAGE_ROOT, ALARM_OWNER), "utf8")).length).toBeGreaterThan(0);
  });
});
