import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { partitionName } from "../shared/names";
import { topicObjectOptions } from "../shared/location-hint";
import type { Partition } from "./Partition";

/**
 * The Partition object of (tenant, topic incarnation, topic_id, partition).
 * The incarnation makes a topic recreated under the same name (and maybe
 * the same recycled topic_id) use fresh objects. Started with the topic's
 * location hint when this isolate knows it (shared/location-hint.ts).
 */
export function partitionStub(env: Env, tenant: string, incarnation: number, topicId: number, partition: number): DurableObjectStub<Partition> {
  return tenantObject(env, env.PARTITION, tenant, partitionName({ tenant, incarnation, topicId, partition }), topicObjectOptions(tenant, incarnation));
}
