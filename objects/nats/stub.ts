import type { Env } from "../env";
import type { NatsSession } from "./NatsSession";

/** A new NatsSession object (a fresh unique id): one per connection, opened with the WebSocket upgrade (rpc.ts). */
export function newNatsSessionStub(env: Env): DurableObjectStub<NatsSession> {
  return env.NATS_SESSION.get(env.NATS_SESSION.newUniqueId());
}
