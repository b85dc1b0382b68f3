import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { groupName } from "../shared/names";
import { topicObjectOptions } from "../shared/location-hint";
import type { ConsumerGroup } from "./ConsumerGroup";

/**
 * The ConsumerGroup object of (tenant, topic incarnation, topic_id, group
 * name). The incarnation makes a group of a recreated topic start afresh.
 * Started with the topic's location hint when this isolate knows it
 * (shared/location-hint.ts).
 */
export function groupStub(env: Env, tenant: string, incarnation: number, topicId: number, group: string): DurableObjectStub<ConsumerGroup> {
  return tenantObject(env, env.GROUP, tenant, groupName({ tenant, incarnation, topicId, group }), topicObjectOptions(tenant, incarnation));
}
