/**
 * Proves the Worker bundles for deployment without a Cloudflare account
 * (DESIGN.md §7, issue 2): `wrangler deploy --dry-run --outdir <tmp>` with the
 * pinned local wrangler must succeed and write the bundle.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../client/local/broker";

const run = promisify(execFile);
const outdir = mkdtempSync(join(tmpdir(), "mortarmq-dry-run-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe("wrangler deploy --dry-run", () => {
  it("bundles the Worker with every Durable Object binding", async () => {
    const wrangler = createRequire(import.meta.url).resolve("wrangler/bin/wrangler.js");
    const { stdout } = await run(
      process.execPath,
      [wrangler, "deploy", "--dry-run", "--outdir", outdir, "--config", resolve(PACKAGE_ROOT, "wrangler.toml")],
      {
        cwd: PACKAGE_ROOT,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_UPDATE_NOTIFIER: "1", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
        maxBuffer: 16 * 1024 * 1024,
      },
    ); // rejects (failing the test) on a non-zero exit
    expect(stdout).toContain("--dry-run: exiting now.");
    for (const cls of ["MortarSession", "TopicRegistry", "Partition", "ConsumerGroup", "Mailbox", "AgentRegistry", "NatsSession", "TenantDirectory"]) {
      expect(stdout).toContain(`(${cls})`);
    }
    const bundle = join(outdir, "index.js");
    expect(existsSync(bundle)).toBe(true);
    expect(statSync(bundle).size).toBeGreaterThan(1000);
  });
});
