/**
 * The object calls of a MortarMQ connection's port (port.ts), executed with
 * Durable Object stubs: the tenant's TopicRegistry, the Partition and
 * ConsumerGroup objects of a topic incarnation. MortarSession adds the
 * tenant side (authenticate, admitPublish) and the socket side (send, close,
 * subscriptions). Every call to a topic's objects notes the topic's
 * location hint first (shared/location-hint.ts), so the objects a PUB or
 * SUB starts start where the topic was hinted — also for a TopicInfo the
 * session restored from its snapshot.
 */
import type { Env } from "../env";
import { groupStub } from "../group/stub";
import { partitionStub } from "../partition/stub";
import { registryStub } from "../registry/stub";
import type { DeclareResult, LookupResult, TopicInfo } from "../registry/rpc";
import type { AppendResult, DeliverResult, SettleResult } from "../partition/rpc";
import type { JoinRefused, JoinResult } from "../group/rpc";
import type { MortarPort } from "./port";
import { noteTopicHint } from "../shared/location-hint";

/** The Registry, Partition and ConsumerGroup calls of the port. */
export type ObjectCalls = Pick<MortarPort, "lookup" | "declare" | "append" | "deliver" | "settle" | "join" | "heartbeat" | "controlAck" | "leave" | "renew" | "expire">;

/** The object calls for the tenant `tenant()` returns (the connection's, once authenticated). */
export function stubCalls(env: Env, tenant: () => string): ObjectCalls {
  const partition = (t: TopicInfo, p: number) => {
    noteTopicHint(tenant(), t);
    return partitionStub(env, tenant(), t.incarnation, t.topicId, p);
  };
  const group = (t: TopicInfo, g: string) => {
    noteTopicHint(tenant(), t);
    return groupStub(env, tenant(), t.incarnation, t.topicId, g);
  };
  return {
    lookup: (topicId) => registryStub(env, tenant()).lookup(topicId) as Promise<LookupResult>,
    declare: (topic, partitionCount, flags, retention, mayCreate) => registryStub(env, tenant()).declare(topic, partitionCount, flags, retention, mayCreate) as Promise<DeclareResult>,
    append: (t, p, batch) => partition(t, p).append(batch) as Promise<AppendResult>,
    deliver: (t, p, req) => partition(t, p).deliver(req) as Promise<DeliverResult>,
    settle: (t, p, req) => partition(t, p).settle(req) as Promise<SettleResult>,
    join: (t, g, req) => group(t, g).join(req) as Promise<JoinResult | JoinRefused>,
    heartbeat: (t, g, memberId, membershipEpoch, assignmentEpoch, leave) => group(t, g).heartbeat(memberId, membershipEpoch, assignmentEpoch, leave),
    controlAck: (t, g, req) => group(t, g).controlAck(req),
    leave: (t, g, memberId, membershipEpoch) => group(t, g).leave(memberId, membershipEpoch),
    renew: (t, g, memberId, membershipEpoch) => group(t, g).renew(memberId, membershipEpoch),
    expire: (t, g, memberId, membershipEpoch) => group(t, g).expire(memberId, membershipEpoch),
  };
}
