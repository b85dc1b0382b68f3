/**
 * Which socket `mortarmq dev`'s HTTP port is (client/local/miniflare-host.ts),
 * seen from a client: NATS INFO `client_ip` on a WebSocket to `/nats`.
 * - On 127.0.0.1 (the default) the port is a direct socket to the Worker,
 *   which names no client address: `client_ip` is the var
 *   LOCAL_CLIENT_ADDRESS the launcher sets (test/e2e/nats-go.test.ts checks
 *   the same with nats.go).
 * - On 0.0.0.0 it stays Miniflare's entry socket, whose entry worker passes
 *   the real client address as CF-Connecting-IP.
 * Each side is checked with LOCAL_CLIENT_ADDRESS forced empty (`--var`
 * overrides what the launcher sets): the direct socket then gives no
 * client_ip, the entry socket still does — so the loopback answer comes from
 * the var and the wildcard one from the header.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";

const dir = mkdtempSync(join(tmpdir(), "mortarmq-http-socket-"));
const brokers: LocalBroker[] = [];

afterAll(async () => {
  await Promise.all(brokers.map((b) => b.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** The `client_ip` of the INFO a WebSocket to `/nats` on `port` receives first (null when INFO has none). */
async function infoClientIp(port: number): Promise<string | null> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/nats`);
  try {
    const first = await new Promise<string>((res, rej) => ws.once("message", (d) => res(String(d))).once("error", rej));
    expect(first.startsWith("INFO ")).toBe(true);
    return (JSON.parse(first.slice(5)) as { client_ip?: string }).client_ip ?? null;
  } finally {
    ws.close();
  }
}

describe("mortarmq dev HTTP port: direct socket on loopback, entry socket elsewhere", () => {
  it("on 127.0.0.1: client_ip is the loopback address the launcher names", async () => {
    const b = await startLocalBroker({ stateDir: join(dir, "loopback"), port: 0 });
    brokers.push(b);
    expect(await infoClientIp(b.port)).toBe("127.0.0.1");
  });

  it("on 0.0.0.0: the entry socket's CF-Connecting-IP gives client_ip without LOCAL_CLIENT_ADDRESS", async () => {
    const b = await startLocalBroker({ stateDir: join(dir, "wildcard"), port: 0, host: "0.0.0.0", vars: { LOCAL_CLIENT_ADDRESS: "" } });
    brokers.push(b);
    expect(await infoClientIp(b.port)).toBe("127.0.0.1");
  });

  it("on 127.0.0.1 with LOCAL_CLIENT_ADDRESS overridden empty: no client_ip (the direct socket names none itself)", async () => {
    const b = await startLocalBroker({ stateDir: join(dir, "loopback-novar"), port: 0, vars: { LOCAL_CLIENT_ADDRESS: "" } });
    brokers.push(b);
    expect(await infoClientIp(b.port)).toBeNull();
  });
});
