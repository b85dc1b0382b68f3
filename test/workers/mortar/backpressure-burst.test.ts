/**
 * A burst of 200 pipelined 1 MiB PUBs on one connection (issue 9;
 * docs/protocol.md "Backpressure bounds"): every PUB is answered, with OK
 * or BACKPRESSURE; every OK is stored; and the session never holds more
 * than the documented bound of request bytes (read through its `memory()`
 * RPC), instead of buffering the 200 MiB.
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import type { MortarSession } from "../../../objects/session/MortarSession";
import { MAX_PENDING_BYTES } from "../../../objects/session/connection";
import { ErrorCode, Op, encodeFrame } from "../../../wire/mortar";
import { WsConn, pubFrame } from "../helpers/mortar-ws";

const testEnv = env as unknown as Env;
const MIB = 1024 * 1024;
const COUNT = 200;

describe("burst of 200 × 1 MiB PUBs on one connection", () => {
  it("gets OK or BACKPRESSURE for each, stores every OK, and holds at most 32 MiB (+ one frame) of requests", async () => {
    const ns = testEnv.SESSION;
    const stub = ns.get(ns.newUniqueId());
    const c = await WsConn.open(stub);
    await c.connect();
    const topic = `burst-${Date.now().toString(36)}`;
    const { topicId } = await c.declare(topic, 1);
    const value = new Uint8Array(MIB).fill(0x62);

    // The whole burst reaches the session back to back, in 1 MiB WebSocket messages, as workerd delivers it.
    await runInDurableObject(stub, (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      for (let i = 0; i < COUNT; i++) {
        const frame = encodeFrame(pubFrame(topicId, 0, value));
        for (let o = 0; o < frame.length; o += MIB) obj.webSocketMessage(ws, frame.slice(o, o + MIB).buffer);
      }
    });
    const answers = await c.take(COUNT, 60_000);
    const ok = answers.filter((f) => f.op === Op.OK).length;
    const refused = answers.filter((f) => f.op === Op.ERR && f.code === ErrorCode.BACKPRESSURE).length;
    expect(ok + refused).toBe(COUNT);
    expect(ok).toBeGreaterThanOrEqual(1);
    expect(c.closed).toBeNull(); // the soft bound refuses; it does not close

    const mem = await stub.memory();
    expect(mem).not.toBeNull();
    expect(mem!.highWaterPendingBytes).toBeLessThanOrEqual(MAX_PENDING_BYTES + MIB + 64);
    expect(mem!.highWaterPendingBytes).toBeGreaterThan(MIB); // it did hold a pipeline's worth
    expect(mem!.pendingBytes).toBe(0);
    expect(mem!.partialFrameBytes).toBe(0);

    const stats = (await (await SELF.fetch("http://broker/stats")).json()) as { topics: { name: string; partitions: { high_watermark: number }[] }[] };
    expect(stats.topics.find((t) => t.name === topic)!.partitions[0]!.high_watermark).toBe(ok);
    c.close();
  }, 120_000);
});
