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

/*
 * Inside objects/ (docs/architecture.md "One layout per object"): a file
 * reaches another Durable Object's folder only through its `stub.ts` (how to
 * reach it), `rpc.ts` (the shapes of its calls) and `config.ts` (its
 * settings), the object's class as a type (`import type { Mailbox } from
 * "../mailbox/Mailbox"`, nothing else from that file), or one of the shared
 * services the architecture page lists.
 */

/** Folders of objects/ that hold one Durable Object kind each (the rule below applies to reaching into them). */
const OBJECT_ROOMS = ["agents", "group", "mailbox", "mailbox-index", "nats", "partition", "registry", "session", "tenants", "usage"];
/** Folders of objects/ that are services used by many objects (no object of their own). */
const SERVICE_ROOMS = ["mq9", "session-base", "shared"];
/** What a file outside an object's folder may import from it, besides its class as a type. */
const PUBLIC_PARTS = ["stub.ts", "rpc.ts", "config.ts"];
/** Modules inside object folders that are shared services (docs/architecture.md lists each). */
const SHARED_SERVICES = [
  "usage/meter.ts", "usage/connection.ts", "usage/catalog.ts", "usage/tally.ts",
  "tenants/auth.ts", "tenants/connection-auth.ts", "tenants/gate.ts", "tenants/permissions.ts",
  "partition/batch.ts", "partition/refusal.ts",
  "session/faults.ts",
  "group/listing.ts",
];
/** Imports that break the object rule today, as `file: specifier`. */
const KNOWN_EXCEPTIONS: string[] = [];

/** Files in objects/ besides store files (`store.ts`, `*-store.ts`) that hold SQL: the shared storage helpers. */
const SQL_HELPERS = ["objects/shared/meta-table.ts", "objects/shared/object-name.ts", "objects/shared/scheduler.ts"];
/** SQL outside a store file today. */
const SQL_EXCEPTIONS: string[] = [];

/** Files of objects/ whose code (comments left out) holds an SQL statement but that are no store file nor a shared storage helper. */
function sqlOutsideStores(): string[] {
  const sql = /\b(SELECT\s+[\w*]|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|UNIQUE\s+INDEX)|ALTER\s+TABLE|DROP\s+TABLE)\b/;
  return sources(join(PACKAGE_ROOT, "objects"))
    .map((f) => relative(PACKAGE_ROOT, f).split(sep).join("/"))
    .filter((f) => !/(^|\/|-)store\.ts$/.test(f) && !SQL_HELPERS.includes(f))
    .filter((f) => sql.test(readFileSync(join(PACKAGE_ROOT, f), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "")));
}

/** An import's specifier, and whether it is type-only with the names it imports (null: not a named import). */
export interface ImportClause {
  spec: string;
  typeOnly: boolean;
  names: string[] | null;
}

/** The static imports and re-exports of a source with their clauses (dynamic imports are not clauses). */
export function importClauses(source: string): ImportClause[] {
  const out: ImportClause[] = [];
  const re = /(?:^|[^\w$.])(?:import|export)\s+(type\s+)?(?:([\w*{}\s,$]+?)\s+from\s+)?["']([^"']+)["']/gm;
  for (const m of source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "").matchAll(re)) {
    const clause = m[2]?.trim() ?? "";
    const named = /^\{([^}]*)\}$/.exec(clause);
    const items = named ? named[1]!.split(",").map((x) => x.trim()).filter((x) => x !== "") : null;
    const typeOnly = m[1] !== undefined || (items !== null && items.length > 0 && items.every((x) => x.startsWith("type ")));
    const names = items ? items.map((x) => x.replace(/^type\s+/, "").split(/\s+as\s+/)[0]!) : null;
    out.push({ spec: m[3]!, typeOnly, names });
  }
  return out;
}

/** Every import in objects/ that reaches into another object's folder other than through its public parts. */
function objectViolations(): string[] {
  const bad: string[] = [];
  const root = join(PACKAGE_ROOT, "objects");
  for (const file of sources(root)) {
    const from = relative(root, file).split(sep);
    if (from.length < 2) continue; // objects/env.ts: the bindings' types name every class
    for (const c of importClauses(readFileSync(file, "utf8"))) {
      if (!c.spec.startsWith(".")) continue;
      const to = relative(root, resolve(dirname(file), c.spec)).split(sep);
      if (to.length < 2 || to[0] === from[0] || !OBJECT_ROOMS.includes(to[0]!)) continue;
      const target = `${to.slice(1).join("/").replace(/\.(ts|js)$/, "")}.ts`;
      const className = /^[A-Z]\w*\.ts$/.test(target) ? target.slice(0, -3) : null;
      if (PUBLIC_PARTS.includes(target) || SHARED_SERVICES.includes(`${to[0]}/${target}`)) continue;
      if (className !== null && c.typeOnly && c.names?.every((n) => n === className)) continue;
      bad.push(`${relative(PACKAGE_ROOT, file)}: ${c.spec}`);
    }
  }
  return bad;
}

describe("objects reach each other through stub.ts and rpc.ts", () => {
  it("the clause scanner tells type-only imports and their names", () => {
    const src = [
      'import type { Mailbox } from "../mailbox/Mailbox";',
      'import { type A, type B as C } from "./x";',
      'import { type D, e } from "./y";',
      'import * as z from "./z";',
      'export { f } from "./f";',
    ].join("\n");
    expect(importClauses(src)).toEqual([
      { spec: "../mailbox/Mailbox", typeOnly: true, names: ["Mailbox"] },
      { spec: "./x", typeOnly: true, names: ["A", "B"] },
      { spec: "./y", typeOnly: false, names: ["D", "e"] },
      { spec: "./z", typeOnly: false, names: null },
      { spec: "./f", typeOnly: false, names: ["f"] },
    ]);
  });

  it("every folder of objects/ is an object's or a service's", () => {
    const folders = readdirSync(join(PACKAGE_ROOT, "objects")).filter((n) => statSync(join(PACKAGE_ROOT, "objects", n)).isDirectory()).sort();
    expect(folders).toEqual([...OBJECT_ROOMS, ...SERVICE_ROOMS].sort());
  });

  it("every object has its stub.ts and rpc.ts", () => {
    for (const room of OBJECT_ROOMS) {
      for (const part of ["stub.ts", "rpc.ts"]) {
        expect(statSync(join(PACKAGE_ROOT, "objects", room, part), { throwIfNoEntry: false })?.isFile(), `objects/${room}/${part}`).toBe(true);
      }
    }
  });

  it("the shared services are the ones docs/architecture.md lists", () => {
    const page = readFileSync(join(PACKAGE_ROOT, "docs/architecture.md"), "utf8");
    expect(SHARED_SERVICES.filter((s) => !page.includes(`\`${s}\``))).toEqual([]);
  });

  it("SQL is only in store files (store.ts, *-store.ts) and the shared storage helpers", () => {
    const found = sqlOutsideStores();
    expect(found.filter((f) => !SQL_EXCEPTIONS.includes(f))).toEqual([]);
    expect(SQL_EXCEPTIONS.filter((f) => !found.includes(f))).toEqual([]);
  });

  it("no file reaches into another object's folder but through its stub.ts, rpc.ts, config.ts, its class as a type, or a shared service", () => {
    const bad = objectViolations();
    expect(bad.filter((b) => !KNOWN_EXCEPTIONS.includes(b))).toEqual([]);
    // an exception that no longer happens is taken off the list
    expect(KNOWN_EXCEPTIONS.filter((k) => !bad.includes(k))).toEqual([]);
  });
});

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
