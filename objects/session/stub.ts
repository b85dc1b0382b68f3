import type { Env } from "../env";
import type { MortarSession } from "./MortarSession";

/** The MortarSession object with id `sessionId` (hex, from `ctx.id.toString()`). */
export function sessionStub(env: Env, sessionId: string): DurableObjectStub<MortarSession> {
  return env.SESSION.get(env.SESSION.idFromString(sessionId));
}
