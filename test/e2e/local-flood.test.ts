/**
 * The local runtime under a flood (#14 items 3 and 4), against a real local
 * broker with short limits so the test needs no long waits:
 * - a MortarMQ connection that never sends CONNECT gets CONNECTION_TIMEOUT
 *   at the CONNECT deadline (MORTAR_CONNECT_TIMEOUT_MS, here 1.5 s) and
 *   the WebSocket close frame right after it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { ErrorCode, FrameDecoder, Op, type Frame } from "../../wire/mortar";

const CONNECT_TIMEOUT_MS = 1_500;
let stateDir: string;
let broker: LocalBroker;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-flood-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { MORTAR_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS) } });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("CONNECT deadline (#14 item 4)", () => {
  it("a connection that never sends CONNECT gets CONNECTION_TIMEOUT at the deadline, then the close frame", async () => {
    const opened = Date.now();
    const ws = new WebSocket(`${broker.url.replace(/^http/, "ws")}/v0/mortar`, { perMessageDeflate: false });
    const dec = new FrameDecoder();
    const got: { frame: Frame; at: number; state: number }[] = [];
    ws.on("message", (d: Buffer) => {
      for (const frame of dec.push(new Uint8Array(d)).frames) got.push({ frame, at: Date.now(), state: ws.readyState });
    });
    // ws emits "close" once the server also ended the TCP connection; readyState is CLOSING from the close frame on
    let closeFrameAt = 0;
    const watch = setInterval(() => { if (!closeFrameAt && ws.readyState >= WebSocket.CLOSING) closeFrameAt = Date.now(); }, 10);
    const closed = await new Promise<{ code: number; at: number }>((resolve, reject) => {
      ws.once("error", reject);
      ws.once("close", (code) => resolve({ code, at: Date.now() }));
    }).finally(() => clearInterval(watch));
    expect(got).toHaveLength(1);
    const { frame: err, at: errAt } = got[0]!;
    expect(err.op).toBe(Op.ERR);
    if (err.op !== Op.ERR) return;
    expect(err.code).toBe(ErrorCode.CONNECTION_TIMEOUT);
    expect(new TextDecoder().decode(err.message)).toMatch(/no CONNECT within 1\.5 s/);
    expect(errAt - opened).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS);
    expect(got[0]!.state).toBe(WebSocket.OPEN); // the ERR comes before the close frame
    expect(closeFrameAt).toBeGreaterThanOrEqual(errAt);
    expect(closed.code).toBe(1008);
    expect(closed.at).toBeGreaterThanOrEqual(closeFrameAt);
  });
});
