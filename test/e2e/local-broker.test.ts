/**
 * `startLocalBroker` (what `mortarmq dev` / `npm start` run) must not mistake
 * another server on its port for the broker it started.
 */
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startLocalBroker } from "../../client/local/broker";

const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-local-broker-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe("startLocalBroker", () => {
  it("refuses a port that is already in use instead of reporting the other server as its broker", async () => {
    const port = await freePort();
    const other = createServer((_req, res) => res.end('{"status":"ok"}')); // e.g. a broker started earlier
    await new Promise<void>((r) => other.listen(port, "127.0.0.1", r));
    try {
      const started = startLocalBroker({ port, stateDir, readyTimeoutMs: 20_000 });
      const err = await started.then(async (b) => { await b.stop(); return null; }, (e: Error) => e);
      expect(err?.message).toMatch(/already in use/);
    } finally {
      await new Promise((r) => other.close(r));
    }
  }, 60_000);
});
