import type { Env } from "../env";
import { objectName } from "../shared/names";
import type { TopicRegistry } from "./TopicRegistry";

/** The TopicRegistry of `tenant` (object name `registry/<tenant>`). */
export function registryStub(env: Env, tenant: string): DurableObjectStub<TopicRegistry> {
  return env.REGISTRY.get(env.REGISTRY.idFromName(objectName("registry", tenant)));
}
