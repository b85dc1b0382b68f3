/**
 * The README's "5-minute tour", run verbatim (issue 8). The tour's blocks are
 * read FROM README.md, so the README cannot drift from what works:
 * - fenced blocks with the info string `sh tour` are shell commands, run in
 *   README order in ONE bash session (as when pasted into one terminal);
 * - a fenced block whose info string has `file=NAME` is written to NAME
 *   first ("save this as …").
 *
 * Like a new user, the test works in a copy of the repository (no state, no
 * leftovers; node_modules linked) and starts the broker with `npm start`,
 * only adding free ports. The commands honour MORTARMQ_URL and NATS_URL,
 * which the test sets to those ports instead of editing any command.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PACKAGE_ROOT } from "../../client/local/broker";
import { copyRepository, docBlocks, runShellBlocks } from "../fixtures/doc-run";

const blocks = docBlocks(readFileSync(resolve(PACKAGE_ROOT, "README.md"), "utf8"), "tour");
const shell = blocks.filter((b) => b.kind === "sh");

/** The copy is keyed by checkout, so repeated runs reuse one npx link (npx caches per project path). */
const repo = join(tmpdir(), `mortarmq-readme-tour-${createHash("sha256").update(PACKAGE_ROOT).digest("hex").slice(0, 12)}`);
let broker: ChildProcess | undefined;
let brokerLog = "";
let env: NodeJS.ProcessEnv;
/** Output of each shell block (stdout and stderr interleaved), in README order. */
let outputs: string[] = [];
let tourExit: number | null = null;

/** Starts `npm start` (the README's command) on free ports; resolves once it printed its auth line. */
async function startBroker(ports: { http: number; mortar: number; nats: number }): Promise<void> {
  broker = spawn("npm", ["start", "--", "--port", String(ports.http), "--bridge-port", String(ports.mortar), "--nats-port", String(ports.nats)], {
    cwd: repo, env, stdio: ["ignore", "pipe", "pipe"], detached: true,
  });
  broker.stdout!.on("data", (d) => (brokerLog += d));
  broker.stderr!.on("data", (d) => (brokerLog += d));
  const deadline = Date.now() + 90_000;
  while (!/^mortarmq: auth /m.test(brokerLog)) {
    if (broker.exitCode !== null) throw new Error(`npm start exited:\n${brokerLog}`);
    if (Date.now() > deadline) throw new Error(`npm start did not get ready:\n${brokerLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs every shell block in one bash session; splits the output by block. */
async function runTour(): Promise<void> {
  ({ exit: tourExit, outputs } = await runShellBlocks(shell.map((b) => b.text), repo, env));
}

beforeAll(async () => {
  copyRepository(repo);
  for (const b of blocks) if (b.kind === "file") writeFileSync(join(repo, b.file!), b.text);
  const ports = { http: await freePort(), mortar: await freePort(), nats: await freePort() };
  const { MORTARMQ_TOKEN: _t, NATS_URL: _n, ...rest } = process.env;
  env = {
    ...rest,
    WRANGLER_SEND_METRICS: "false",
    MORTARMQ_URL: `http://127.0.0.1:${ports.http}`,
    NATS_URL: `nats://127.0.0.1:${ports.nats}`,
  };
  await startBroker(ports);
  await runTour();
}, 120_000);

afterAll(async () => {
  if (broker && broker.exitCode === null && broker.signalCode === null) {
    const exited = new Promise((r) => broker!.once("exit", r));
    process.kill(-broker.pid!, "SIGINT"); // npm, mortarmq dev and wrangler: the whole process group
    const t = setTimeout(() => process.kill(-broker!.pid!, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  }
  rmSync(repo, { recursive: true, force: true });
});

/** Lines of block `i`'s output. */
const lines = (i: number) => outputs[i]!.trimEnd().split("\n");

describe("README tour", () => {
  it("has the expected blocks, and all of them ran without an error", () => {
    expect(shell).toHaveLength(7);
    expect(blocks.filter((b) => b.kind === "file").map((b) => b.file)).toEqual(["example.ts"]);
    expect(tourExit, outputs.join("\n----\n")).toBe(0);
    expect(outputs).toHaveLength(7);
  });

  it("0: the broker is healthy and open", () => {
    expect(JSON.parse(outputs[0]!)).toEqual({ status: "ok", version: expect.any(String), auth: "open", storage: "ok" });
  });

  it("1: creates the topic and publishes the 1,000-line file", () => {
    expect(lines(1)).toEqual([
      "created topic orders (topic_id 1, 2 partitions) with dead-letter twin orders.dlq",
      expect.stringMatching(/^published 1000 of 1000 messages to orders in [\d.]+ m?s \(\d+ msg\/s, 8\.7 KiB\): 0 failed, 0 deduplicated$/),
    ]);
  });

  it("2: the group consumes 3 messages; describe shows lag 997 over the two partitions", () => {
    const out = lines(2);
    const consumed = out.slice(0, 3);
    for (const l of consumed) expect(l).toMatch(/^[01]:\d+  -  order \d+$/);
    expect(out[3]).toBe("mortarmq: received 3 messages from orders as group billing (3 acked)");
    expect(out).toContain("appended:    1000");
    const rows = out.filter((l) => l.startsWith("billing ")).map((l) => l.trim().split(/\s+/).slice(1).map(Number));
    expect(rows.map((r) => r[0])).toEqual([0, 1]); // partition
    // [partition, members, committed floor, lag, in flight]: every consumed message acked, floors add up to 3
    expect(rows.reduce((s, r) => s + r[2]!, 0)).toBe(3);
    expect(rows.reduce((s, r) => s + r[3]!, 0)).toBe(997);
    expect(rows.map((r) => r[4])).toEqual([0, 0]);
    for (const r of rows) expect(r[2]! + r[3]!).toBe(500); // high watermark of each partition
  });

  it("3: the rest is consumed and the lag is 0", () => {
    const out = lines(3);
    expect(out[0]).toBe("mortarmq: received 997 messages from orders as group billing (997 acked)");
    expect(out.slice(1)).toEqual([
      expect.stringMatching(/^TOPIC\s+ID\s+PARTITIONS\s+APPENDED\s+SIZE\s+GROUPS\s+LAG$/),
      expect.stringMatching(/^orders\s+1\s+2\s+1000\s+8\.7 KiB\s+1\s+0$/),
      expect.stringMatching(/^orders\.dlq\s+2\s+2\s+0\s+0 B\s+0\s+0$/),
    ]);
  });

  it("4: curl creates a mailbox, sends, fetches and acks", () => {
    const [created, sent, fetched, acked] = lines(4).map((l) => JSON.parse(l));
    expect(created).toEqual({ error: "", mail_address: "task.001" });
    expect(sent).toEqual({ error: "", msg_id: 0 });
    expect(fetched.error).toBe("");
    expect(fetched.messages).toHaveLength(1);
    expect(fetched.messages[0]).toMatchObject({ msg_id: 0, priority: "urgent", key: null, tags: [] });
    expect(Buffer.from(fetched.messages[0].payload, "base64").toString()).toBe('{"status":"running"}');
    expect(acked).toEqual({ error: "" });
  });

  it("5: the nats client sends and fetches only what the group has not acked", () => {
    expect(lines(5)).toEqual(['{"error":"","msg_id":1}', "1 normal hello over NATS"]);
  });

  it("6: the SDK example publishes 3 messages and its group receives them", () => {
    expect(lines(6)).toEqual([
      'published "hello Ada" at sequence 1',
      'published "hello Grace" at sequence 2',
      'published "hello Linus" at sequence 3',
      "received hello Ada (partition 0, sequence 1)",
      "received hello Grace (partition 0, sequence 2)",
      "received hello Linus (partition 0, sequence 3)",
    ]);
  });

  it("the broker started by npm start said where it listens", () => {
    expect(brokerLog).toMatch(/^mortarmq: broker {6}http:\/\/127\.0\.0\.1:\d+ {2}\(state: .*\.mortarmq\/state\)$/m);
    expect(brokerLog).toMatch(/^mortarmq: NATS {8}nats:\/\/127\.0\.0\.1:\d+/m);
  });
});
