import type { Env } from "../env";
import { objectName } from "../shared/names";
import type { AgentRegistry } from "./AgentRegistry";

/** The AgentRegistry of `tenant` (object name `agents/<tenant>`). */
export function agentRegistryStub(env: Env, tenant: string): DurableObjectStub<AgentRegistry> {
  return env.AGENTS.get(env.AGENTS.idFromName(objectName("agents", tenant)));
}
