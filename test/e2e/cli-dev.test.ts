/**
 * `mortarmq dev` end to end: the real CLI (client/bin/mortarmq.js) starts a
 * real broker (the Worker in Miniflare). With `--auth-tokens` (and `--var` for CORS_ORIGINS)
 * the broker refuses requests without a token; without tokens it says at
 * startup that it runs open.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connect as connectNats } from "nats";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, PACKAGE_ROOT } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { until } from "../fixtures/until";

const running: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const p of running.splice(0)) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGINT");
    const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Spawns `mortarmq dev` on a free HTTP port and a fresh state directory (bridges off unless `args` ask for them). */
async function spawnDev(args: string[]): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-"));
  dirs.push(state);
  const bridges = [args.some((a) => a.startsWith("--bridge-port")) ? [] : ["--no-bridge-port"], args.some((a) => a.startsWith("--nats-port")) ? [] : ["--no-nats-port"]].flat();
  const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--port", String(port), "--state", state, ...bridges, ...args], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return { child, port, output: () => out };
}

/** Starts `mortarmq dev` (see spawnDev); resolves with its output once the auth line was printed. */
async function startDev(args: string[]): Promise<{ url: string; output: () => string }> {
  const { child, port, output } = await spawnDev(args);
  const deadline = Date.now() + 90_000;
  while (!/mortarmq: auth .*\n/.test(output())) {
    if (child.exitCode !== null) throw new Error(`mortarmq dev exited:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`mortarmq dev did not print its auth line:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `http://127.0.0.1:${port}`, output };
}

const create = (url: string, name: string, token?: string) =>
  fetch(`${url}/mq9/$mq9.AI.MAILBOX.CREATE`, {
    method: "POST",
    body: JSON.stringify({ name }),
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });

describe("mortarmq dev", () => {
  it("--auth-tokens requires tokens (401 without), --var sets CORS_ORIGINS", async () => {
    const dev = await startDev(["--auth-tokens", "cli-token:acme", "--var", "CORS_ORIGINS=https://app.example"]);
    expect(dev.output()).toContain("mortarmq: auth        tokens required");
    expect(dev.output()).not.toContain("OPEN");
    const anonymous = await create(dev.url, "cli.box");
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: "unauthorized: missing bearer token" });
    expect((await create(dev.url, "cli.box", "wrong")).status).toBe(401);
    expect(await (await create(dev.url, "cli.box", "cli-token")).json()).toEqual({ error: "", mail_address: "cli.box" });
    const preflight = await fetch(`${dev.url}/mq9/$mq9.AI.MAILBOX.CREATE`, {
      method: "OPTIONS",
      headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
  });

  it("without tokens says once that it runs open, prints the console's URL, and says when it stopped", async () => {
    const { child, port, output } = await spawnDev([]);
    const dev = { url: `http://127.0.0.1:${port}`, output };
    await until(async () => /mortarmq: auth .*\n/.test(output()), 90_000, 100);
    expect(output()).toContain('mortarmq: auth        OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured: every client is tenant "default"');
    expect(output()).toContain(`mortarmq: console     ${dev.url}/console\n`);
    expect((await create(dev.url, "open.box")).status).toBe(200);
    expect((await fetch(`${dev.url}/console`)).status).toBe(200);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(output()).toMatch(/mortarmq: stopped\n$/);
    // the Worker's own open-mode warning (first request) is not printed again: `mortarmq dev` said it at startup
    expect(output().match(/OPEN/g)).toHaveLength(1);
  });

  it("fails fast, naming the port, when a bridge port is taken (a second `npm start` must not leave NATS_URL reaching the first broker)", async () => {
    for (const [flag, what] of [["--bridge-port", "MortarMQ v0 bridge"], ["--nats-port", "NATS bridge"]] as const) {
      const taken = await freePort();
      const other = createServer(); // e.g. that bridge of a broker started earlier
      await new Promise<void>((r) => other.listen(taken, "127.0.0.1", r));
      try {
        const dev = await spawnDev([flag, String(taken)]);
        const code = await Promise.race([
          new Promise((r) => dev.child.once("exit", r)),
          new Promise((r) => setTimeout(() => r("still running"), 60_000)),
        ]);
        expect(code).toBe(1);
        expect(dev.output()).toContain(`mortarmq: PORT_IN_USE: ${what} port 127.0.0.1:${taken} is already in use (another broker running?)\n`
          + `  what to do: stop the other broker, or choose another port with ${flag} <port> (0 picks a free one), or ${flag.replace("--", "--no-")}\n`);
        expect(dev.output()).not.toContain("mortarmq: auth"); // never reported as running
        await expect(fetch(`http://127.0.0.1:${dev.port}/healthz`)).rejects.toThrow(); // nothing left listening
      } finally {
        await new Promise((r) => other.close(r));
      }
    }
  });

  it("--bridge-port 0 / --nats-port 0 choose free ports and print them; the bridges carry large messages", async () => {
    const dev = await startDev(["--bridge-port", "0", "--nats-port", "0"]);
    const mortar = Number(/mortarmq: MortarMQ v0 +tcp:\/\/127\.0\.0\.1:(\d+) /.exec(dev.output())?.[1]);
    const nats = Number(/mortarmq: NATS +nats:\/\/127\.0\.0\.1:(\d+) /.exec(dev.output())?.[1]);
    expect(mortar).toBeGreaterThan(0);
    expect(nats).toBeGreaterThan(0);
    // Both bridges carry large messages intact (the MortarMQ bridge's WebSocket is compressed: permessage-deflate; the NATS bridge's is not).
    const nc = await connectNats({ servers: `127.0.0.1:${nats}`, reconnect: false });
    expect(nc.info?.proto).toBe(1);
    const big = randomBytes(600 * 1024);
    const ask = async (subject: string, body: Uint8Array | string) => JSON.parse(new TextDecoder().decode((await nc.request(subject, body, { timeout: 30_000 })).data));
    expect(await ask("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "bridge.big", ttl: 0 }))).toEqual({ error: "", mail_address: "bridge.big" });
    expect(await ask("$mq9.AI.MSG.SEND.bridge.big", big)).toEqual({ error: "", msg_id: 0 });
    const stored = (await ask("$mq9.AI.MSG.QUERY.bridge.big", "{}")).messages as { payload: string }[];
    expect(Buffer.from(stored[0]!.payload, "base64").equals(big)).toBe(true);
    await nc.close();
    const client = await MortarClient.connect(`tcp://127.0.0.1:${mortar}`);
    await client.declare("bridge.big", 1);
    const value = randomBytes(1024 * 1024);
    expect((await client.publish("bridge.big", 0, "k", value)).sequence).toBe(1n);
    const sub = await client.subscribe("bridge.big", "g", { pull: true });
    const [m] = await sub.pull({ maxMsgs: 1, waitMs: 5_000 });
    expect(Buffer.from(m!.value).equals(value)).toBe(true);
    await m!.ack();
    await client.close();
  });

  it("logs no line per request and no colour codes when stdout is not a terminal; --verbose logs requests (without the /healthz probes)", async () => {
    const quiet = await startDev([]);
    for (let i = 0; i < 20; i++) await (await fetch(`${quiet.url}/stats`)).arrayBuffer();
    expect((await create(quiet.url, "quiet.box")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000)); // time for any line those requests would log
    expect(quiet.output()).not.toMatch(/GET \/stats|POST \/mq9/);
    expect(quiet.output()).not.toContain("\x1b[");

    const verbose = await startDev(["--verbose"]);
    await (await fetch(`${verbose.url}/stats`)).arrayBuffer();
    await until(async () => /GET \/stats 200 OK/.test(verbose.output()), 10_000, 100);
    expect(verbose.output()).not.toContain("\x1b[");
    expect(verbose.output()).not.toMatch(/GET \/healthz 200/);
  });

  it("a --host that is not an address of this machine is one clear error, also with --port 0 (was Node's unhandled 'error' event)", async () => {
    const badHostState = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-"));
    dirs.push(badHostState);
    for (const port of ["0", String(await freePort())]) {
      const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--host", "192.0.2.1", "--port", port,
        "--no-bridge-port", "--no-nats-port", "--state", badHostState], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      child.stderr.on("data", (d) => (err += d));
      const code = await new Promise((r) => child.once("exit", r));
      expect(code).toBe(1);
      expect(err).toBe(`mortarmq: ERROR: HTTP port 192.0.2.1:${port}: 192.0.2.1 is not an address of this machine (--host)\n`);
    }
  }, 60_000);

  it("a state directory that cannot be created or written is one clear error at once, naming the path and the reason", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-"));
    dirs.push(tmp);
    const file = join(tmp, "a-file");
    writeFileSync(file, "not a directory");
    for (const [state, line] of [
      ["/proc/nope", "state directory /proc/nope: cannot create /proc/nope: no such file or directory"], // Node 20's recursive mkdirSync loops forever here
      ["/proc", "state directory /proc: cannot write in it: no such file or directory"],
      [join(file, "state"), `state directory ${join(file, "state")}: ${file} is not a directory`],
    ] as const) {
      const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--port", "0", "--no-bridge-port", "--no-nats-port", "--state", state],
        { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      running.push(child);
      let err = "";
      child.stderr.on("data", (d) => (err += d));
      const code = await Promise.race([new Promise((r) => child.once("exit", r)), new Promise((r) => setTimeout(() => r("still running after 15 s"), 15_000))]);
      expect(code, state).toBe(1);
      expect(err, state).toBe(`mortarmq: ERROR: ${line}\n`);
    }
  }, 60_000);

  it("a --port that is not a number points to dev's own help", async () => {
    const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--port", "abc"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    expect(await new Promise((r) => child.once("exit", r))).toBe(1);
    expect(err).toBe('mortarmq: USAGE: --port must be a whole number, not "abc"\n  what to do: see `mortarmq dev --help`\n');
  });

  it("refuses a malformed --var before starting anything", async () => {
    const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--var", "NOEQUALS"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise((r) => child.once("exit", r));
    expect(code).not.toBe(0);
    expect(err).toBe('mortarmq: USAGE: --var expects NAME=value (e.g. --var CORS_ORIGINS=https://app.example), got "NOEQUALS"\n'
      + "  what to do: see `mortarmq dev --help`\n"); // the one error, not buried above the whole program's help
  });
});
