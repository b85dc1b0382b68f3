import type { Env } from "../env";
import type { MortarSession } from "./MortarSession";

/** The MortarSession object with id `sessionId` (hex, from `ctx.id.toString()`): for the calls back of rpc.ts. */
export function sessionStub(env: Env, sessionId: string): DurableObjectStub<MortarSession> {
  return env.SESSION.get(env.SESSION.idFromString(sessionId));
}

/** A new MortarSession object (a fresh unique id): one per connection, opened with the WebSocket upgrade. */
export function newSessionStub(env: Env): DurableObjectStub<MortarSession> {
  return env.SESSION.get(env.SESSION.newUniqueId());
}
