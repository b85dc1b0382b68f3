/**
 * client/scripts/build-console.ts: `mortarmq dev` and the test configuration
 * rebuild the console's assets only when what they were built from changed
 * (ensureConsole), and a build is never taken as current when a file it
 * wrote is missing or its record is unreadable.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildConsole, consoleBuildCurrent, ensureConsole } from "../../client/scripts/build-console";

const dir = mkdtempSync(join(tmpdir(), "mortarmq-console-build-"));
const out = join(dir, "console");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("console build record", () => {
  it("builds once, then is current; a missing file or a changed recorded input rebuilds", async () => {
    expect(consoleBuildCurrent(out)).toBe(false); // nothing built yet
    expect(await ensureConsole(out)).toBe(true);
    const files = readdirSync(out).sort();
    expect(files).toContain("index.html");
    expect(files.some((f) => /^app-[A-Z0-9]+\.js$/.test(f))).toBe(true);
    const record = JSON.parse(readFileSync(`${out}.inputs.json`, "utf8")) as { inputs: Record<string, string>; files: Record<string, number> };
    expect(Object.keys(record.inputs)).toEqual(expect.arrayContaining(["console/app.tsx", "console/index.html", "client/scripts/build-console.ts"]));
    expect(Object.keys(record.inputs).some((f) => f.includes("node_modules/preact/"))).toBe(true);
    expect(Object.keys(record.files).sort()).toEqual(files);

    const html = join(out, "index.html");
    const written = statSync(html).mtimeMs;
    expect(consoleBuildCurrent(out)).toBe(true);
    expect(await ensureConsole(out)).toBe(false); // unchanged: no file rewritten
    expect(statSync(html).mtimeMs).toBe(written);

    rmSync(html);
    expect(consoleBuildCurrent(out)).toBe(false);
    expect(await ensureConsole(out)).toBe(true);
    expect(existsSync(html)).toBe(true);

    // an input that no longer has the recorded contents (as after an edit of console/)
    writeFileSync(`${out}.inputs.json`, JSON.stringify({ ...record, inputs: { ...record.inputs, "console/app.tsx": "0".repeat(64) } }));
    expect(consoleBuildCurrent(out)).toBe(false);
    writeFileSync(`${out}.inputs.json`, "{");
    expect(consoleBuildCurrent(out)).toBe(false);
    await buildConsole(out); // a plain build (wrangler's [build] command) writes the record too
    expect(consoleBuildCurrent(out)).toBe(true);
  });
});
