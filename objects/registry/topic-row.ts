/** A topic's listing row (`GET /v0/topics`, docs/console.md "APIs") from its partitions' stats. Pure. */
import type { PartitionStats } from "../partition/rpc";
import type { TopicInfo } from "./rpc";
import type { TopicRow } from "../../wire/admin/console";

/**
 * A topic's row from its partitions' stats (index = partition). Pure.
 * Records = Σ retained records (high watermark − first retained sequence
 * + 1); lag as in listGroups: a group's lag on a partition counts from the
 * first retained sequence (a group below it continues there), and a
 * partition where it has no position counts its whole retained log.
 */
export function topicRow(t: TopicInfo, stats: readonly PartitionStats[]): TopicRow {
  const groups = new Set<string>();
  for (const s of stats) for (const g of s.groups) groups.add(g.group);
  let lag = 0;
  for (const s of stats) {
    const here = new Map(s.groups.map((g) => [g.group, g.committedFloor]));
    const floorOfLog = s.firstSequence - 1;
    for (const g of groups) lag += Math.max(0, s.highWatermark - Math.max(floorOfLog, here.get(g) ?? 0));
  }
  return {
    name: t.name,
    topic_id: t.topicId,
    dlq: t.dlq,
    partition_count: t.partitionCount,
    records: stats.reduce((n, s) => n + Math.max(0, s.highWatermark - s.firstSequence + 1), 0),
    size_bytes: stats.reduce((n, s) => n + s.sizeBytes, 0),
    groups: groups.size,
    lag,
    retention: t.retention ?? null,
    created_at: new Date(t.createdAt).toISOString(),
    ...(t.locationHint ? { location_hint: t.locationHint } : {}),
  };
}
