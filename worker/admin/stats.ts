/**
 * `GET /stats`: the tenant's topics → partitions → consumer groups, and its
 * mailbox and agent counts, as JSON (the document docs/cli.md and
 * docs/operations.md describe; the `mortarmq topics` commands read it).
 *
 * Topics and partitions are read live at request time, one page per
 * request within 100 object calls (`?cursor=`, `?limit=`; docs/operations.md
 * "Cost and paging"): the TopicRegistry lists the topics and names the
 * written partitions, each of those answers `stats()` (high watermark,
 * retained bytes, producers, group positions), each ConsumerGroup its
 * members — so lag is exact at `generated_at`; a partition never written is
 * reported empty without a call (none is created). The mailbox count comes from
 * the counting pipeline (stale by at most the flush interval); the agent
 * count from the AgentRegistry.
 *
 * Without parameters the document is the caller's tenant's (the token's
 * tenant; `default` on an open broker and for the operator token).
 * `?tenant=<id>` names a tenant (the operator any, a tenant token only its
 * own); `?all=1` (operator) answers `{generated_at, tenants: [...],
 * next_tenant}`: the first page of STATS_ALL_TENANTS tenants' documents
 * (each a smaller first page: STATS_ALL_PARTITIONS partitions,
 * STATS_ALL_GROUPS groups, its own `next_cursor` for `?tenant=&cursor=`), in
 * name order after `&after=<tenant>`; `next_tenant` is the `after` of the
 * next page, null on the last — so one request stays within 100 object calls
 * whatever the number of tenants.
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { agentRegistryStub } from "../../objects/agents/stub";
import { isolateMeter } from "../telemetry";
import { registryStub } from "../../objects/registry/stub";
import { firstTopicAt, readWrittenStats, statsOf, type PartitionCursor } from "../../objects/shared/written-stats";
import { intParam } from "../console/scope";
import { groupStub } from "../../objects/group/stub";
import { usageStub } from "../../objects/usage/stub";
import { series } from "../../objects/usage/catalog";
import type { TopicInfo } from "../../objects/registry/rpc";
import { operatorAccess, scopedTenant } from "./access";
import { knownTenants } from "./tenants";
import { logFault } from "../../objects/shared/platform-faults";
import { mapLimit } from "../../objects/shared/concurrency";

/** Object calls in flight at once while assembling a tenant's document. */
const FANOUT = 16;

const MAILBOXES = series("mortarmq_mq9_mailboxes");

/** One consumer group at one partition. */
export interface GroupStatsDoc {
  group: string;
  /** Members of the whole group. */
  members: number;
  /** Every sequence ≤ committed_floor is settled by the group (0 = none). */
  committed_floor: number;
  /** high_watermark − committed_floor. */
  lag: number;
  /** Delivered, neither ACKed nor NACKed yet. */
  in_flight: number;
  /** Records retention deleted before the group settled them (it continued at first_sequence). */
  retention_skipped: number;
}

/** One partition. */
export interface PartitionStatsDoc {
  partition: number;
  /** The first retained sequence (log start); high_watermark + 1 when nothing is retained. */
  first_sequence: number;
  /** Sequence of the newest record, 0 = none. */
  high_watermark: number;
  /** Keys + values of retained records, bytes. */
  size_bytes: number;
  producers: number;
  groups: GroupStatsDoc[];
}

/** A topic's retention settings in force (docs/protocol.md "Topic retention"); limits per partition, 0 = unlimited. */
export interface RetentionDoc {
  retention_ms: number;
  retention_bytes: number;
  retention_messages: number;
  discard: "old" | "new";
}

/** One topic (a `.dlq` twin is its own entry). */
export interface TopicStatsDoc {
  name: string;
  topic_id: number;
  dlq: boolean;
  partition_count: number;
  retention: RetentionDoc | null;
  /** The location hint the topic was created with (docs/deploy.md "Placement"); absent = none. */
  location_hint?: string;
  partitions: PartitionStatsDoc[];
}

/** The document of one tenant. */
export interface StatsDoc {
  tenant: string;
  /** When it was assembled, unix ms. */
  generated_at: number;
  topics: TopicStatsDoc[];
  mailboxes: number;
  agents: number;
  /**
   * The cursor of the next page (`?cursor=`), or null on the last page. A
   * page covers the topics (in topic-id order) from its cursor up to the
   * next one: a topic split between pages has its partitions in both.
   */
  next_cursor: string | null;
}

/** Handler for `GET /stats`. */
export async function statsHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const access = await operatorAccess(c.env, c.req.header("authorization"));
  if (access.kind === "denied") return c.json({ error: access.error }, access.status, access.headers);
  const scoped = await scopedTenant(c.env, access, c.req.query("tenant"));
  if ("error" in scoped) return c.json({ error: scoped.error }, scoped.status);
  const all = c.req.query("all") !== undefined;
  if (all && access.kind !== "operator") return c.json({ error: "?all needs the operator token (ADMIN_TOKEN)" }, 403);
  const cursorParam = c.req.query("cursor");
  const from = cursorParam === undefined || cursorParam === "" ? null : parseStatsCursor(cursorParam);
  if (from === null && cursorParam) return c.json({ error: "cursor must be the next_cursor of a previous page (<topic_id>.<partition>)" }, 400);
  const limit = intParam(c.req.query("limit"), STATS_PAGE_PARTITIONS, 1, STATS_PAGE_PARTITIONS);
  if (limit === null) return c.json({ error: `limit must be a whole number from 1 to ${STATS_PAGE_PARTITIONS}` }, 400);
  if (all && from) return c.json({ error: "?all answers every tenant's first page; page one tenant with ?tenant=<id>&cursor=" }, 400);
  const after = c.req.query("after") ?? "";
  await isolateMeter.flush(c.env);
  try {
    if (!all) return c.json(await tenantStats(c.env, scoped.tenant, from, limit));
    const tenants = (await knownTenants(c.env, true)).filter((t) => t > after);
    const page = tenants.slice(0, STATS_ALL_TENANTS);
    const docs: StatsDoc[] = [];
    for (const t of page) docs.push(await tenantStats(c.env, t, null, STATS_ALL_PARTITIONS, STATS_ALL_GROUPS));
    const next = tenants.length > page.length ? page[page.length - 1]! : null;
    return c.json({ generated_at: Date.now(), tenants: docs, next_tenant: next } satisfies AllStatsDoc);
  } catch (e) {
    return c.json({ error: `could not assemble /stats (ref ${logFault("/stats", e)})` }, 503, { "Retry-After": "1" });
  }
}

/** The `?all=1` document: one page of tenants. */
export interface AllStatsDoc {
  generated_at: number;
  tenants: StatsDoc[];
  /** `&after=` of the next page of tenants, null on the last. */
  next_tenant: string | null;
}

/** Tenants per `?all=1` page. */
export const STATS_ALL_TENANTS = 4;
/** Partitions read per tenant on an `?all=1` page. */
export const STATS_ALL_PARTITIONS = 6;
/** Consumer groups read per tenant on an `?all=1` page (4 tenants × (4 + 6 + 12) + 2 lists = 90 calls). */
export const STATS_ALL_GROUPS = 12;

/** Partitions a /stats page reads at most (`?limit=`, default and maximum). */
export const STATS_PAGE_PARTITIONS = 32;
/** Consumer groups a /stats page reads the members of at most (one `info()` each). */
export const STATS_PAGE_GROUPS = 60;

/** A page cursor `<topic_id>.<partition>` → the position, or null when malformed. */
export function parseStatsCursor(v: string): PartitionCursor | null {
  const m = /^(\d{1,10})\.(\d{1,5})$/.exec(v);
  return m ? { topicId: Number(m[1]), partition: Number(m[2]) } : null;
}

/**
 * Assembles one page of the /stats document of `tenant` (see the module
 * comment for where each value comes from). The page covers the tenant's
 * topics in topic-id order from `from` (null = the start) up to the next
 * page's cursor: written partitions are read (at most `limit`, and no more
 * than `maxGroups` distinct groups), every other partition is
 * reported empty without a call. Costs at most 4 + `limit` + `maxGroups`
 * object calls.
 * @throws when an object does not answer
 */
export async function tenantStats(
  env: Env, tenant: string, from: PartitionCursor | null = null, limit = STATS_PAGE_PARTITIONS, maxGroups = STATS_PAGE_GROUPS,
): Promise<StatsDoc> {
  const generatedAt = Date.now();
  const [listed, mailboxes, agents] = await Promise.all([
    registryStub(env, tenant).list() as Promise<TopicInfo[]>,
    usageStub(env, tenant).seriesValue(MAILBOXES),
    agentRegistryStub(env, tenant).counts().then((c) => c.agents),
  ]);
  const topics = [...listed].sort((a, b) => a.topicId - b.topicId);
  const w = await readWrittenStats(env, tenant, topics, from, limit);
  // Cut the page where its groups would pass the budget (at least one partition stays).
  const groupKeys = new Map<string, { t: TopicInfo; group: string }>();
  const byId = new Map(topics.map((t) => [t.topicId, t]));
  let next = w.next;
  const keys = [...w.read.keys()];
  for (let k = 0; k < keys.length; k++) {
    const [topicId, partition] = keys[k]!.split(":").map(Number) as [number, number];
    const t = byId.get(topicId)!;
    const fresh = w.read.get(keys[k]!)!.groups.filter((g) => !groupKeys.has(`${topicId}\u0000${g.group}`));
    if (k > 0 && groupKeys.size + fresh.length > maxGroups) {
      next = { topicId, partition };
      for (const rest of keys.slice(k)) w.read.delete(rest);
      break;
    }
    for (const g of fresh) groupKeys.set(`${topicId}\u0000${g.group}`, { t, group: g.group });
  }
  const gkeys = [...groupKeys.keys()].slice(0, maxGroups);
  const members = new Map<string, number>();
  (await mapLimit(gkeys, FANOUT, (k) => {
    const { t, group } = groupKeys.get(k)!;
    return groupStub(env, tenant, t.incarnation, t.topicId, group).info().then((i) => i.members.length);
  })).forEach((n, i) => members.set(gkeys[i]!, n));
  const docs: TopicStatsDoc[] = [];
  for (const t of topics.slice(firstTopicAt(topics, from))) {
    if (next && t.topicId > next.topicId) break;
    const first = from && t.topicId === from.topicId ? from.partition : 0;
    const end = next && t.topicId === next.topicId ? next.partition : t.partitionCount;
    if (end <= first) continue;
    docs.push({
      name: t.name, topic_id: t.topicId, dlq: t.dlq, partition_count: t.partitionCount,
      retention: t.retention
        ? { retention_ms: t.retention.ms, retention_bytes: t.retention.bytes, retention_messages: t.retention.messages, discard: t.retention.discard }
        : null,
      ...(t.locationHint ? { location_hint: t.locationHint } : {}),
      partitions: Array.from({ length: end - first }, (_, i) => {
        const p = first + i;
        const s = statsOf(w, t.topicId, p);
        return {
          partition: p, first_sequence: s.firstSequence, high_watermark: s.highWatermark, size_bytes: s.sizeBytes, producers: s.producers,
          groups: s.groups.map((g) => ({
            group: g.group,
            members: members.get(`${t.topicId}\u0000${g.group}`) ?? 0,
            committed_floor: g.committedFloor,
            lag: Math.max(0, s.highWatermark - g.committedFloor),
            in_flight: g.inFlight,
            retention_skipped: g.retentionSkipped,
          })),
        };
      }),
    });
  }
  return {
    tenant, generated_at: generatedAt, topics: docs, mailboxes: Math.max(0, mailboxes), agents,
    next_cursor: next ? `${next.topicId}.${next.partition}` : null,
  };
}
