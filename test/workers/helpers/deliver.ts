/**
 * Test helper: hands WebSocket messages to a Durable Object's real
 * `webSocketMessage` handler, in order and back to back, with the server end
 * of the WebSocket the object accepted (what it answers goes to the test's
 * client end as usual).
 *
 * Why not `ws.send()` from the test for a stream cut into several messages:
 * inside @cloudflare/vitest-pool-workers every hibernatable WebSocket event
 * goes through the pool's Durable Object wrapper, which awaits a module
 * import (a request to the pool's runner object) before it calls the
 * handler, so messages sent back to back can reach the handler out of order
 * (docs/testing.md). workerd itself calls the handler in arrival order; the
 * e2e tests send cut streams from real clients to `wrangler dev`.
 *
 * This calls the handler the way workerd does: one call per message, in
 * order, each started without waiting for the previous one to settle (so a
 * handler that awaits anything before taking its chunk would be caught
 * reordering). Resolves once every call settled.
 */
import { runInDurableObject } from "cloudflare:test";
import type { DurableObject } from "cloudflare:workers";

/** A Durable Object with a Hibernation API message handler. */
type WebSocketObject = DurableObject & {
  webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): void | Promise<void>;
};

/** Delivers `messages` (binary or text) to the object behind `stub`, which must have accepted exactly one WebSocket. */
export async function deliverInOrder<T extends WebSocketObject>(stub: DurableObjectStub<T>, messages: readonly (Uint8Array | string)[]): Promise<void> {
  await runInDurableObject(stub, async (obj: T, state) => {
    const sockets = state.getWebSockets();
    if (sockets.length !== 1) throw new Error(`expected one accepted WebSocket, found ${sockets.length}`);
    const ws = sockets[0]!;
    const calls = messages.map((m) => obj.webSocketMessage(ws, typeof m === "string" ? m : m.slice().buffer));
    await Promise.all(calls);
  });
}

/** Cuts `bytes` into messages of `size` bytes (the last may be shorter). */
export function cut(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let o = 0; o < bytes.length; o += size) out.push(bytes.subarray(o, o + size));
  return out;
}
