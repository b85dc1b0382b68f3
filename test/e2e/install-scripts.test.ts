/**
 * `npm install` is silent about install scripts: every installed dependency
 * that has one is covered by package.json `allowScripts` (docs/testing.md
 * "Installing: no install scripts"). A new dependency with an install script
 * fails here until someone decides about it. Reads node_modules only
 * (`npm install-scripts ls`, npm 11), no registry.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../client/local/broker";

describe("dependencies' install scripts", () => {
  it("none is left unreviewed, and the three known ones are denied", async () => {
    const { stdout } = await promisify(execFile)("npm", ["install-scripts", "ls", "--json"], { cwd: PACKAGE_ROOT });
    expect(JSON.parse(stdout)).toEqual({ allowScripts: [] });
    const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { allowScripts?: Record<string, boolean> };
    expect(pkg.allowScripts).toEqual({ esbuild: false, sharp: false, workerd: false });
  });
});
