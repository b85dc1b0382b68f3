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
 *
 * Inside client/, each product is a room of its own (CLIENT_ROOMS):
 *
 *   client/mq9/     → itself, wire/ (the agents' client)
 *   client/sdk/     → itself, wire/ (the MortarMQ v0 client)
 *   client/bridge/  → itself, wire/ (the TCP↔WebSocket tunnels)
 *   client/scripts/ → itself, wire/ (build scripts: console bundle, CLI cache, generated files)
 *   client/local/   → itself, bridge, scripts, wire/ (the dev launcher)
 *   client/cli/     → itself, mq9, sdk, bridge, local, wire/ (the `mortarmq` commands)
 *   client/bin/     → cli, scripts (the package's bin entry): the only importer of cli/
 *   client/python/  → nothing (the Python mq9 client: no TypeScript; it speaks HTTP like any user)
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

/** The rooms inside client/ and what each may import (paths from the package root). */
const CLIENT_ROOMS: Record<string, readonly string[]> = {
  "client/mq9": ["client/mq9", "wire"],
  "client/sdk": ["client/sdk", "wire"],
  "client/bridge": ["client/bridge", "wire"],
  "client/scripts": ["client/scripts", "wire"],
  "client/local": ["client/local", "client/bridge", "client/scripts", "wire"],
  "client/cli": ["client/cli", "client/mq9", "client/sdk", "client/bridge", "client/local", "wire"],
  "client/bin": ["client/bin", "client/cli", "client/scripts"],
  "client/python": ["client/python"],
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

/** The room of a path from the package root: `client/<product>` inside client/, else its top folder. */
function clientRoom(rel: string): string {
  const parts = rel.split(sep);
  return parts[0] === "client" ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** Every relative import inside client/ that leaves what its product may use, as `file: specifier` lines. */
function clientViolations(): string[] {
  const bad: string[] = [];
  for (const file of sources(join(PACKAGE_ROOT, "client"))) {
    const rel = relative(PACKAGE_ROOT, file);
    const allowed = CLIENT_ROOMS[clientRoom(rel)];
    if (!allowed) {
      bad.push(`${rel}: in no room of CLIENT_ROOMS`);
      continue;
    }
    for (const spec of importSpecifiers(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue;
      if (!allowed.includes(clientRoom(relative(PACKAGE_ROOT, resolve(dirname(file), spec))))) bad.push(`${rel}: ${spec}`);
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

describe("client/ products", () => {
  it("each product imports only what its row allows (mq9 and sdk only wire/; nothing but the bin entry imports cli/)", () => {
    expect(clientViolations()).toEqual([]);
  });

  it("every folder of client/ is a room with a row", () => {
    const folders = readdirSync(join(PACKAGE_ROOT, "client")).filter((n) => statSync(join(PACKAGE_ROOT, "client", n)).isDirectory());
    expect(folders.map((n) => `client/${n}`).sort()).toEqual(Object.keys(CLIENT_ROOMS).sort());
  });
});
