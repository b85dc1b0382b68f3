/**
 * How the real `mortarmq` binary stops when the user stops it: Ctrl-C
 * (SIGINT) in the middle of `sub`, and a reader that goes away (`… | head`)
 * while `sub` or a long `mq9 query` still writes. Each must end quietly
 * (exit 0, no stack trace, no ACK errors) and `sub` must have ACKed exactly
 * what it printed — the group's committed floors say so (docs/cli.md).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { CLI_BIN, runCli } from "../fixtures/cli-run";

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
      stdout += d; // after the interrupt too: lines the CLI prints before it handles SIGINT are printed
      if (fired || stdout.split("\n").length - 1 < lines) return;
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
});
