/**
 * End-to-end in a real browser: the mq9 client's page script
 * (test/e2e/browser/mq9-page.ts) bundled with esbuild for the browser and
 * run in headless Chromium (Debian `chromium`, driven by playwright-core)
 * from a page on another origin than the broker — over `http` (fetch, CORS)
 * and `nats-ws` (WebSocket /nats). The broker requires a token and allows
 * only the page's origin (CORS_ORIGINS); a page on an origin it does not
 * list cannot call it.
 */
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, startLocalBroker, type LocalBroker } from "../../client/local/broker";

/** Chromium as the guide sets it up (docs/testing.md). */
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const TOKEN = "browser-token";

let broker: LocalBroker;
let stateDir: string;
let browser: Browser;
let bundle: { js: string; inputs: string[] };
const servers: Server[] = [];

/** Serves the page and the bundle on a port of its own (= an origin of its own). */
async function pageServer(): Promise<string> {
  const html = '<!doctype html><meta charset="utf-8"><title>mq9 page</title><script type="module" src="/app.js"></script>';
  const server = createServer((req, res) => {
    if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(bundle.js);
    else if (req.url === "/") res.writeHead(200, { "content-type": "text/html" }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let allowedOrigin: string;
let otherOrigin: string;

beforeAll(async () => {
  const out = await build({
    entryPoints: [resolve(PACKAGE_ROOT, "test/e2e/browser/mq9-page.ts")],
    bundle: true, platform: "browser", format: "esm", target: "es2022", write: false, metafile: true, logLevel: "silent",
  });
  bundle = { js: out.outputFiles[0]!.text, inputs: Object.keys(out.metafile.inputs) };
  allowedOrigin = await pageServer();
  otherOrigin = await pageServer();
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-browser-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:web`, CORS_ORIGINS: allowedOrigin } });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await broker?.stop();
  for (const s of servers) await new Promise((r) => s.close(r));
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/** Opens the page of `origin` and runs `fn` (a global of the page script) in it. */
async function inPage(origin: string, fn: "mq9Scenario" | "mq9Probe", ...args: string[]): Promise<{ result: unknown; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => "mq9Scenario" in globalThis);
    const result = await page.evaluate(([name, a]) => (globalThis as unknown as Record<string, (...x: string[]) => Promise<unknown>>)[name]!(...a), [fn, args] as const);
    return { result, errors };
  } finally {
    await page.close();
  }
}

describe("the mq9 client in a browser", () => {
  it("bundles for the browser without the Node-only TCP transport and without ws", () => {
    expect(bundle.inputs).toContain("client/mq9/nats-tcp.browser.ts");
    expect(bundle.inputs).toContain("client/mq9/node-websocket.browser.ts");
    expect(bundle.inputs.some((i) => i.startsWith("node_modules/nats/"))).toBe(false);
    // browsers have a global WebSocket: the `ws` fallback of Node 20 is a stub there, and `ws` is not bundled at all
    expect(bundle.inputs.some((i) => i.startsWith("node_modules/ws/"))).toBe(false);
  });

  it.each(["http", "nats-ws"] as const)("every kind of call works from another origin over %s", async (transport) => {
    const { result, errors } = await inPage(allowedOrigin, "mq9Scenario", broker.url, TOKEN, transport);
    expect(errors).toEqual([]);
    expect(result).toEqual({
      transport,
      create: true,
      sendText: { msgId: 0 },
      sendBytes: { msgId: 1 },
      fetched: [
        [0, "urgent", ["web"], expect.stringMatching(/^web\.[0-9a-f]{12}\.replies$/), "page-1", [...Buffer.from("héllo from a page")]],
        [1, "normal", [], null, null, [0, 1, 2, 250, 255]],
      ],
      text: "héllo from a page",
      afterAck: 0,
      queryCorrelation: [0],
      duplicate: { kind: "mailbox_exists", source: "broker", message: expect.stringMatching(/^mailbox web\.[0-9a-f]{12} already exists$/) },
      missing: { kind: "mailbox_not_found", source: "broker", message: expect.stringMatching(/^mailbox web\.[0-9a-f]{12}\.nobody does not exist$/) },
      request: ["pong: ping", true],
      discover: true,
      unregister: { removed: true },
    });
  });

  it("a page on an origin the broker does not allow cannot call it over http (the browser blocks the answer)", async () => {
    const allowed = await inPage(allowedOrigin, "mq9Probe", broker.url, TOKEN);
    expect(allowed.result).toMatchObject({ kind: "mailbox_not_found", source: "broker" });
    const other = await inPage(otherOrigin, "mq9Probe", broker.url, TOKEN);
    expect(other.result).toMatchObject({ kind: "unavailable", source: "connection" });
  });
});
