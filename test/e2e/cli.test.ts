/**
 * The real `mortarmq` binary (`node client/bin/mortarmq.js …`) against a real
 * local broker (mortarmq dev, tokens configured, its own state dir): topics
 * create/delete, pub from a 1,000-line file and from stdin, sub with a
 * consumer group, error cases and exit codes, every mq9 subcommand, `--json` outputs,
 * `topics list/describe` (the lag a publish and a consume created, read from
 * the broker's /stats), and the rendering of every /stats field against a
 * stand-in HTTP server serving the documented shape (docs/cli.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { runCli, type CliRun } from "../fixtures/cli-run";
import { parseMetrics, sampleValue } from "../fixtures/prometheus";
import { until } from "../fixtures/until";

const TOKEN = "cli-e2e-token";
let broker: LocalBroker;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-cli-"));
  // a short telemetry flush: the broker's error counters show within a test (pub counts no error)
  broker = await startLocalBroker({ stateDir: join(dir, "state"), port: 0, vars: { AUTH_TOKENS: `${TOKEN}:acme`, TELEMETRY_FLUSH_MS: "200" } });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Run = CliRun;

/** Runs the CLI with MORTARMQ_URL/MORTARMQ_TOKEN set for the broker; `input` is piped to stdin (else stdin is /dev/null). */
function cli(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return runCli(args, { MORTARMQ_URL: broker.url, MORTARMQ_TOKEN: TOKEN, ...opts.env }, opts.input);
}

/** Runs and parses stdout as JSON (expecting exit 0). */
async function cliJson<T = Record<string, unknown>>(args: string[], opts: { input?: string } = {}): Promise<T> {
  const r = await cli([...args, "--json"], opts);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe("topics create / delete", () => {
  it("creates, confirms, refuses another count, deletes, and fails deleting again", async () => {
    const created = await cli(["topics", "create", "cli.orders", "--partitions", "3"]);
    expect(created).toMatchObject({ code: 0, stderr: "" });
    expect(created.stdout).toMatch(/^created topic cli\.orders \(topic_id \d+, 3 partitions\) with dead-letter twin cli\.orders\.dlq\n$/);

    const again = await cliJson<{ topic_id: number; created: boolean; partition_count: number; dlq: { topic_id: number } }>(
      ["topics", "create", "cli.orders", "-p", "3"]);
    expect(again.created).toBe(false);
    expect(again.partition_count).toBe(3);
    expect(again.dlq.topic_id).toBe(again.topic_id + 1);

    const mismatch = await cli(["topics", "create", "cli.orders", "--partitions", "2"]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stdout).toBe("");
    expect(mismatch.stderr).toMatch(/^mortarmq: PARTITION_COUNT_MISMATCH \(0x2003\): topic "cli\.orders" exists with 3 partitions, not 2\n  what to do \(refresh-metadata\): /);

    const deleted = await cliJson<{ deleted: boolean; topic_id: number }>(["topics", "delete", "cli.orders"]);
    expect(deleted).toMatchObject({ deleted: true, topic_id: again.topic_id });
    const gone = await cli(["topics", "delete", "cli.orders"]);
    expect(gone).toEqual({ code: 1, stdout: "", stderr: 'mortarmq: UNKNOWN_TOPIC (0x0008): topic "cli.orders" does not exist\n'
      + "  what to do (refresh-metadata): nothing to delete: mortarmq topics list shows this tenant's topics\n" });
  });

  it("an unknown topic reads the same from pub, sub and topics describe (one UNKNOWN_TOPIC report)", async () => {
    const runs = await Promise.all([["pub", "cli.absent", "x"], ["sub", "cli.absent", "-g", "g"], ["topics", "describe", "cli.absent"]].map((a) => cli(a)));
    for (const r of runs) {
      expect(r).toEqual({ code: 1, stdout: "", stderr: 'mortarmq: UNKNOWN_TOPIC (0x0008): topic "cli.absent" does not exist\n'
        + "  what to do (refresh-metadata): check the name (mortarmq topics list shows this tenant's topics), or create it: mortarmq topics create <name> --partitions <n>\n" });
    }
  });

  it("bad arguments are usage errors, not broker calls", async () => {
    const r = await cli(["topics", "create", "x", "--partitions", "0"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("mortarmq: USAGE: --partitions must be between 1 and 65535, not 0\n  what to do: see `mortarmq topics create --help`\n");
  });
});

describe("topics retention (create / alter / describe)", () => {
  type Ret = { retention_ms: number; retention_bytes: number; retention_messages: number; discard: string };
  it("create takes retention flags with units, alter changes only the flags given, describe --json has per partition first_sequence and high_watermark", async () => {
    const created = await cliJson<{ created: boolean; retention: Ret }>(
      ["topics", "create", "cli.ret", "--partitions", "2", "--retention-ms", "7d", "--retention-bytes", "1GiB", "--discard", "new"]);
    expect(created).toMatchObject({ created: true, retention: { retention_ms: 604_800_000, retention_bytes: 1024 ** 3, retention_messages: 0, discard: "new" } });
    const text = await cli(["topics", "alter", "cli.ret", "--retention-messages", "3", "--discard", "old"]);
    expect(text).toMatchObject({ code: 0, stderr: "" });
    expect(text.stdout).toMatch(/^altered topic cli\.ret \(topic_id \d+\): retention max age 7d, max size 1\.0 GiB, max records 3 per partition, discard old\n$/);
    const same = await cliJson<{ altered: boolean; retention: Ret }>(["topics", "alter", "cli.ret", "--retention-messages", "3"]);
    expect(same).toMatchObject({ altered: false, retention: { retention_messages: 3 } });

    for (const v of ["a", "b", "c", "d", "e"]) expect((await cli(["pub", "cli.ret", v, "-p", "0"])).code).toBe(0); // 5 one-record segments, 3 kept
    const d = await cliJson<{ retention: Ret; partitions: { partition: number; first_sequence: number; high_watermark: number }[] }>(["topics", "describe", "cli.ret"]);
    expect(d.retention).toEqual({ retention_ms: 604_800_000, retention_bytes: 1024 ** 3, retention_messages: 3, discard: "old" });
    const p0 = d.partitions.find((p) => p.partition === 0)!;
    expect([p0.first_sequence, p0.high_watermark]).toEqual([3, 5]);
    expect(d.partitions.find((p) => p.partition === 1)).toMatchObject({ first_sequence: 1, high_watermark: 0 });
    const human = await cli(["topics", "describe", "cli.ret"]);
    expect(human.stdout).toContain("retention:   max age 7d, max size 1.0 GiB, max records 3 per partition, discard old\n");
    expect(human.stdout).toMatch(/PARTITION\s+FIRST SEQUENCE\s+HIGH WATERMARK\s+SIZE\s+PRODUCERS/);
  });

  it("alter without a flag is a usage error; an unknown topic is UNKNOWN_TOPIC; a bad value names its flag", async () => {
    expect((await cli(["topics", "alter", "cli.ret"])).stderr).toMatch(/^mortarmq: USAGE: nothing to alter: give --retention-ms/);
    const missing = await cli(["topics", "alter", "cli.nope", "--retention-ms", "1h"]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toMatch(/^mortarmq: UNKNOWN_TOPIC \(0x0008\): topic "cli\.nope" does not exist\n/);
    expect((await cli(["topics", "create", "x", "--retention-bytes", "1 PB"])).stderr).toMatch(/^mortarmq: USAGE: --retention-bytes must be a byte count/);
    expect((await cli(["topics", "alter", "x", "--discard", "oldest"])).stderr).toMatch(/^mortarmq: USAGE: --discard must be one of old, new/);
  });
});

describe("pub", () => {
  beforeAll(async () => {
    expect((await cli(["topics", "create", "cli.log", "--partitions", "4"])).code).toBe(0);
  });

  it("publishes a 1,000-line file as an idempotent producer; a re-run with the same id is deduplicated", async () => {
    const file = join(dir, "lines.txt");
    writeFileSync(file, Array.from({ length: 1000 }, (_, i) => `line ${i} ${"x".repeat(i % 50)}`).join("\n") + "\n");
    type Summary = { published: number; failed: number; deduplicated: number; producer_id: string; partitions: { partition: number; published: number; first_sequence: string; last_sequence: string }[]; errors: unknown[] };
    const first = await cliJson<Summary>(["pub", "cli.log", "--file", file, "--producer-id", "0x51"]);
    expect(first).toMatchObject({ published: 1000, failed: 0, deduplicated: 0, producer_id: "81", errors: [] });
    expect(first.partitions).toEqual([0, 1, 2, 3].map((p) => ({ partition: p, published: 250, first_sequence: "1", last_sequence: "250" })));

    const rerun = await cliJson<Summary>(["pub", "cli.log", "--file", file, "--producer-id", "81"]);
    expect(rerun).toMatchObject({ published: 1000, failed: 0, deduplicated: 1000 });
    expect(rerun.partitions.map((p) => p.last_sequence)).toEqual(["250", "250", "250", "250"]);

    const text = await cli(["pub", "cli.log", "--file", file]); // a new random producer: appended again
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^published 1000 of 1000 messages to cli\.log in [\d.]+ (ms|s) \(\d+ msg\/s, [\d.]+ KiB\): 0 failed, 0 deduplicated\n$/);
  });

  it("reads stdin, routes keyed lines by key, and publishes a single value", async () => {
    const s = await cliJson<{ published: number; partitions: { partition: number; published: number }[] }>(
      ["pub", "cli.log", "--key-separator", "=", "--no-idempotence"], { input: "k=a\nk=b\nk=c\n" });
    expect(s.published).toBe(3);
    expect(s.partitions).toHaveLength(1); // one key → one partition
    expect(s.partitions[0]!.published).toBe(3);

    const one = await cli(["pub", "cli.log", "hello", "--partition", "2"]);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^published to cli\.log partition 2 at sequence \d+\n$/);
  });

  it("an unknown topic fails with the registry name and exit 1, a bad partition too", async () => {
    const r = await cli(["pub", "cli.nope", "x"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('mortarmq: UNKNOWN_TOPIC (0x0008): topic "cli.nope" does not exist');
    expect(r.stderr).toContain("mortarmq topics create");
    const j = await cli(["pub", "cli.nope", "x", "--json"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stderr).error).toMatchObject({ name: "UNKNOWN_TOPIC", code: 8, action: "refresh-metadata" });
    const p = await cli(["pub", "cli.log", "x", "--partition", "4"]);
    expect(p.code).toBe(1);
    expect(p.stderr).toContain("--partition 4 does not exist: cli.log has 4 partition(s)");
  });

  it("pub and sub on a topic of 3 partitions make the broker count no error (mortarmq_errors_total)", async () => {
    const mismatches = async () => {
      const res = await fetch(`${broker.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      return sampleValue(parseMetrics(await res.text()), "mortarmq_errors_total", { tenant: "acme", name: "PARTITION_COUNT_MISMATCH" });
    };
    expect((await cli(["topics", "create", "cli.noerr", "--partitions", "3"])).code).toBe(0);
    const before = await mismatches();
    for (let i = 0; i < 3; i++) expect((await cli(["pub", "cli.noerr", `v${i}`])).code).toBe(0);
    expect((await cli(["sub", "cli.noerr", "--group", "noerr", "--count", "3"])).code).toBe(0);
    // one deliberate mismatch: the counter is flushed and read (not a zero that was never reported)
    expect((await cli(["topics", "create", "cli.noerr", "--partitions", "2"])).code).toBe(1);
    await until(async () => (await mismatches()) > before, 15_000, 100);
    expect(await mismatches()).toBe(before + 1);
  });

  it("failed messages are counted and make the exit status 1", async () => {
    const big = "v".repeat(1000);
    const key = "k".repeat(300); // > MAX_KEY_LEN (255): KEY_TOO_LONG for those lines
    const input = [`${key}=${big}`, `ok=${big}`, `${key}=x`].join("\n");
    const r = await cli(["pub", "cli.log", "--key-separator", "=", "--json"], { input });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as { published: number; failed: number; errors: { line: number; name: string }[] };
    expect(s).toMatchObject({ published: 1, failed: 2 });
    expect(s.errors.map((e) => [e.line, e.name])).toEqual([[1, "KEY_TOO_LONG"], [3, "KEY_TOO_LONG"]]);
  });

  it("a wrong token is AUTH_FAILED; no broker is one line", async () => {
    const auth = await cli(["pub", "cli.log", "x"], { env: { MORTARMQ_TOKEN: "wrong" } });
    expect(auth.code).toBe(1);
    expect(auth.stderr).toContain("AUTH_FAILED (0x0006)");
    const down = await cli(["pub", "cli.log", "x", "--url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe("mortarmq: cannot reach the broker at http://127.0.0.1:9 (ECONNREFUSED); is `npm start` running?\n");
  });

  it("a URL without a scheme (MORTARMQ_URL=127.0.0.1:8787) is a USAGE error, not 'cannot reach the broker'", async () => {
    for (const args of [["pub", "cli.log", "x"], ["sub", "cli.log", "-g", "x"], ["topics", "create", "x"]]) {
      const r = await cli(args, { env: { MORTARMQ_URL: "127.0.0.1:8787" } });
      expect(r).toEqual({ code: 1, stdout: "", stderr: "mortarmq: USAGE: --url 127.0.0.1:8787 is not a URL\n  what to do: use e.g. http://127.0.0.1:8787\n" });
    }
    const ftp = await cli(["pub", "cli.log", "x", "--url", "ftp://127.0.0.1:8787"]);
    expect(ftp.stderr).toBe("mortarmq: USAGE: --url ftp://127.0.0.1:8787: MortarMQ commands need an http(s)://, ws(s):// or tcp:// broker URL\n"
      + "  what to do: use e.g. http://127.0.0.1:8787\n");
  });
});

describe("sub", () => {
  type Line = { partition: number; sequence: string; value: string; value_encoding: string; key: string | null; attempt: number };
  const lines = (out: string) => out.trimEnd().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);

  it("a group consumes every message once across runs: --count, then --timeout; each printed message is acked", async () => {
    expect((await cli(["topics", "create", "cli.sub", "--partitions", "2"])).code).toBe(0);
    const input = Array.from({ length: 10 }, (_, i) => `m${i}`).join("\n");
    expect((await cli(["pub", "cli.sub"], { input })).code).toBe(0);

    const first = await cli(["sub", "cli.sub", "--group", "readers", "--count", "4", "--json"]);
    expect(first).toMatchObject({ code: 0, stderr: "" });
    const a = lines(first.stdout);
    expect(a).toHaveLength(4);
    const rest = await cli(["sub", "cli.sub", "--group", "readers", "--timeout", "1500", "--json"]);
    expect(rest.code).toBe(0);
    const b = lines(rest.stdout);
    const all = [...a, ...b];
    expect(all.map((m) => m.value).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    expect(new Set(all.map((m) => `${m.partition}:${m.sequence}`)).size).toBe(10);
    expect(all.every((m) => m.value_encoding === "utf8" && m.key === null)).toBe(true);

    const drained = await cli(["sub", "cli.sub", "-g", "readers", "--timeout", "1000"]);
    expect(drained).toEqual({ code: 0, stdout: "", stderr: "mortarmq: received 0 messages from cli.sub as group readers (0 acked)\n" });
  });

  it("--count N takes exactly N: runs of --count 1 print every message once, each on its first attempt", async () => {
    expect((await cli(["topics", "create", "cli.exact", "--partitions", "2"])).code).toBe(0);
    expect((await cli(["pub", "cli.exact"], { input: Array.from({ length: 6 }, (_, i) => `e${i}`).join("\n") })).code).toBe(0);
    const got: Line[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await cli(["sub", "cli.exact", "--group", "exact", "--count", "1", "--json"]);
      expect(r).toMatchObject({ code: 0, stderr: "" });
      got.push(...lines(r.stdout));
    }
    const last = await cli(["sub", "cli.exact", "--group", "exact", "--count", "2", "--json"]);
    got.push(...lines(last.stdout));
    // a message taken but not printed would come back later as attempt 2 (after the ack wait, or at once on LEAVE)
    expect(got.map((m) => [m.value, m.attempt]).sort()).toEqual(Array.from({ length: 6 }, (_, i) => [`e${i}`, 1]));
    const described = await cliJson<{ partitions: { groups: { in_flight: number; lag: number }[] }[] }>(["topics", "describe", "cli.exact"]);
    expect(described.partitions.flatMap((p) => p.groups.map((g) => [g.in_flight, g.lag]))).toEqual([[0, 0], [0, 0]]);
  });

  it("--from latest skips what was there; human lines are partition:sequence, key, value", async () => {
    expect((await cli(["sub", "cli.sub", "-g", "late", "--from", "latest", "--timeout", "1000"])).stdout).toBe("");
    expect((await cli(["pub", "cli.sub", "fresh", "--key", "k1"])).code).toBe(0);
    const r = await cli(["sub", "cli.sub", "-g", "late", "--timeout", "1500"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^[01]:\d+  k1  fresh\n$/);
    expect(r.stderr).toBe("mortarmq: received 1 message from cli.sub as group late (1 acked)\n");
  });

  it("an unknown topic is UNKNOWN_TOPIC, exit 1", async () => {
    const r = await cli(["sub", "cli.none", "-g", "x", "--count", "1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('UNKNOWN_TOPIC (0x0008): topic "cli.none" does not exist');
  });
});

describe("mq9", () => {
  type Msg = { msg_id: number; payload: string; priority: string; key: string | null; tags: string[] };

  it("create → send with headers → fetch → ack → query → delete", async () => {
    expect(await cliJson(["mq9", "create", "cli.box", "--ttl", "600"])).toEqual({ error: "", mail_address: "cli.box" });
    const dup = await cli(["mq9", "create", "cli.box"]);
    expect(dup).toMatchObject({ code: 1, stdout: "" });
    expect(dup.stderr).toBe("mortarmq: CONFLICT (HTTP 409): mailbox cli.box already exists\n  what to do: pick another name, or use the existing mailbox\n");

    const sent = await cli(["mq9", "send", "cli.box", '{"status":"running"}', "--key", "status", "--tags", "billing,vip", "--priority", "urgent", "--ttl", "300"]);
    expect(sent).toEqual({ code: 0, stdout: "sent to cli.box: msg_id 0\n", stderr: "" });
    const file = join(dir, "payload.bin");
    writeFileSync(file, Buffer.from([0, 1, 255]));
    expect(await cliJson(["mq9", "send", "cli.box", "--file", file])).toEqual({ error: "", msg_id: 1 });
    expect(await cliJson(["mq9", "send", "cli.box"], { input: "from stdin\n" })).toEqual({ error: "", msg_id: 2 });
    expect(await cliJson(["mq9", "send", "cli.box", "later", "--delay", "3600"])).toEqual({ error: "", msg_id: -1 });

    const fetched = await cliJson<{ error: string; messages: Msg[] }>(["mq9", "fetch", "cli.box", "--group", "workers", "--deliver", "earliest", "--num-msgs", "10", "--max-wait-ms", "0"]);
    expect(fetched.messages.map((m) => [m.msg_id, m.priority, m.key, m.tags, Buffer.from(m.payload, "base64").toString("hex")])).toEqual([
      [0, "urgent", "status", ["billing", "vip"], Buffer.from('{"status":"running"}').toString("hex")],
      [1, "normal", null, [], "0001ff"],
      [2, "normal", null, [], Buffer.from("from stdin\n").toString("hex")],
    ]);

    const table = await cli(["mq9", "fetch", "cli.box", "--group", "workers", "--max-wait-ms", "0"]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^MSG_ID\s+PRIORITY\s+CREATED\s+KEY\s+TAGS\s+PAYLOAD$/);
    expect(lines[1]).toMatch(/^\s+0\s+urgent\s+\S+Z\s+status\s+billing,vip\s+\{"status":"running"\}$/);
    expect(lines[2]).toMatch(/base64:AAH\/$/);
    expect(lines[3]).toMatch(/from stdin\\n$/);

    expect(await cli(["mq9", "ack", "cli.box", "2", "--group", "workers"])).toEqual({ code: 0, stdout: "acked msg_id 2 in cli.box for group workers\n", stderr: "" });
    expect((await cliJson<{ messages: Msg[] }>(["mq9", "fetch", "cli.box", "--group", "workers", "--max-wait-ms", "0"])).messages).toEqual([]);
    const noGroup = await cli(["mq9", "ack", "cli.box", "0", "--group", "never"]);
    expect(noGroup.code).toBe(1);
    expect(noGroup.stderr).toContain("NOT_FOUND (HTTP 404): consumer group never has not fetched from mailbox cli.box");

    const q = await cliJson<{ messages: Msg[] }>(["mq9", "query", "cli.box", "--tags", "vip", "--key", "status", "--limit", "5", "--since", "2020-01-01"]);
    expect(q.messages.map((m) => m.msg_id)).toEqual([0]);
    expect(await cli(["mq9", "delete", "cli.box", "0"])).toEqual({ code: 0, stdout: "deleted msg_id 0 from cli.box\n", stderr: "" });
    expect((await cliJson<{ messages: Msg[] }>(["mq9", "query", "cli.box"])).messages.map((m) => m.msg_id)).toEqual([1, 2]);
    const again = await cli(["mq9", "delete", "cli.box", "0"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("NOT_FOUND (HTTP 404): message not found");

    const missing = await cli(["mq9", "fetch", "cli.nobox"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("mailbox cli.nobox does not exist");
    const bad = await cli(["mq9", "send", "cli.box", "x", "--delay", "10", "--ttl", "5"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe("mortarmq: BAD_REQUEST (HTTP 400): mq9-ttl (5s) must be greater than mq9-delay (10s): the message would expire before it becomes visible\n  what to do: fix the request (docs/mq9.md lists the rules)\n");
    const usage = await cli(["mq9", "send", "cli.box", "x", "--delay", "soon"]);
    expect(usage).toMatchObject({ code: 1, stdout: "" });
    expect(usage.stderr).toContain('USAGE: --delay must be a whole number, not "soon"');
  });

  it("fetch --ack acknowledges the batch; a generated address works", async () => {
    const created = await cliJson<{ mail_address: string }>(["mq9", "create"]);
    const addr = created.mail_address;
    expect(addr).toMatch(/^mq9\.[0-9a-f]{40}$/);
    for (const v of ["a", "b"]) expect((await cli(["mq9", "send", addr, v])).code).toBe(0);
    const r = await cliJson<{ messages: Msg[]; acked_msg_id: number }>(["mq9", "fetch", addr, "--group", "g", "--from-id", "0", "--ack"]);
    expect(r.messages.map((m) => m.msg_id)).toEqual([0, 1]);
    expect(r.acked_msg_id).toBe(1);
    expect((await cliJson<{ messages: Msg[] }>(["mq9", "fetch", addr, "--group", "g", "--max-wait-ms", "0"])).messages).toEqual([]);
  });

  it("register → report → discover → unregister", async () => {
    const card = JSON.stringify({ name: "cli.translator", description: "Translates documents between languages", skills: [{ name: "translate", tags: ["i18n"] }] });
    expect(await cli(["mq9", "register", card, "--mailbox", "mq9://broker/cli.translator.inbox"])).toEqual({ code: 0, stdout: "registered agent cli.translator\n", stderr: "" });
    expect(await cliJson(["mq9", "register", "--name", "cli.payer"], { input: '{"description":"handles payments and invoices"}' })).toEqual({ error: "" });
    expect(await cliJson(["mq9", "report", "--name", "cli.translator", "--status", "busy"])).toEqual({ error: "" });

    const found = await cliJson<{ agents: { name: string; _mq9?: { report: { status: string } } }[] }>(["mq9", "discover", "--text", "translate languages"]);
    expect(found.agents.map((a) => a.name)).toEqual(["cli.translator"]);
    expect(found.agents[0]!._mq9!.report.status).toBe("busy");
    const all = await cli(["mq9", "discover", "--limit", "10", "--page", "1"]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^NAME\s+MAILBOX\s+DESCRIPTION\s+STATUS\ncli\.translator\s+mq9:\/\/broker\/cli\.translator\.inbox\s+Translates documents between languages\s+busy\ncli\.payer\s+-\s+handles payments and invoices\s+-\n$/);

    expect(await cli(["mq9", "unregister", "--name", "cli.translator"])).toEqual({ code: 0, stdout: "unregistered agent cli.translator\n", stderr: "" });
    expect(await cliJson(["mq9", "unregister", "--mailbox", "mq9://broker/cli.translator.inbox"])).toEqual({ error: "", removed: false });
    const gone = await cli(["mq9", "report", "--name", "cli.translator", "--status", "idle"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("agent cli.translator is not registered");
    expect((await cliJson<{ agents: { name: string }[] }>(["mq9", "discover"])).agents.map((a) => a.name)).toEqual(["cli.payer"]);
  });

  it("a wrong token is UNAUTHORIZED (401)", async () => {
    const r = await cli(["mq9", "query", "cli.box"], { env: { MORTARMQ_TOKEN: "wrong" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("mortarmq: UNAUTHORIZED (HTTP 401): unauthorized: invalid token\n  what to do: pass a valid token with --token or MORTARMQ_TOKEN\n");
    // topics list / describe read /stats: the same error, with the broker's reason (expired, revoked, invalid)
    const stats = await cli(["topics", "list"], { env: { MORTARMQ_TOKEN: "wrong" } });
    expect([stats.code, stats.stderr]).toEqual([1, "mortarmq: UNAUTHORIZED (HTTP 401): unauthorized: invalid token\n  what to do: pass a valid token with --token or MORTARMQ_TOKEN\n"]);
  });
});

describe("topics list / describe", () => {
  type Topic = { name: string; topic_id: number; dlq: boolean; partition_count: number;
    partitions: { partition: number; high_watermark: number; size_bytes: number; producers: number;
      groups: { group: string; members: number; committed_floor: number; lag: number; in_flight: number }[] }[] };

  it("against this broker: publish N, consume and ack M → lag N − M, per partition and in the tables", async () => {
    expect((await cli(["topics", "create", "cli.lag", "--partitions", "2"])).code).toBe(0);
    // N = 10: 6 values of 5 bytes on partition 0, 4 on partition 1 (one idempotent producer each run)
    expect((await cli(["pub", "cli.lag", "--partition", "0"], { input: "v0000\nv0001\nv0002\nv0003\nv0004\nv0005\n" })).code).toBe(0);
    expect((await cli(["pub", "cli.lag", "--partition", "1"], { input: "w0000\nw0001\nw0002\nw0003\n" })).code).toBe(0);

    const before = await cliJson<Topic>(["topics", "describe", "cli.lag"]);
    expect(before).toMatchObject({ name: "cli.lag", dlq: false, partition_count: 2 });
    expect(before.partitions).toEqual([
      { partition: 0, first_sequence: 1, high_watermark: 6, size_bytes: 30, producers: 1, groups: [] },
      { partition: 1, first_sequence: 1, high_watermark: 4, size_bytes: 20, producers: 1, groups: [] },
    ]);
    expect((await cli(["topics", "describe", "cli.lag"])).stdout).toMatch(/\nno consumer groups\n$/);

    // M = 4, acked by `sub` after printing
    const sub = await cli(["sub", "cli.lag", "--group", "lagging", "--count", "4"]);
    expect(sub).toMatchObject({ code: 0, stderr: "mortarmq: received 4 messages from cli.lag as group lagging (4 acked)\n" });
    const taken = sub.stdout.trimEnd().split("\n").map((l) => l.split(":")[0]);

    const after = await cliJson<Topic>(["topics", "describe", "cli.lag"]);
    const groups = after.partitions.map((p) => p.groups);
    expect(groups.map((g) => g.map((x) => x.group))).toEqual([["lagging"], ["lagging"]]);
    for (const [i, p] of after.partitions.entries()) {
      const gr = p.groups[0]!;
      const consumed = taken.filter((x) => x === String(i)).length; // delivered in order per partition, all acked
      expect(gr).toEqual({ group: "lagging", members: 0, committed_floor: consumed, lag: p.high_watermark - consumed, in_flight: 0, retention_skipped: 0 });
    }
    expect(groups.flat().reduce((s, g) => s + g.lag, 0)).toBe(10 - 4);

    const text = await cli(["topics", "describe", "cli.lag"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^topic: {7}cli\.lag\ntopic id: {4}\d+\npartitions: {2}2\ndead-letter: cli\.lag\.dlq\nappended: {4}10\nsize: {8}50 B\n/);
    expect(text.stdout).toMatch(/^ +0 +1 +6 +30 B +1$/m);
    expect(text.stdout).toMatch(/^ +1 +1 +4 +20 B +1$/m);
    const rows = text.stdout.split("\n").filter((l) => l.startsWith("lagging ")).map((l) => l.trim().split(/\s+/).slice(1).map(Number));
    expect(rows.map(([part, , floor, lag, inFlight]) => [part, floor! + lag!, inFlight])).toEqual([[0, 6, 0], [1, 4, 0]]);

    const list = await cli(["topics", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^cli\.lag +\d+ +2 +10 +50 B +1 +6$/m);
    expect(list.stdout).toMatch(/^cli\.lag\.dlq +\d+ +2 +0 +0 B +0 +0$/m);
    expect(list.stdout).toMatch(/^cli\.log +\d+ +4 /m);

    const none = await cli(["topics", "describe", "cli.nothing"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^mortarmq: UNKNOWN_TOPIC \(0x0008\): topic "cli\.nothing" does not exist\n/);
  });

  it("against a server with the documented /stats shape", async () => {
    const stats = {
      tenant: "acme",
      topics: [{ name: "orders", topic_id: 1, dlq: false, partition_count: 1,
        partitions: [{ partition: 0, high_watermark: 10, size_bytes: 100, producers: 1,
          groups: [{ group: "billing", members: 1, committed_floor: 4, lag: 6, in_flight: 2 }] }] }],
      mailboxes: 0, agents: 0,
    };
    let auth: string | undefined;
    const server: Server = createServer((req, res) => {
      auth = req.headers.authorization;
      res.writeHead(req.url === "/stats" ? 200 : 404, { "content-type": "application/json" });
      res.end(req.url === "/stats" ? JSON.stringify(stats) : "{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const list = await cli(["topics", "list", "--url", url]);
      expect(list).toMatchObject({ code: 0, stderr: "" });
      expect(list.stdout).toBe("TOPIC   ID  PARTITIONS  APPENDED  SIZE   GROUPS  LAG\norders   1           1        10  100 B       1    6\n");
      expect(auth).toBe(`Bearer ${TOKEN}`);
      const d = await cli(["topics", "describe", "orders", "--url", url]);
      expect(d.code).toBe(0);
      expect(d.stdout).toContain("billing          0        1                4    6          2");
      const j = JSON.parse((await cli(["topics", "describe", "orders", "--url", url, "--json"])).stdout);
      expect(j).toEqual(stats.topics[0]);
      const missing = await cli(["topics", "describe", "nope", "--url", url]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^mortarmq: UNKNOWN_TOPIC \(0x0008\): topic "nope" does not exist\n/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe("launcher", () => {
  it("without the start-up cache (MORTARMQ_CLI_CACHE=0: through tsx) the CLI answers the same", async () => {
    const cached = await cli(["topics", "list"]);
    expect(cached.code).toBe(0);
    expect(cached.stdout).toMatch(/^cli\.log +\d+ +4 /m);
    expect(await cli(["topics", "list"], { env: { MORTARMQ_CLI_CACHE: "0" } })).toEqual(cached);
  });
});
