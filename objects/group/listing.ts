/**
 * The consumer groups of one topic (`GET /v0/topics/:topic/groups`,
 * docs/groups.md): the names the TopicRegistry recorded (every group that
 * joined since group registration exists) and every group with a position
 * at one of the topic's partitions (older groups), each with its members,
 * pause, lag and deliveries in flight.
 *
 * Within a request's object-call budget (DESIGN.md §10: ≤ 100): only the
 * partitions the TopicRegistry knows were written are read (an unwritten
 * partition has no positions and nothing to lag), at most
 * LIST_PARTITIONS of them, and at most LIST_GROUPS groups' `info()`; past
 * either bound the listing is marked `truncated` (lag then counts only the
 * partitions read; the groups past the bound are left out).
 */
import type { Env } from "../env";
import type { GroupSummary } from "../../wire/admin/groups";
import type { TopicInfo } from "../registry/rpc";
import { registryStub } from "../registry/stub";
import { readWrittenStats } from "../shared/written-stats";
import { mapLimit } from "../shared/concurrency";
import { withDeadline } from "../session/faults";
import { groupStub } from "./stub";

/** Object calls in flight at once. */
const FANOUT = 16;

/** Written partitions a listing reads at most. */
export const LIST_PARTITIONS = 40;
/** Groups a listing reads at most (one `info()` each). */
export const LIST_GROUPS = 40;

/** The groups of one topic; `truncated` when a bound left partitions or groups out. */
export interface GroupListing {
  groups: GroupSummary[];
  truncated: boolean;
}

/**
 * The groups of `topic` in `tenant`, sorted by name. Costs at most
 * 2 + LIST_PARTITIONS + LIST_GROUPS object calls.
 * @throws when an object does not answer
 */
export async function listGroups(env: Env, tenant: string, topic: TopicInfo, now = Date.now()): Promise<GroupListing> {
  const [recorded, w] = await Promise.all([
    withDeadline(registryStub(env, tenant).groupNames(topic.incarnation, topic.topicId)),
    readWrittenStats(env, tenant, [topic], null, LIST_PARTITIONS),
  ]);
  const names = new Set(recorded);
  const stats = [...w.read.values()];
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
  const all = [...names].sort();
  const sorted = all.slice(0, LIST_GROUPS);
  const infos = await mapLimit(sorted, FANOUT, (g) => withDeadline(groupStub(env, tenant, topic.incarnation, topic.topicId, g).info()));
  const out: GroupSummary[] = [];
  sorted.forEach((group, i) => {
    const info = infos[i]!;
    const pos = positions.get(group);
    if (info.partitionCount === 0 && !pos) return; // recorded, but never joined (or deleted meanwhile)
    // A written partition the group never owned yet counts its whole log as lag (as in describe).
    const unseen = stats.reduce((n, s) => n + (s.groups.some((g) => g.group === group) ? 0 : s.highWatermark), 0);
    out.push({
      group,
      members: info.members.length,
      paused_until: info.pausedUntil !== null && info.pausedUntil > now ? new Date(info.pausedUntil).toISOString() : null,
      lag: (pos?.lag ?? 0) + unseen,
      in_flight: pos?.inFlight ?? 0,
    });
  });
  return { groups: out, truncated: w.next !== null || all.length > sorted.length };
}

/**
 * True when group `group` of `topic` may exist, decided without starting
 * its ConsumerGroup object (a read of a missing group must not create one):
 * the registry's group index, else (a group from before group registration
 * joins the index only on its next join) a position of the group at one of
 * the first LIST_PARTITIONS written partitions. A pre-registration group
 * with positions only past those is not found (404) until it joins again.
 * @throws when an object does not answer
 */
export async function groupKnown(env: Env, tenant: string, topic: TopicInfo, group: string): Promise<boolean> {
  if (await withDeadline(registryStub(env, tenant).hasGroup(topic.incarnation, topic.topicId, group))) return true;
  const w = await readWrittenStats(env, tenant, [topic], null, LIST_PARTITIONS);
  for (const s of w.read.values()) if (s.groups.some((g) => g.group === group)) return true;
  return false;
}
