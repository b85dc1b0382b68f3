/**
 * The consumer groups of one topic (`GET /v0/topics/:topic/groups`,
 * docs/groups.md): the names the TopicRegistry recorded (every group that
 * joined since group registration exists) and every group with a position
 * at one of the topic's partitions (older groups), each with its members,
 * pause, lag and deliveries in flight.
 */
import type { Env } from "../env";
import type { GroupSummary } from "../../wire/admin/groups";
import type { TopicInfo } from "../registry/rpc";
import type { PartitionStats } from "../partition/rpc";
import { registryStub } from "../registry/stub";
import { partitionStub } from "../partition/stub";
import { mapLimit, range } from "../shared/concurrency";
import { withDeadline } from "../session/faults";
import { groupStub } from "./stub";

/** Object calls in flight at once. */
const FANOUT = 16;

/**
 * The groups of `topic` in `tenant`, sorted by name. Costs one registry
 * call, one call per partition and one per group.
 * @throws when an object does not answer
 */
export async function listGroups(env: Env, tenant: string, topic: TopicInfo, now = Date.now()): Promise<GroupSummary[]> {
  const names = new Set(await withDeadline(registryStub(env, tenant).groupNames(topic.incarnation, topic.topicId)));
  const stats = await mapLimit(range(topic.partitionCount), FANOUT, (p) =>
    withDeadline(partitionStub(env, tenant, topic.incarnation, topic.topicId, p).stats() as Promise<PartitionStats>));
  const positions = new Map<string, { lag: number; inFlight: number }>();
  for (const s of stats) {
    for (const g of s.groups) {
      names.add(g.group);
      const acc = positions.get(g.group) ?? { lag: 0, inFlight: 0 };
      acc.lag += Math.max(0, s.highWatermark - g.committedFloor);
      acc.inFlight += g.inFlight;
      positions.set(g.group, acc);
    }
  }
  const sorted = [...names].sort();
  const infos = await mapLimit(sorted, FANOUT, (g) => withDeadline(groupStub(env, tenant, topic.incarnation, topic.topicId, g).info()));
  const out: GroupSummary[] = [];
  sorted.forEach((group, i) => {
    const info = infos[i]!;
    const pos = positions.get(group);
    if (info.partitionCount === 0 && !pos) return; // recorded, but never joined (or deleted meanwhile)
    // A partition the group never owned yet counts its whole log as lag (as in describe).
    const unseen = stats.reduce((n, s) => n + (s.groups.some((g) => g.group === group) ? 0 : s.highWatermark), 0);
    out.push({
      group,
      members: info.members.length,
      paused_until: info.pausedUntil !== null && info.pausedUntil > now ? new Date(info.pausedUntil).toISOString() : null,
      lag: (pos?.lag ?? 0) + unseen,
      in_flight: pos?.inFlight ?? 0,
    });
  });
  return out;
}
