import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { objectName } from "../shared/names";
import type { AgentRegistry } from "./AgentRegistry";

/** The AgentRegistry of `tenant` (object name `agents/<tenant>`). */
export function agentRegistryStub(env: Env, tenant: string): DurableObjectStub<AgentRegistry> {
  return tenantObject(env, env.AGENTS, tenant, objectName("agents", tenant));
}
