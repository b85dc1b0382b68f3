import type { Env } from "../env";
import { objectName } from "../shared/names";
import type { TopicRegistry } from "./TopicRegistry";

/** The TopicRegistry of `tenant` (object name `registry/<tenant>`). */
export function registryStub(env: Env, tenant: string): DurableObjectStub<TopicRegistry> {
  const ns = env.REGISTRY as unknown as DurableObjectNamespace<TopicRegistry>;
  return ns.get(ns.idFromName(objectName("registry", tenant)));
}
