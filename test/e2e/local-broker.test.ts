/**
 * `startLocalBroker` (what `mortarmq dev` / `npm start` run) must not mistake
 * another server on its port for the broker it started, and must not start a
 * second broker on a state directory another running broker uses (their
 * objects would share the SQLite files and diverge).
 */
import { createServer } from "node:http";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  it("refuses a state directory a running broker uses; gives it back on stop; takes over a stale lock", async () => {
    const dir = join(stateDir, "shared");
    const first = await startLocalBroker({ port: 0, stateDir: dir });
    try {
      const second = await startLocalBroker({ port: 0, stateDir: dir, readyTimeoutMs: 20_000 }).then(async (b) => { await b.stop(); return null; }, (e: Error) => e);
      expect(second?.message).toBe(`state directory ${dir} is in use by another broker (pid ${process.pid}); stop it, or choose another --state `
        + `(if no broker runs, delete ${join(dir, "broker.pid")})`);
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
    expect(existsSync(join(dir, "broker.pid"))).toBe(false);
    writeFileSync(join(dir, "broker.pid"), "2147483646"); // a broker that was killed: no such process
    const again = await startLocalBroker({ port: 0, stateDir: dir });
    await again.stop();
  }, 120_000);
});
