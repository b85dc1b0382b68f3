/**
 * Stand-in for nats-tcp.ts in browser bundles (package.json `browser`
 * field): TCP is not available there, so the `nats` npm package is not
 * bundled; use the `http` or `nats-ws` transport.
 */
import { Mq9ClientError } from "./errors";
import type { Mq9Transport, TransportOptions } from "./transport";

/** @throws Mq9ClientError invalid_request, always */
export async function openNatsTcp(_server: string, _o: TransportOptions): Promise<Mq9Transport> {
  throw Mq9ClientError.client('the "nats" transport (TCP) needs Node; in a browser use "http" or "nats-ws"');
}
