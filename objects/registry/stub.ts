import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { objectName } from "../shared/names";
import type { TopicRegistry } from "./TopicRegistry";

/** The TopicRegistry of `tenant` (object name `registry/<tenant>`). */
export function registryStub(env: Env, tenant: string): DurableObjectStub<TopicRegistry> {
  return tenantObject(env, env.REGISTRY, tenant, objectName("registry", tenant));
}
