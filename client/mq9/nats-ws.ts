/**
 * The `nats-ws` transport: the NATS client protocol over a WebSocket to the
 * broker's `GET /nats` (docs/nats.md), with the nats.ws package. Runs in
 * browsers and Node; Node 20 has no global WebSocket, so there the socket
 * comes from the `ws` package (node-websocket.ts, loaded only then).
 */
import { NatsTransport, natsConnectError, natsConnectOptions, type NatsConnectionLike } from "./nats";
import { nodeWebSocket } from "./node-websocket";
import type { Mq9Transport, TransportOptions } from "./transport";

/**
 * Connects to `url` (`ws(s)://host[:port]/nats`).
 * @throws Mq9ClientError unauthorized (token refused) or unavailable (not reachable)
 */
export async function openNatsWs(url: string, o: TransportOptions): Promise<Mq9Transport> {
  const { connect, headers } = await import("nats.ws");
  const wsFactory = typeof globalThis.WebSocket === "function" ? undefined : nodeWebSocket;
  let nc: NatsConnectionLike;
  try {
    const opts = { ...natsConnectOptions(url, o), ...(wsFactory ? { wsFactory } : {}) };
    nc = (await connect(opts as Parameters<typeof connect>[0])) as unknown as NatsConnectionLike;
  } catch (e) {
    throw natsConnectError(e, url);
  }
  return new NatsTransport("nats-ws", nc, headers, url);
}
