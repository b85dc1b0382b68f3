/** client/local/worker-build.ts: a cached Worker bundle is used only while every input is byte for byte what it was built from. */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { currentBuild, FORMAT } from "../../client/local/worker-build";

const root = mkdtempSync(join(tmpdir(), "mortarmq-worker-build-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

describe("worker bundle cache", () => {
  it("is current while inputs, wrangler version and format match; stale on any change", () => {
    const cacheDir = join(root, ".mortarmq", "build");
    mkdirSync(join(cacheDir, "build-1"), { recursive: true });
    writeFileSync(join(cacheDir, "build-1", "index.js"), "export default {}");
    mkdirSync(join(root, "worker"));
    writeFileSync(join(root, "worker", "index.ts"), "export default {};\n");
    writeFileSync(join(root, "wrangler.toml"), 'name = "x"\n');
    const manifest = (over: object = {}) => writeFileSync(join(cacheDir, "current.json"), JSON.stringify({
      format: FORMAT, wrangler: "4.86.0", build: "build-1",
      inputs: { "worker/index.ts": sha("export default {};\n"), "wrangler.toml": sha('name = "x"\n') }, ...over,
    }));
    manifest();
    expect(currentBuild(cacheDir, root, "4.86.0")).toBe(join(cacheDir, "build-1"));
    expect(currentBuild(cacheDir, root, "4.87.0")).toBeNull(); // another wrangler
    writeFileSync(join(root, "worker", "index.ts"), "export default { fetch() {} };\n");
    expect(currentBuild(cacheDir, root, "4.86.0")).toBeNull(); // a source changed
    writeFileSync(join(root, "worker", "index.ts"), "export default {};\n");
    expect(currentBuild(cacheDir, root, "4.86.0")).toBe(join(cacheDir, "build-1")); // same bytes again (mtime alone does not count)
    rmSync(join(root, "worker", "index.ts"));
    expect(currentBuild(cacheDir, root, "4.86.0")).toBeNull(); // an input is gone
    writeFileSync(join(root, "worker", "index.ts"), "export default {};\n");
    manifest({ format: FORMAT + 1 });
    expect(currentBuild(cacheDir, root, "4.86.0")).toBeNull();
    manifest({ build: "build-2" });
    expect(currentBuild(cacheDir, root, "4.86.0")).toBeNull(); // its directory is missing
    writeFileSync(join(cacheDir, "current.json"), "{");
    expect(currentBuild(cacheDir, root, "4.86.0")).toBeNull();
  });
});
