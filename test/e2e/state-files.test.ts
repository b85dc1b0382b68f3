/**
 * Requests that create nothing leave nothing in the state directory (issue
 * 28 items 2 and 4), against a real local broker with tokens: unauthenticated
 * connections on every transport, a made-up issued-style token, reads of a
 * missing consumer group and of never-created mailboxes on every surface
 * (mq9 HTTP, console API, MCP). workerd makes a SQLite file for every object
 * it starts; the objects write nothing for these, and the launcher's sweep
 * (client/local/state-reaper.ts, here every second) removes the files of
 * objects that hold nothing once workerd has let them go. The state
 * directory's file count after the attempts is the count after one warm-up
 * round of the same attempts (shared objects those may start stay).
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MortarClient } from "../../client/sdk";
import { formatIssuedToken } from "../../wire/admin/tenants";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { until } from "../fixtures/until";

const TOKEN = "files-token";
const ATTEMPTS = 20;
const e2e = useLocalBroker("state-files", { vars: { AUTH_TOKENS: `${TOKEN}:files` }, natsBridge: true, reapEverySeconds: 1 });

/** Every file under `dir`, as paths relative to it. */
function files(dir: string, rel = ""): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(dir, join(rel, e.name)) : [join(rel, e.name)]);
}

/** Opens a WebSocket to `path`, optionally sends `first`, waits for one message (or the close), then closes it. */
async function wsOnce(path: string, first?: string | Uint8Array): Promise<void> {
  const ws = new WebSocket(e2e.broker.url.replace(/^http/, "ws") + path);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => {
      if (first !== undefined) ws.send(first);
      else resolve();
    });
    ws.once("message", () => resolve());
    ws.once("close", () => resolve());
    ws.once("error", reject);
  });
  ws.close();
  if (ws.readyState !== WebSocket.CLOSED) await new Promise((r) => ws.once("close", r));
}

/** A NATS TCP connection through the bridge that reads INFO and closes without CONNECT. */
async function natsTcpOnce(): Promise<void> {
  const s = tcpConnect(e2e.natsBridge.port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    s.once("data", () => resolve());
    s.once("error", reject);
  });
  s.destroy();
}

/** An HTTP request; answers its status (the body read to the end). */
async function http(path: string, init: RequestInit & { token?: string } = {}): Promise<number> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${init.token ?? TOKEN}`);
  const res = await fetch(`${e2e.broker.url}${path}`, { ...init, headers });
  await res.arrayBuffer();
  return res.status;
}

const post = (path: string, body: unknown, token?: string) =>
  http(path, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify(body), token });

const rnd = () => randomBytes(6).toString("hex");

/** One attempt of every kind; `i` makes names unique. Each answers a refusal or a not-found. */
async function round(i: number): Promise<void> {
  const box = `never.${rnd()}.n${i + 1}`;
  await Promise.all([
    wsOnce("/v0/mortar"), // never sends CONNECT
    MortarClient.connect(e2e.broker.url, { token: "wrong-token" }).then((c) => c.close(), () => {}),
    wsOnce("/nats"), // reads INFO, never sends CONNECT
    natsTcpOnce(),
    http("/v0/whoami", { token: formatIssuedToken(`t${rnd()}`, rnd(), randomBytes(32)) }).then((s) => expect(s).toBe(401)),
    http(`/v0/topics/files.events/groups/missing-${rnd()}`).then((s) => expect(s).toBe(404)),
    post(`/mq9/$mq9.AI.MSG.FETCH.${box}`, { group_name: "g" }).then((s) => expect(s).toBe(404)),
    post(`/mq9/$mq9.AI.MSG.QUERY.${box}`, {}).then((s) => expect(s).toBe(404)),
    post(`/mq9/$mq9.AI.PUSH.LIST.${box}`, {}).then((s) => expect(s).toBe(404)),
    http(`/v0/mailboxes/${box}`).then((s) => expect(s).toBe(404)),
    post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "mq9_query_messages", arguments: { mail_address: box } } }),
  ]);
}

describe("the state directory under requests that create nothing (#28 items 2, 4)", () => {
  it(`${ATTEMPTS} attempts of each of 11 kinds leave its file count unchanged`, async () => {
    const dir = e2e.broker.stateDir;
    const client = await MortarClient.connect(e2e.broker.url, { token: TOKEN });
    await client.declare("files.events", 1);
    await client.close();
    await round(-1); // shared objects the attempts may start (the tenant's mailbox index, usage) stay from here on
    const settled = async () => files(dir).filter((f) => /Session|Mailbox\/|ConsumerGroup/.test(f) && /[0-9a-f]{64}\.sqlite/.test(f)).length === 0;
    await until(settled, 60_000, 250);
    const before = files(dir).sort();
    for (let i = 0; i < ATTEMPTS; i++) await round(i);
    const peak = files(dir).length;
    expect(peak).toBeGreaterThan(before.length + ATTEMPTS); // each attempt made its files
    await until(async () => files(dir).length <= before.length, 60_000, 250);
    expect(files(dir).sort()).toEqual(before);
  });
});
