/**
 * docs/mcp.md's two-agent transcript and client/mq9/README.md's example,
 * run verbatim (issue 16): the `file=` blocks are saved and the `sh run`
 * blocks run, as a reader would, in a copy of the repository (node_modules
 * linked), against a real local broker with tokens and its NATS TCP
 * bridge; each block's output must be the `text` block the document shows
 * under it, up to what differs on every run — generated mail addresses
 * (compared by where they recur, so the same address must recur in the
 * same places) and create_time values. The commands read MORTARMQ_URL,
 * MORTARMQ_TOKEN and NATS_URL, which the test sets instead of editing them.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { copyRepository, docBlocks, fencedBlocks, runShellBlocks } from "../fixtures/doc-run";

const TOKEN = "docs-token";
const repo = join(tmpdir(), `mortarmq-docs-run-${createHash("sha256").update(PACKAGE_ROOT).digest("hex").slice(0, 12)}`);
let broker: LocalBroker;
let bridge: Tunnel;
let stateDir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  copyRepository(repo);
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-docs-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:docs` } });
  bridge = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(broker.url, "nats") });
  const { NATS_URL: _n, MORTARMQ_TOKEN: _t, ...rest } = process.env;
  env = { ...rest, WRANGLER_SEND_METRICS: "false", MORTARMQ_URL: broker.url, MORTARMQ_TOKEN: TOKEN, NATS_URL: `nats://127.0.0.1:${bridge.port}` };
});

afterAll(async () => {
  await bridge?.close();
  await broker?.stop();
  rmSync(repo, { recursive: true, force: true });
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/** `text` with what differs between runs replaced: addresses by their order of first appearance, times by T. */
function normalize(text: string): string {
  const seen = new Map<string, string>();
  return text
    .replace(/mq9\.[0-9a-f]{40}/g, (a) => {
      if (!seen.has(a)) seen.set(a, `<address ${seen.size + 1}>`);
      return seen.get(a)!;
    })
    .replace(/"create_time":\d+/g, '"create_time":T')
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

describe("client/mq9/README.md", () => {
  it("the example prints what the README shows, over http and over nats", async () => {
    const { exit, pairs } = await runDocument("client/mq9/README.md");
    expect(exit, pairs.map((p) => p[0]).join("\n----\n")).toBe(0);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]![0]).toBe(pairs[0]![1]);
  });
});
