/**
 * The `nats` transport: the NATS client protocol over TCP with the `nats`
 * npm package (Node only), through the broker's NATS TCP bridge
 * (`mortarmq bridge --nats`, started by `npm start` on 127.0.0.1:4222;
 * docs/nats.md). Browsers and Workers use `http` or `nats-ws`
 * (package.json's `browser` field maps this module to nats-tcp.browser.ts).
 */
import { NatsTransport, natsConnectError, natsConnectOptions, type NatsConnectionLike } from "./nats";
import type { Mq9Transport, TransportOptions } from "./transport";

/**
 * Connects to `server` (`host:port`).
 * @throws Mq9ClientError unauthorized (token refused) or unavailable (not reachable)
 */
export async function openNatsTcp(server: string, o: TransportOptions): Promise<Mq9Transport> {
  const { connect, headers } = await import("nats");
  let nc: NatsConnectionLike;
  try {
    nc = (await connect(natsConnectOptions(server, o))) as unknown as NatsConnectionLike;
  } catch (e) {
    throw natsConnectError(e, `nats://${server}`);
  }
  return new NatsTransport("nats", nc, headers, `nats://${server}`);
}
