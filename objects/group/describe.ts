/**
 * The consumer-group document of `GET /v0/topics/:topic/groups/:group`
 * (wire/admin/groups.ts, docs/groups.md), assembled from the group's own
 * state and each partition's view of it. Pure.
 */
import { StartPolicy } from "../../wire/mortar/constants";
import type { GroupPartitionDoc } from "../../wire/admin/groups";
import type { GroupStatus } from "../partition/rpc";
import type { GroupIdentity } from "../shared/names";
import type { GroupDescription, GroupInfo } from "./rpc";

/**
 * The document of group `id` from its `info` and the partitions'
 * `statuses` (index = partition). `now` decides whether a pause is still in
 * force.
 */
export function describeGroup(id: GroupIdentity, info: GroupInfo, statuses: readonly GroupStatus[], now: number): GroupDescription {
  const partitions: GroupPartitionDoc[] = info.partitions.map((p, i) => {
    const st = statuses[i];
    const c = st?.cursor ?? null;
    const hw = st?.highWatermark ?? 0;
    const floor = c ? Math.max(0, c.ackFloor - 1) : 0;
    return {
      partition: p.partition,
      owner: p.owner,
      ownership_epoch: p.ownershipEpoch,
      revoking: p.revoking,
      committed_floor: floor,
      next_sequence: c?.nextSequence ?? 0,
      high_watermark: hw,
      lag: c ? Math.max(0, hw - floor) : hw,
      in_flight: c?.inFlight ?? 0,
      pending_redelivery: c?.pendingRedelivery ?? 0,
      pending_dead_letter: c?.pendingDeadLetter ?? 0,
      dead_lettered: c?.deadLettered ?? 0,
      delivered: c?.delivered ?? 0,
      acked: c?.acked ?? 0,
      reset_pending: p.resetPending,
    };
  });
  const sum = (f: (p: GroupPartitionDoc) => number) => partitions.reduce((n, p) => n + f(p), 0);
  return {
    tenant: id.tenant,
    topic_id: id.topicId,
    group: id.group,
    partition_count: info.partitionCount,
    start_policy: info.startPolicy === StartPolicy.LATEST ? "latest" : "earliest",
    paused_until: info.pausedUntil !== null && info.pausedUntil > now ? new Date(info.pausedUntil).toISOString() : null,
    members: info.members.map((m) => ({
      member_id: m.memberId, membership_epoch: m.membershipEpoch, assignment_epoch: m.assignmentEpoch, partitions: m.partitions,
    })),
    partitions,
    lag: sum((p) => p.lag),
    in_flight: sum((p) => p.in_flight),
    dead_lettered: sum((p) => p.dead_lettered),
  };
}
