/**
 * Partition stats for the read paths (`/stats`, the console's topic pages,
 * the group listing) within a request's object-call budget (DESIGN.md §10:
 * no request fans out to more than 100 objects): the TopicRegistry names the
 * partitions that may hold data (`writtenOf`), only those are asked
 * `stats()`, and every other partition answers EMPTY_STATS without a call —
 * so a read never starts an empty Partition object.
 */
import type { Env } from "../env";
import type { PartitionStats } from "../partition/rpc";
import type { TopicInfo, WrittenPartition } from "../registry/rpc";
import { registryStub } from "../registry/stub";
import { partitionStub } from "../partition/stub";
import { mapLimit } from "./concurrency";
import { withDeadline } from "../session/faults";

/** Object calls in flight at once. */
const FANOUT = 16;

/** What a partition that never stored anything reports (nothing appended, no groups). */
export const EMPTY_STATS: PartitionStats = Object.freeze({ firstSequence: 1, highWatermark: 0, sizeBytes: 0, producers: 0, groups: [] }) as PartitionStats;

/** A position in a tenant's partitions: partition `partition` of topic `topicId`. */
export interface PartitionCursor {
  topicId: number;
  partition: number;
}

/** The stats read for one page. */
export interface WrittenStats {
  /** Stats of the written partitions read, by `topicId:partition`; any other partition is EMPTY_STATS. */
  read: Map<string, PartitionStats>;
  /** The first written partition not read (the next page starts there), or null when every one was read. */
  next: PartitionCursor | null;
}

/** Map key of a partition in WrittenStats.read. */
export function partKey(topicId: number, partition: number): string {
  return `${topicId}:${partition}`;
}

/** The stats of `partition` of `topicId` in `w` (EMPTY_STATS when it was not read: never written). */
export function statsOf(w: WrittenStats, topicId: number, partition: number): PartitionStats {
  return w.read.get(partKey(topicId, partition)) ?? EMPTY_STATS;
}

/** Index in `topics` (ascending topic ids) of the first topic at or after `from` (0 for null; `topics.length` when none). */
export function firstTopicAt(topics: readonly TopicInfo[], from: PartitionCursor | null): number {
  if (from === null) return 0;
  const i = topics.findIndex((t) => t.topicId >= from.topicId);
  return i < 0 ? topics.length : i;
}

/**
 * Reads `stats()` of at most `limit` written partitions of `topics` (in
 * ascending topic-id order), starting at `from` (null = the first topic's
 * partition 0; topics below `from.topicId` are skipped). Costs one
 * registry call plus one call per partition read.
 * @throws when an object does not answer in time
 */
export async function readWrittenStats(
  env: Env, tenant: string, topics: readonly TopicInfo[], from: PartitionCursor | null, limit: number,
): Promise<WrittenStats> {
  const query = topics.slice(firstTopicAt(topics, from)).map((t) => ({
    incarnation: t.incarnation, topicId: t.topicId, partitionCount: t.partitionCount, from: from && t.topicId === from.topicId ? from.partition : 0,
  }));
  const written = query.length === 0 ? [] : await withDeadline(registryStub(env, tenant).writtenOf(query, limit + 1) as Promise<WrittenPartition[]>);
  const page = written.slice(0, limit);
  const byId = new Map(topics.map((t) => [t.topicId, t]));
  const stats = await mapLimit(page, FANOUT, ({ topicId, partition }) => {
    const t = byId.get(topicId)!;
    return withDeadline(partitionStub(env, tenant, t.incarnation, topicId, partition).stats() as Promise<PartitionStats>);
  });
  const read = new Map<string, PartitionStats>();
  page.forEach((p, i) => read.set(partKey(p.topicId, p.partition), stats[i]!));
  const after = written[limit];
  return { read, next: after ? { topicId: after.topicId, partition: after.partition } : null };
}
