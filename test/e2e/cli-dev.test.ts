/**
 * `mortarmq dev` end to end: the real CLI (client/bin/mortarmq.js) starts a
 * real wrangler dev. With `--auth-tokens` (and `--var` for CORS_ORIGINS)
 * the broker refuses requests without a token; without tokens it says at
 * startup that it runs open.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, PACKAGE_ROOT } from "../../client/local/broker";

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

/** Starts `mortarmq dev` without bridges; resolves with its output once the auth line was printed. */
async function startDev(args: string[]): Promise<{ url: string; output: () => string }> {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-"));
  dirs.push(state);
  const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, "client/bin/mortarmq.js"), "dev", "--port", String(port), "--state", state, "--no-bridge-port", "--no-nats-port", ...args], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 90_000;
  while (!/mortarmq: auth .*\n/.test(out)) {
    if (child.exitCode !== null) throw new Error(`mortarmq dev exited:\n${out}`);
    if (Date.now() > deadline) throw new Error(`mortarmq dev did not print its auth line:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `http://127.0.0.1:${port}`, output: () => out };
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

  it("without tokens says at startup that it runs open, and the Worker logs it on its first request", async () => {
    const dev = await startDev([]);
    expect(dev.output()).toContain('mortarmq: auth        OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured: every client is tenant "default"');
    expect((await create(dev.url, "open.box")).status).toBe(200);
    const deadline = Date.now() + 10_000;
    while (!dev.output().includes("mortarmq: running OPEN") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(dev.output()).toContain('mortarmq: running OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured, every client is tenant "default"');
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
