/**
 * Topic listings of the console's API (docs/console.md "APIs"): one page of
 * topics with their totals (`GET /v0/topics`), and one topic with its
 * partitions and described consumer groups (`GET /v0/topics/:topic`).
 *
 * Cost, within a request's budget of 100 object calls (DESIGN.md §10):
 * only partitions the TopicRegistry knows were written are read (the rest
 * are shown empty without a call, so a page never starts an empty
 * Partition). A topics page is two registry calls plus at most
 * PAGE_WRITTEN `stats()` — the page ends before the topic whose written
 * partitions would pass that (a first topic with more is shown with totals
 * over its first PAGE_WRITTEN written partitions, `partial: true`). A topic
 * page is the group listing (objects/group/listing.ts, ≤ 82 calls) and at
 * most DESCRIBED_GROUPS describes; its partitions come from the listing's
 * reads (`partial` when it left written partitions out).
 */
import type { Env } from "../env";
import type { TopicInfo, TopicInfoPage } from "./rpc";
import type { GroupDoc } from "../../wire/admin/groups";
import { TOPIC_PAGE_PARTITIONS, type PartitionRow, type TopicDetail, type TopicPage, type TopicRow } from "../../wire/admin/console";
import { topicRow } from "./topic-row";
import { registryStub } from "./stub";
import { groupStub } from "../group/stub";
import { LIST_PARTITIONS, listGroups } from "../group/listing";
import { mapLimit, range } from "../shared/concurrency";
import { readWrittenStats, statsOf } from "../shared/written-stats";
import { withDeadline } from "../session/faults";
import type { AdminResult } from "../tenants/rpc";
import type { GroupDescription } from "../group/rpc";

/** Object calls in flight at once. */
const FANOUT = 16;

/** Groups described on a topic page (the rest are not; a topic rarely has more). */
export const MAX_DESCRIBED_GROUPS = 16;

/** Written partitions a topics page reads at most. */
export const PAGE_WRITTEN = 64;

/**
 * One page of `tenant`'s topics by name (see TopicRegistry.page).
 * @throws when an object does not answer in time
 */
export async function topicPage(env: Env, tenant: string, after: string | null, prefix: string, limit: number): Promise<TopicPage> {
  const page = await withDeadline(registryStub(env, tenant).page(after, prefix, limit, TOPIC_PAGE_PARTITIONS) as Promise<TopicInfoPage>);
  const w = await readWrittenStats(env, tenant, page.topics, null, PAGE_WRITTEN);
  // Past the budget the page ends before the topic that did not fit (a first topic stays, partial).
  const cut = w.next === null ? page.topics.length : Math.max(1, page.topics.findIndex((t) => t.topicId === w.next!.topicId));
  const shown = page.topics.slice(0, cut);
  const topics = shown.map((t): TopicRow => {
    const row = topicRow(t, range(t.partitionCount).map((p) => statsOf(w, t.topicId, p)));
    return w.next !== null && w.next.topicId === t.topicId ? { ...row, partial: true as const } : row;
  });
  return { tenant, topics, next: cut < page.topics.length ? shown.at(-1)!.name : page.next, total: page.total };
}

/**
 * The topic page of `topic`: partitions (first sequence, high watermark,
 * records, bytes, producers) and every group described (up to
 * MAX_DESCRIBED_GROUPS), sorted by name.
 * @throws when an object does not answer in time
 */
export async function topicDetail(env: Env, tenant: string, topic: TopicInfo): Promise<TopicDetail> {
  const generatedAt = Date.now();
  const [w, listing] = await Promise.all([
    readWrittenStats(env, tenant, [topic], null, LIST_PARTITIONS),
    listGroups(env, tenant, topic),
  ]);
  const parts = range(topic.partitionCount).map((p): PartitionRow => {
    const s = statsOf(w, topic.topicId, p);
    return {
      partition: p, first_sequence: s.firstSequence, high_watermark: s.highWatermark,
      records: Math.max(0, s.highWatermark - s.firstSequence + 1), size_bytes: s.sizeBytes, producers: s.producers,
    };
  });
  const described = await mapLimit(listing.groups.slice(0, MAX_DESCRIBED_GROUPS), FANOUT, (g) =>
    withDeadline(groupStub(env, tenant, topic.incarnation, topic.topicId, g.group).describe() as Promise<AdminResult<GroupDescription>>));
  const docs: GroupDoc[] = [];
  for (const r of described) if (r.ok) docs.push({ ...r.value, topic: topic.name });
  return {
    tenant, name: topic.name, topic_id: topic.topicId, dlq: topic.dlq, partition_count: topic.partitionCount,
    created_at: new Date(topic.createdAt).toISOString(), retention: topic.retention ?? null,
    ...(topic.locationHint ? { location_hint: topic.locationHint } : {}), partitions: parts, groups: docs, generated_at: generatedAt,
    partial: w.next !== null || listing.truncated || listing.groups.length > MAX_DESCRIBED_GROUPS,
  };
}
