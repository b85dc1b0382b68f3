/**
 * A new user's first two commands (issue 18): in a fresh clone of this
 * repository, `npm install` and `npm start` work with no network at all.
 * Both run in a network namespace that has only a loopback interface
 * (util-linux `unshare`), `npm install --offline` taking the packages from
 * the npm cache (which `npm ci` filled). Nothing is built beforehand: the
 * start bundles the Worker and the web console from nothing (no .mortarmq/,
 * no dist/), then answers /healthz, serves /console and its script, stores
 * an mq9 SEND, and stops on Ctrl-C (SIGINT to its process group) leaving no
 * process of the clone running.
 * The clone is of the committed HEAD.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../client/local/broker";

const dir = mkdtempSync(join(tmpdir(), "mortarmq-fresh-clone-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `unshare` arguments that give a new network namespace here (as root, or through a user namespace), or null. */
function netnsArgs(): string[] | null {
  for (const args of [["-n"], ["-r", "-n"]]) {
    try {
      execFileSync("unshare", [...args, "ip", "link", "set", "lo", "up"], { stdio: "ignore" });
      return args;
    } catch {
      /* try the next */
    }
  }
  return null;
}

/** Run inside the namespace: `npm start` on free ports, the checks, Ctrl-C; prints one JSON line. */
const PROBE = String.raw`
import { spawn } from "node:child_process";
const state = process.argv[2];
const child = spawn("npm", ["start", "--", "--port", "0", "--bridge-port", "0", "--nats-port", "0", "--state", state],
  { stdio: ["ignore", "pipe", "pipe"], detached: true });
let log = "";
child.stdout.on("data", (d) => (log += d));
child.stderr.on("data", (d) => (log += d));
const exited = new Promise((r) => child.on("exit", (code, signal) => r(code ?? signal)));
const out = { log: "" };
try {
  const t0 = Date.now();
  let url;
  while (!(url = /mortarmq: broker +(http:\/\/[^ ]+)/.exec(log)?.[1])) {
    if (Date.now() - t0 > 150000) throw new Error("no broker line");
    await Promise.race([new Promise((r) => setTimeout(r, 200)), exited]);
    if (child.exitCode !== null) throw new Error("npm start exited");
  }
  const health = await fetch(url + "/healthz");
  out.healthz = { status: health.status, body: await health.json() };
  const page = await fetch(url + "/console");
  const html = await page.text();
  out.console = { status: page.status, type: page.headers.get("content-type") };
  const script = /src="(\/console\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
  const js = script ? await fetch(url + script) : undefined;
  out.script = js ? { status: js.status, bytes: (await js.arrayBuffer()).byteLength } : null;
  const mq9 = (subject, body) => fetch(url + "/mq9/" + subject, { method: "POST", body }).then((r) => r.json());
  out.create = await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "fresh.inbox", ttl: 0 }));
  out.send = await mq9("$mq9.AI.MSG.SEND.fresh.inbox", "hello");
  out.query = (await mq9("$mq9.AI.MSG.QUERY.fresh.inbox", "{}")).messages?.map((m) => Buffer.from(m.payload, "base64").toString());
} catch (e) {
  out.error = String(e);
}
process.kill(-child.pid, "SIGINT");
out.exit = await exited;
// what is still running from this clone (the launcher and workerd must be gone)
await new Promise((r) => setTimeout(r, 1000));
const { readdirSync, readFileSync } = await import("node:fs");
out.leftover = readdirSync("/proc").filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid).filter((p) => {
  try { return readFileSync("/proc/" + p + "/cmdline", "utf8").includes(process.cwd() + "/"); } catch { return false; }
});
out.log = log;
console.log(JSON.stringify(out));
`;

describe("fresh clone, no network", () => {
  it("npm install && npm start: builds everything offline, serves the broker and the console, stops on Ctrl-C", { timeout: 420_000 }, async () => {
    const netns = netnsArgs();
    expect(netns, "needs util-linux unshare with network namespaces (as root or through a user namespace)").not.toBeNull();
    const clone = join(dir, "repo");
    execFileSync("git", ["clone", "--quiet", PACKAGE_ROOT, clone]);
    expect(existsSync(join(clone, ".mortarmq")) || existsSync(join(clone, "dist")) || existsSync(join(clone, "node_modules"))).toBe(false);
    writeFileSync(join(dir, "probe.mjs"), PROBE);
    const script = `set -e; ip link set lo up; cd "$1"; npm install --offline --no-audit --no-fund --loglevel=error; node "$2" "$3"`;
    const { stdout } = await promisify(execFile)("unshare", [...netns!, "bash", "-c", script, "fresh", clone, join(dir, "probe.mjs"), join(dir, "state")], {
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: "false" },
    });
    const r = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(r.error, String(r.log)).toBeUndefined();
    expect(r.healthz).toEqual({ status: 200, body: { status: "ok", version: expect.any(String), auth: "open", storage: "ok" } });
    expect(r.console).toEqual({ status: 200, type: "text/html; charset=utf-8" });
    expect(r.script).toEqual({ status: 200, bytes: expect.any(Number) });
    expect((r.script as { bytes: number }).bytes).toBeGreaterThan(10_000);
    expect(r.create).toEqual({ error: "", mail_address: "fresh.inbox" });
    expect(r.send).toEqual({ error: "", msg_id: 0 });
    expect(r.query).toEqual(["hello"]);
    // npm itself ends by the SIGINT (as at a terminal); the broker under it stops in order and leaves nothing running
    expect([0, 130, "SIGINT"], String(r.log)).toContain(r.exit);
    expect(r.leftover, String(r.log)).toEqual([]);
    expect(existsSync(join(clone, ".mortarmq", "build", "current.json"))).toBe(true); // built by the start itself
  });
});
