/**
 * The CLI start-up cache (client/scripts/cli-cache.js): the first load bundles
 * the CLI, later loads reuse the build, and a changed input, another esbuild
 * version or MORTARMQ_CLI_CACHE=0 refuse it. Runs the real esbuild.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { FORMAT, ROOT, currentBuild, loadCachedCli } from "../../client/scripts/cli-cache";

const dir = mkdtempSync(join(tmpdir(), "mortarmq-cli-cache-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Manifest = { format: number; esbuild: string; build: string; inputs: Record<string, [number, number]> };
const manifest = (cacheDir: string) => JSON.parse(readFileSync(join(cacheDir, "current.json"), "utf8")) as Manifest;

describe("CLI start-up cache", () => {
  it("builds once, records every source with its mtime and size, and reuses the build", async () => {
    const cacheDir = join(dir, "cache");
    const main = await loadCachedCli({ cacheDir });
    expect(typeof main).toBe("function");
    const m = manifest(cacheDir);
    expect(Object.keys(m.inputs)).toEqual(expect.arrayContaining([join(ROOT, "client/cli/main.ts"), join(ROOT, "wire/mortar/constants.ts"), join(ROOT, "client/local/root.ts")]));
    expect(Object.keys(m.inputs).some((f) => f.includes("node_modules"))).toBe(false); // packages stay imports
    const main2 = join(ROOT, "client/cli/main.ts");
    expect(m.inputs[main2]).toEqual([statSync(main2).mtimeMs, statSync(main2).size]);
    expect(readdirSync(join(cacheDir, m.build))).toContain("main.mjs");

    expect(await loadCachedCli({ cacheDir })).toBeTypeOf("function");
    expect(manifest(cacheDir).build).toBe(m.build); // not rebuilt
    expect(readdirSync(cacheDir).filter((e) => e.startsWith("build-"))).toEqual([m.build]);
    // the bundle keeps each file's own import.meta.url (client/local/root.ts finds the repository with it)
    const chunks = readdirSync(join(cacheDir, m.build)).map((f) => readFileSync(join(cacheDir, m.build, f), "utf8")).join("\n");
    expect(chunks).not.toContain("import.meta.url");
    expect(chunks).toContain(JSON.stringify(pathToFileURL(join(ROOT, "client/local/root.ts")).href));
  });

  it("a changed input or another esbuild version makes the build stale", () => {
    const cacheDir = join(dir, "manual");
    const input = join(dir, "input.ts");
    writeFileSync(input, "export const a = 1;\n");
    const s = statSync(input);
    rmSync(cacheDir, { recursive: true, force: true });
    mkdirSync(join(cacheDir, "build-1"), { recursive: true });
    writeFileSync(join(cacheDir, "current.json"), JSON.stringify({ format: FORMAT, esbuild: "9.9.9", build: "build-1", inputs: { [input]: [s.mtimeMs, s.size] } }));
    expect(currentBuild(cacheDir, "9.9.9")).toBe(join(cacheDir, "build-1"));
    expect(currentBuild(cacheDir, "9.9.8")).toBeNull();
    writeFileSync(input, "export const a = 22;\n");
    expect(currentBuild(cacheDir, "9.9.9")).toBeNull();
    rmSync(input);
    expect(currentBuild(cacheDir, "9.9.9")).toBeNull();
    expect(currentBuild(join(dir, "nothing-here"), "9.9.9")).toBeNull();
  });

  it("MORTARMQ_CLI_CACHE=0 turns it off (the launcher then uses tsx)", async () => {
    process.env.MORTARMQ_CLI_CACHE = "0";
    try {
      expect(await loadCachedCli({ cacheDir: join(dir, "off") })).toBeNull();
    } finally {
      delete process.env.MORTARMQ_CLI_CACHE;
    }
  });
});
