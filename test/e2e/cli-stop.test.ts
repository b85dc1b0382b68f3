/**
 * How the real `mortarmq` binary stops when the user stops it: Ctrl-C
 * (SIGINT) in the middle of `sub`, and a reader that goes away (`… | head`)
 * while `sub` or a long `mq9 query` still writes. Each must end quietly
 * (exit 0, no stack trace, no ACK errors) and `sub` must have ACKed exactly
 * what it printed — the group's committed floors say so (docs/cli.md).
 * Ctrl-C in the middle of `pub` — typed on a real terminal (a pseudo-terminal
 * from util-linux `script`) while the progress bar runs, or sent while `pub`
 * waits for more stdin — must stop reading, print a summary whose count is
 * what the partitions hold, restore the terminal and exit 130.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { CLI_BIN, runCli } from "../fixtures/cli-run";
import { until } from "../fixtures/until";

let broker: LocalBroker;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-stop-"));
  broker = await startLocalBroker({ stateDir: join(dir, "state"), port: 0 });
  env = { MORTARMQ_URL: broker.url };
});

afterAll(async () => {
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Stopped {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI; once `lines` lines arrived on stdout, `interrupt` stops it:
 * "SIGINT" sends Ctrl-C, "close-stdout" closes the read end of its stdout
 * (what `| head` does when head exits).
 */
function runUntil(args: string[], lines: number, interrupt: "SIGINT" | "close-stdout"): Promise<Stopped> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: PACKAGE_ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let fired = false;
    child.stdout!.on("data", (d) => {
      stdout += d; // after SIGINT too: lines written before the CLI saw the signal were printed
      if (fired) return;
      if (stdout.split("\n").length - 1 < lines) return;
      fired = true;
      if (interrupt === "SIGINT") child.kill("SIGINT");
      else child.stdout!.destroy();
    });
    child.stderr!.on("data", (d) => (stderr += d));
    child.once("error", rej);
    child.once("close", (code) => res({ code, stdout, stderr }));
  });
}

type Floors = { partitions: { groups: { group: string; committed_floor: number; in_flight: number }[] }[] };

/** Σ committed floors of `group` over the topic's partitions (every printed message acked, in order per partition). */
async function committed(topic: string, group: string): Promise<number> {
  const r = await runCli(["topics", "describe", topic, "--json"], env);
  expect(r.code).toBe(0);
  const t = JSON.parse(r.stdout) as Floors;
  return t.partitions.flatMap((p) => p.groups.filter((g) => g.group === group)).reduce((s, g) => s + g.committed_floor, 0);
}

/** Σ high watermarks of `topic`'s partitions: how many records it holds (a fresh topic, no retention). */
async function appended(topic: string): Promise<number> {
  const r = await runCli(["topics", "describe", topic, "--json"], env);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { partitions: { high_watermark: number }[] }).partitions.reduce((s, p) => s + p.high_watermark, 0);
}

/** Single-quotes `s` for sh. */
const sh = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

const SUMMARY = /^mortarmq: received (\d+) messages from cli\.stop as group (\w+) \((\d+) acked\)\n$/;

describe("stopping the CLI", () => {
  beforeAll(async () => {
    expect((await runCli(["topics", "create", "cli.stop", "--partitions", "2"], env)).code).toBe(0);
    const input = Array.from({ length: 20_000 }, (_, i) => `m${i}`).join("\n");
    const pub = await runCli(["pub", "cli.stop", "--no-progress"], env, input);
    expect(pub.stdout).toMatch(/^published 20000 of 20000 messages/);
  });

  it("Ctrl-C in the middle of sub: the ACKs of every printed message go out before it leaves the group; exit 0", async () => {
    const r = await runUntil(["sub", "cli.stop", "--group", "interrupted"], 500, "SIGINT");
    expect(r.stderr).toMatch(SUMMARY);
    const [, received, , acked] = SUMMARY.exec(r.stderr)!;
    const printed = r.stdout.trimEnd().split("\n").length;
    expect(Number(received)).toBe(printed);
    expect(Number(acked)).toBe(printed);
    expect(r.code).toBe(0);
    expect(await committed("cli.stop", "interrupted")).toBe(printed);
  });

  it("sub | head: a closed stdout stops sub quietly, and what it could not write is not acked", async () => {
    const r = await runUntil(["sub", "cli.stop", "--group", "piped"], 3, "close-stdout");
    expect(r.stderr).not.toMatch(/EPIPE|Error|at /);
    expect(r.stderr).toMatch(SUMMARY);
    const [, received, , acked] = SUMMARY.exec(r.stderr)!;
    expect(Number(acked)).toBe(Number(received));
    expect(Number(received)).toBeGreaterThanOrEqual(3);
    expect(Number(received)).toBeLessThan(20_000);
    expect(r.code).toBe(0);
    expect(await committed("cli.stop", "piped")).toBe(Number(received));
  });

  it("mq9 query --json | head: a closed stdout is no stack trace", async () => {
    expect((await runCli(["mq9", "create", "stop.box"], env)).code).toBe(0);
    const big = "x".repeat(200_000); // the reply (base64) is far larger than a pipe's buffer
    for (let i = 0; i < 2; i++) expect((await runCli(["mq9", "send", "stop.box"], env, big)).code).toBe(0);
    const r = await runUntil(["mq9", "query", "stop.box", "--json"], 1, "close-stdout");
    expect(r).toMatchObject({ code: 0, stderr: "" });
  });

  it("Ctrl-C during pub --file on a terminal: stops reading, summary = what was appended, cursor and line wrap restored, exit 130", async () => {
    expect((await runCli(["topics", "create", "cli.pty", "--partitions", "2"], env)).code).toBe(0);
    const lines = 1_000_000; // far more than is published before the first progress update
    const file = join(dir, "big.txt");
    writeFileSync(file, Array.from({ length: lines }, (_, i) => `record ${i}`).join("\n") + "\n");
    // `script` gives the CLI a pseudo-terminal (stdout and stderr are TTYs: the progress bar runs);
    // "\x03" written to it is the Ctrl-C of a keyboard: the terminal driver turns it into SIGINT.
    const cmd = `stty cols 120 rows 40; exec ${sh(process.execPath)} ${sh(CLI_BIN)} pub cli.pty --file ${sh(file)}`;
    const r = await new Promise<{ code: number | null; out: string }>((res, rej) => {
      const child = spawn("script", ["-qefc", cmd, "/dev/null"], { cwd: PACKAGE_ROOT, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"] });
      let out = "";
      let sent = false;
      child.stdout!.on("data", (d) => {
        out += d;
        if (!sent && /[1-9]\d* messages \| \d+ msg\/s/.test(out)) { // the bar showed answered publishes
          sent = true;
          child.stdin!.write("\x03");
        }
      });
      child.once("error", rej);
      child.once("close", (code) => res({ code, out }));
    });
    expect(r.out).toContain("\x1b[?25l"); // the bar hid the cursor and turned line wrap off…
    expect(r.out).toContain("\x1b[?7l");
    const after = r.out.slice(r.out.lastIndexOf("\x1b[?25l"));
    expect(after).toContain("\x1b[?25h"); // …and both were turned back on
    expect(after).toContain("\x1b[?7h");
    const m = /published (\d+) of (\d+) messages to cli\.pty in .*: 0 failed, 0 deduplicated; stopped early: interrupted \(SIGINT\)\r?\n/.exec(r.out);
    expect(m, r.out.slice(-400)).not.toBeNull();
    const published = Number(m![1]);
    expect(Number(m![2])).toBe(published); // every publish sent was answered
    expect(published).toBeGreaterThan(0);
    expect(published).toBeLessThan(lines);
    expect(r.code).toBe(130);
    expect(await appended("cli.pty")).toBe(published);
  });

  it("Ctrl-C while pub waits for more stdin: stops, the --json summary counts what was appended, exit 130", async () => {
    expect((await runCli(["topics", "create", "cli.stdin", "--partitions", "3"], env)).code).toBe(0);
    const child = spawn(process.execPath, [CLI_BIN, "pub", "cli.stdin", "--json"], { cwd: PACKAGE_ROOT, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    const closed = new Promise<number | null>((res) => child.once("close", res));
    child.stdin!.write(Array.from({ length: 5000 }, (_, i) => `s${i}\n`).join("")); // and stdin stays open
    await until(async () => (await appended("cli.stdin")) === 5000, 60_000, 200);
    child.kill("SIGINT");
    const code = await closed;
    child.stdin!.destroy();
    expect(stderr).toBe("");
    const s = JSON.parse(stdout) as { published: number; failed: number; unanswered: number; stopped: string | null };
    expect(s).toMatchObject({ published: 5000, failed: 0, unanswered: 0, stopped: "interrupted (SIGINT)" });
    expect(code).toBe(130);
    expect(await appended("cli.stdin")).toBe(5000);
  });
});
