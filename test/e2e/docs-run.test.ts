/**
 * The documents' shell blocks, run verbatim (issues 16 and 28) against ONE
 * real local broker with tokens (and ADMIN_TOKEN) and its NATS TCP bridge,
 * in a copy of the repository (node_modules linked), as a reader would:
 * - docs/mcp.md's two-agent transcript, docs/mq9.md's conversation,
 *   docs/a2a.md's two A2A patterns and client/mq9/README.md's example: the `file=` blocks are saved and the
 *   `sh run` blocks run; each block's output must be the `text` block the
 *   document shows under it;
 * - docs/cli.md's `console run` transcripts, in one shell session in
 *   document order (the files a command uses are made by an earlier
 *   command): each `$ ` command must print the lines under it and exit 0 —
 *   or non-zero when what it prints is an error (`mortarmq: CODE …`);
 * - every shell block of docs/, README.md and client/mq9/README.md is run
 *   here (or by the README tour) or says why not (`not-run: <reason>`).
 * Outputs are compared up to what differs on every run: generated mail
 * addresses and token ids (compared by where they recur, so the same one
 * must recur in the same places), tokens, create_time values, ISO times,
 * and the elapsed time and rate of a `pub` summary. The commands read
 * MORTARMQ_URL, MORTARMQ_TOKEN, MORTARMQ_ADMIN_TOKEN and NATS_URL, which the
 * test sets instead of editing them; `mortarmq` is the CLI of the copy (on
 * PATH, as after `npm install -g`).
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { copyRepository, docBlocks, fencedBlocks, runShellBlocks, runTranscript, shellBlockMarks, transcriptCommands } from "../fixtures/doc-run";

const TOKEN = "docs-token";
const ADMIN_TOKEN = "docs-admin-token";
const repo = join(tmpdir(), `mortarmq-docs-run-${createHash("sha256").update(PACKAGE_ROOT).digest("hex").slice(0, 12)}`);
let broker: LocalBroker;
let bridge: Tunnel;
let stateDir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  copyRepository(repo);
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-docs-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:docs`, ADMIN_TOKEN } });
  bridge = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(broker.url, "nats") });
  const bin = join(stateDir, "bin"); // `mortarmq` as an installed CLI: the copy's
  mkdirSync(bin);
  writeFileSync(join(bin, "mortarmq"), `#!/bin/sh\nexec node ${JSON.stringify(join(repo, "client/bin/mortarmq.js"))} "$@"\n`);
  chmodSync(join(bin, "mortarmq"), 0o755);
  const { NATS_URL: _n, MORTARMQ_TOKEN: _t, MORTARMQ_ADMIN_TOKEN: _a, ...rest } = process.env;
  env = {
    ...rest, PATH: `${bin}:${process.env.PATH ?? ""}`, WRANGLER_SEND_METRICS: "false",
    MORTARMQ_URL: broker.url, MORTARMQ_TOKEN: TOKEN, MORTARMQ_ADMIN_TOKEN: ADMIN_TOKEN, NATS_URL: `nats://127.0.0.1:${bridge.port}`,
  };
});

afterAll(async () => {
  await bridge?.close();
  await broker?.stop();
  rmSync(repo, { recursive: true, force: true });
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/**
 * `text` with what differs between runs replaced: mail addresses and token
 * ids by their order of first appearance, tokens, create_time values, ISO
 * times, a pub summary's elapsed time and rate.
 */
function normalize(text: string): string {
  const seen = new Map<string, string>();
  const numbered = (kind: string) => (a: string) => {
    if (!seen.has(a)) seen.set(a, `<${kind} ${[...seen.values()].filter((v) => v.startsWith(`<${kind} `)).length + 1}>`);
    return seen.get(a)!;
  };
  return text
    .replace(/mq9\.[0-9a-f]{40}/g, numbered("address"))
    .replace(/mmq\.[a-z0-9-]+\.[0-9a-f]{12}\.[A-Za-z0-9_-]+/g, "<token>")
    .replace(/\b[0-9a-f]{12}\b/g, numbered("token id"))
    .replace(/("create_time": ?)\d+/g, "$1T")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{3})?Z/g, "<time>")
    .replace(/ in \d+(?:\.\d+)? m?s \(\d+ msg\/s, /g, " in <elapsed> (<rate> msg/s, ")
    .trimEnd();
}

/** Saves the document's files in the copy, runs its `sh run` blocks; returns [output, expected] per block. */
async function runDocument(path: string): Promise<{ exit: number | null; pairs: [string, string][] }> {
  const blocks = docBlocks(readFileSync(resolve(PACKAGE_ROOT, path), "utf8"), "run");
  for (const b of blocks) if (b.kind === "file") writeFileSync(join(repo, b.file!), b.text);
  const shell = blocks.filter((b) => b.kind === "sh");
  expect(shell.length, `${path} has runnable blocks`).toBeGreaterThan(0);
  const { exit, outputs } = await runShellBlocks(shell.map((b) => b.text), repo, env);
  return { exit, pairs: shell.map((b, i) => [normalize(outputs[i] ?? ""), normalize(b.expected ?? "")]) };
}

describe("docs/mcp.md", () => {
  it("the two-agent script prints the transcript the page shows", async () => {
    const { exit, pairs } = await runDocument("docs/mcp.md");
    expect(exit, pairs.map((p) => p[0]).join("\n----\n")).toBe(0);
    expect(pairs).toHaveLength(1);
    const [output, expected] = pairs[0]!;
    expect(expected).toContain("<address 2>"); // the transcript shows both mailboxes
    expect(output).toBe(expected);
  });

  it("the client configuration snippet is valid JSON naming the /mcp endpoint with a bearer header", () => {
    const json = fencedBlocks(readFileSync(resolve(PACKAGE_ROOT, "docs/mcp.md"), "utf8")).filter((b) => b.info[0] === "json");
    expect(json).toHaveLength(1);
    const config = JSON.parse(json[0]!.text) as { mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }> };
    const server = config.mcpServers.mortarmq!;
    expect(server.type).toBe("http");
    expect(new URL(server.url).pathname).toBe("/mcp");
    expect(server.headers.Authorization).toMatch(/^Bearer \S+$/);
  });
});

describe("docs/mq9.md", () => {
  it("the conversation example creates its mailboxes and prints what the page shows", async () => {
    const { exit, pairs } = await runDocument("docs/mq9.md");
    expect(exit, pairs.map((p) => p[0]).join("\n----\n")).toBe(0);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]![0]).toBe(pairs[0]![1]);
  });
});

describe("docs/a2a.md", () => {
  it("one SDK agent's task updates land in a mailbox, then the agent answers over mq9: what the page shows", async () => {
    const { exit, pairs } = await runDocument("docs/a2a.md");
    expect(exit, pairs.map((p) => p[0]).join("\n----\n")).toBe(0);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]![0]).toBe(pairs[0]![1]);
  });
});

describe("docs/cli.md", () => {
  it("every transcript command prints what the page shows under it, and fails only where it shows an error", async () => {
    const md = readFileSync(resolve(PACKAGE_ROOT, "docs/cli.md"), "utf8");
    const commands = fencedBlocks(md).filter((b) => b.info[0] === "console" && b.info.includes("run")).flatMap((b) => transcriptCommands(b.text));
    expect(commands.length).toBeGreaterThan(30);
    const results = await runTranscript(commands.map((c) => c.command), repo, env);
    expect(results).toHaveLength(commands.length);
    const seen = commands.map((c, i) => ({ command: c.command, output: normalize(results[i]!.output), failed: results[i]!.exit !== 0 }));
    const shown = commands.map((c) => ({ command: c.command, output: normalize(c.expected), failed: /^mortarmq: [A-Z_]+ /.test(c.expected) }));
    expect(seen).toEqual(shown);
  });
});

describe("every shell block of the documents", () => {
  it("runs in a test or says why it cannot", () => {
    const docs = [
      ...readdirSync(resolve(PACKAGE_ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => [`docs/${f}`, "run"] as const),
      ["client/mq9/README.md", "run"] as const,
      ["README.md", "tour"] as const,
    ];
    const unmarked: string[] = [];
    let counted = 0;
    for (const [path, marker] of docs) {
      for (const b of shellBlockMarks(readFileSync(resolve(PACKAGE_ROOT, path), "utf8"), marker)) {
        counted++;
        if (b.mark === "unmarked" || (b.mark === "not-run" && b.reason.length < 10)) unmarked.push(`${path}: ${b.first}`);
      }
    }
    expect(counted).toBeGreaterThan(30);
    expect(unmarked).toEqual([]);
  });
});

describe("client/mq9/README.md", () => {
  it("the example prints what the README shows, over http and over nats", async () => {
    const { exit, pairs } = await runDocument("client/mq9/README.md");
    expect(exit, pairs.map((p) => p[0]).join("\n----\n")).toBe(0);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]![0]).toBe(pairs[0]![1]);
  });
});
