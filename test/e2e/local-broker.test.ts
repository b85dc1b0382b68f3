/**
 * `startLocalBroker` (`mortarmq dev`, what `npm start` runs) must not mistake
 * another server on its port for the broker it started, must not start a
 * second broker on a state directory another running broker uses (their
 * objects would share the SQLite files and diverge), and after a SIGKILL of
 * the launcher alone — which leaves its workerd running, still serving the
 * old port over the same files — the next start stops that workerd before it
 * takes the directory over.
 */
import { createServer } from "node:http";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startLocalBroker } from "../../client/local/broker";
import { processCommand } from "../../client/local/process-tree";
import { parseLock } from "../../client/local/state-lock";

const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-local-broker-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const mq9 = (url: string, subject: string, body: string) =>
  fetch(`${url}/mq9/${subject}`, { method: "POST", body }).then((r) => r.json() as Promise<Record<string, unknown>>);

describe("startLocalBroker", () => {
  it("refuses a port that is already in use instead of reporting the other server as its broker", async () => {
    const port = await freePort();
    const other = createServer((_req, res) => res.end('{"status":"ok"}')); // e.g. a broker started earlier
    await new Promise<void>((r) => other.listen(port, "127.0.0.1", r));
    try {
      const started = startLocalBroker({ port, stateDir, readyTimeoutMs: 20_000 });
      const err = await started.then(async (b) => { await b.stop(); return null; }, (e: Error) => e);
      expect(err?.message).toContain(`mortarmq: PORT_IN_USE: HTTP port 127.0.0.1:${port} is already in use (another broker running?)\n`
        + "  what to do: stop the other broker, or choose another port with --port <port> (0 picks a free one)\n");
    } finally {
      await new Promise((r) => other.close(r));
    }
  }, 60_000);

  it("refuses a state directory a running broker uses; gives it back on stop; takes over a stale lock", async () => {
    const dir = join(stateDir, "shared");
    const first = await startLocalBroker({ port: 0, stateDir: dir });
    try {
      const second = await startLocalBroker({ port: 0, stateDir: dir, readyTimeoutMs: 20_000 }).then(async (b) => { await b.stop(); return null; }, (e: Error) => e);
      expect(second?.message).toContain(`mortarmq: STATE_DIR_IN_USE: state directory ${dir} is in use by another broker (pid ${first.process.pid})\n`
        + `  what to do: stop it, or choose another --state (if no broker runs, delete ${join(dir, "broker.pid")})\n`);
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
    expect(existsSync(join(dir, "broker.pid"))).toBe(false);
    writeFileSync(join(dir, "broker.pid"), "2147483646"); // a broker that was killed: no such process
    const again = await startLocalBroker({ port: 0, stateDir: dir });
    await again.stop();
  }, 120_000);

  it("after a SIGKILL of the launcher alone, the next start on the same port stops the workerd it left running and keeps its data", async () => {
    const dir = join(stateDir, "orphan");
    const port = await freePort(); // the same port both times, as a rerun of `npm start` (the orphan still listens on it)
    const first = await startLocalBroker({ port, stateDir: dir });
    expect(await mq9(first.url, "$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "kept", ttl: 0 }))).toEqual({ error: "", mail_address: "kept" });
    expect(await mq9(first.url, "$mq9.AI.MSG.SEND.kept", "before the kill")).toEqual({ error: "", msg_id: 0 });
    const runtime = parseLock(readFileSync(join(dir, "broker.pid"), "utf8")).runtime!;
    expect(processCommand(runtime)).toBe("workerd");
    first.process.kill("SIGKILL");
    await first.exited;
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200); // left behind, still serving the old port over the same files

    const second = await startLocalBroker({ port, stateDir: dir });
    try {
      expect(processCommand(runtime)).toBeUndefined();
      expect(second.url).toBe(first.url);
      const stored = (await mq9(second.url, "$mq9.AI.MSG.QUERY.kept", "{}")).messages as { msg_id: number; payload: string }[];
      expect(stored.map((m) => [m.msg_id, atob(m.payload)])).toEqual([[0, "before the kill"]]);
    } finally {
      await second.stop();
    }
  }, 120_000);
});
