/**
 * Topic listings of the console's API (docs/console.md "APIs"): one page of
 * topics with their totals (`GET /v0/topics`), and one topic with its
 * partitions and described consumer groups (`GET /v0/topics/:topic`).
 *
 * Cost: a page is one registry call plus one `stats()` per partition of the
 * page's topics (16 in flight; a page stops at TOPIC_PAGE_PARTITIONS
 * partitions), so it does not grow with the tenant's topic count. A topic
 * page is one `info()` and one `stats()` per partition, the group listing
 * (objects/group/listing.ts) and one describe per group.
 */
import type { Env } from "../env";
import type { PartitionInfo, PartitionStats } from "../partition/rpc";
import type { TopicInfo, TopicInfoPage } from "./rpc";
import type { GroupDoc } from "../../wire/admin/groups";
import { TOPIC_PAGE_PARTITIONS, type PartitionRow, type TopicDetail, type TopicPage } from "../../wire/admin/console";
import { topicRow } from "./topic-row";
import { registryStub } from "./stub";
import { partitionStub } from "../partition/stub";
import { groupStub } from "../group/stub";
import { listGroups } from "../group/listing";
import { mapLimit, range } from "../shared/concurrency";
import { withDeadline } from "../session/faults";
import type { AdminResult } from "../tenants/rpc";
import type { GroupDescription } from "../group/rpc";

/** Object calls in flight at once. */
const FANOUT = 16;

/** Groups described on a topic page (the rest are not; a topic rarely has more). */
export const MAX_DESCRIBED_GROUPS = 100;

/**
 * One page of `tenant`'s topics by name (see TopicRegistry.page).
 * @throws when an object does not answer in time
 */
export async function topicPage(env: Env, tenant: string, after: string | null, prefix: string, limit: number): Promise<TopicPage> {
  const page = await withDeadline(registryStub(env, tenant).page(after, prefix, limit, TOPIC_PAGE_PARTITIONS) as Promise<TopicInfoPage>);
  const parts = page.topics.flatMap((t) => range(t.partitionCount).map((p) => ({ t, p })));
  const stats = await mapLimit(parts, FANOUT, ({ t, p }) =>
    withDeadline(partitionStub(env, tenant, t.incarnation, t.topicId, p).stats() as Promise<PartitionStats>));
  let i = 0;
  const topics = page.topics.map((t) => {
    const s = stats.slice(i, i + t.partitionCount);
    i += t.partitionCount;
    return topicRow(t, s);
  });
  return { tenant, topics, next: page.next, total: page.total };
}

/**
 * The topic page of `topic`: partitions (first sequence, high watermark,
 * records, bytes, producers) and every group described (up to
 * MAX_DESCRIBED_GROUPS), sorted by name.
 * @throws when an object does not answer in time
 */
export async function topicDetail(env: Env, tenant: string, topic: TopicInfo): Promise<TopicDetail> {
  const generatedAt = Date.now();
  const [parts, groups] = await Promise.all([
    mapLimit(range(topic.partitionCount), FANOUT, async (p): Promise<PartitionRow> => {
      const stub = partitionStub(env, tenant, topic.incarnation, topic.topicId, p);
      const [info, stats] = await Promise.all([withDeadline(stub.info() as Promise<PartitionInfo>), withDeadline(stub.stats() as Promise<PartitionStats>)]);
      return {
        partition: p, first_sequence: info.firstSequence, high_watermark: stats.highWatermark,
        records: info.records, size_bytes: stats.sizeBytes, producers: stats.producers,
      };
    }),
    listGroups(env, tenant, topic),
  ]);
  const described = await mapLimit(groups.slice(0, MAX_DESCRIBED_GROUPS), FANOUT, (g) =>
    withDeadline(groupStub(env, tenant, topic.incarnation, topic.topicId, g.group).describe() as Promise<AdminResult<GroupDescription>>));
  const docs: GroupDoc[] = [];
  for (const r of described) if (r.ok) docs.push({ ...r.value, topic: topic.name });
  return {
    tenant, name: topic.name, topic_id: topic.topicId, dlq: topic.dlq, partition_count: topic.partitionCount,
    created_at: new Date(topic.createdAt).toISOString(), retention: topic.retention ?? null, partitions: parts, groups: docs, generated_at: generatedAt,
  };
}
