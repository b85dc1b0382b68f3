/**
 * The `/stats` JSON document the CLI reads (`topics list`, `topics
 * describe`): its schema (zod), how to fetch it, and the pure renderers.
 * The shape is specified in docs/cli.md ("The /stats document").
 */
import { z } from "zod";
import type { GlobalOptions } from "./context";
import { CliError } from "./errors";
import { formatBytes, formatFields, formatTable, type Cell } from "./format";
import { brokerRequest } from "./http";
import { renderRetention } from "./retention";
import { LOCATION_HINT_REGIONS, isLocationHint } from "../../wire/admin/location-hint";

const count = z.number().int().nonnegative();

/** One consumer group's position on one partition. */
export const GroupStatsSchema = z.object({
  group: z.string(),
  /** Members of the group (the whole group, not only this partition's owner). */
  members: count,
  /** Every sequence ≤ committed_floor is settled (ACKed or dead-lettered) by the group (0 = none): the partition's ack floor − 1. */
  committed_floor: count,
  /** high_watermark − committed_floor: messages above the floor (in-flight included). */
  lag: count,
  /** Delivered to the group and neither acked nor nacked yet. */
  in_flight: count,
  /** Records retention deleted before the group settled them (it continued at first_sequence). Absent from brokers before retention. */
  retention_skipped: count.optional(),
});

/** One partition of a topic. */
export const PartitionStatsSchema = z.object({
  partition: count,
  /** The first retained sequence (log start; high_watermark + 1 when nothing is retained). Absent from brokers before retention. */
  first_sequence: count.optional(),
  /** Sequence of the newest appended message (sequences start at 1; 0 = nothing appended). */
  high_watermark: count,
  /** Bytes of retained messages (keys + values). */
  size_bytes: count,
  /** Idempotent producers with dedupe state on this partition. */
  producers: count,
  groups: z.array(GroupStatsSchema).default([]),
});

/** A topic's retention settings in force; limits per partition, 0 = unlimited. */
export const RetentionStatsSchema = z.object({
  retention_ms: count,
  retention_bytes: count,
  retention_messages: count,
  discard: z.enum(["old", "new"]),
});

/** One topic (a `.dlq` twin is its own entry with `dlq: true`). */
export const TopicStatsSchema = z.object({
  name: z.string(),
  topic_id: count,
  dlq: z.boolean().default(false),
  partition_count: count,
  /** null/absent: a broker before retention. */
  retention: RetentionStatsSchema.nullable().optional(),
  /** Where the topic's objects started (docs/deploy.md "Placement"); absent = none. */
  location_hint: z.string().optional(),
  partitions: z.array(PartitionStatsSchema),
});

/** GET /stats: one tenant's view (the tenant of the bearer token; "default" on an open broker). */
export const StatsSchema = z.object({
  tenant: z.string(),
  /** When the broker assembled the document, unix ms. */
  generated_at: count.optional(),
  topics: z.array(TopicStatsSchema),
  /** Live mq9 mailboxes of the tenant. */
  mailboxes: count.optional(),
  /** Registered mq9 agents of the tenant. */
  agents: count.optional(),
  /** The next page's cursor (`/stats?cursor=`), null or absent on the last page. */
  next_cursor: z.string().nullable().optional(),
});

export type GroupStats = z.infer<typeof GroupStatsSchema>;
export type PartitionStats = z.infer<typeof PartitionStatsSchema>;
export type TopicStats = z.infer<typeof TopicStatsSchema>;
export type Stats = z.infer<typeof StatsSchema>;

/**
 * GET /stats, every page (following `next_cursor`), validated and merged
 * into one document (a topic split between pages gets its partitions
 * joined).
 * @throws CliError STATS_NOT_SERVED (404), UNAUTHORIZED (401), BAD_STATS (other status or shape), BROKER_UNREACHABLE
 */
export async function fetchStats(g: GlobalOptions): Promise<Stats> {
  let doc: Stats | null = null;
  for (let cursor: string | null | undefined = undefined; doc === null || cursor;) {
    const page = await fetchStatsPage(g, cursor ? `/stats?cursor=${encodeURIComponent(cursor)}` : "/stats");
    cursor = page.next_cursor;
    if (doc === null) doc = page;
    else doc.topics = mergeTopics(doc.topics, page.topics);
  }
  return doc;
}

/** `a` then `b`, a topic in both (split between pages) as one entry. Pure. */
function mergeTopics(a: TopicStats[], b: TopicStats[]): TopicStats[] {
  const out = [...a];
  for (const t of b) {
    const last = out.at(-1);
    if (last && last.topic_id === t.topic_id) out[out.length - 1] = { ...last, partitions: [...last.partitions, ...t.partitions] };
    else out.push(t);
  }
  return out;
}

/** One page of GET /stats (`path`), validated. */
async function fetchStatsPage(g: GlobalOptions, path: string): Promise<Stats> {
  const a = await brokerRequest(g, path, { method: "GET", headers: { accept: "application/json" } });
  if (a.status === 404) {
    throw new CliError("STATS_NOT_SERVED", "the broker does not serve /stats yet", "topics list/describe need a broker build with GET /stats; topics create/delete and pub work without it", 404);
  }
  if (a.status === 401) {
    const reason = (a.json as { error?: unknown } | undefined)?.error;
    throw new CliError("UNAUTHORIZED", typeof reason === "string" ? reason : "the broker refused the token for /stats", "pass a valid token with --token or MORTARMQ_TOKEN", 401);
  }
  if (a.status !== 200) throw new CliError("BAD_STATS", `GET /stats answered HTTP ${a.status}: ${a.text.slice(0, 200)}`, "check the broker's logs", a.status);
  const parsed = StatsSchema.safeParse(a.json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CliError("BAD_STATS", `GET /stats is not the expected document: ${issue ? `${issue.path.join(".")}: ${issue.message}` : "not JSON"}`, "the CLI and the broker disagree on the /stats shape (docs/cli.md)");
  }
  return parsed.data;
}

/** Totals of one topic over its partitions. */
export interface TopicTotals {
  /** Σ high_watermark: messages ever appended. */
  appended: number;
  sizeBytes: number;
  /** Distinct group names. */
  groups: string[];
  /** Σ lag over every partition and group. */
  lag: number;
}

/** Sums a topic's partitions. */
export function topicTotals(t: TopicStats): TopicTotals {
  const groups = new Set<string>();
  let appended = 0;
  let sizeBytes = 0;
  let lag = 0;
  for (const p of t.partitions) {
    appended += p.high_watermark;
    sizeBytes += p.size_bytes;
    for (const gr of p.groups) {
      groups.add(gr.group);
      lag += gr.lag;
    }
  }
  return { appended, sizeBytes, groups: [...groups].sort(), lag };
}

/** The `topics list` table. */
export function renderTopicList(s: Stats): string {
  if (s.topics.length === 0) return `no topics (tenant ${s.tenant})\n`;
  const rows: Cell[][] = [...s.topics]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((t) => {
      const tot = topicTotals(t);
      return [t.name, t.topic_id, t.partition_count, tot.appended, formatBytes(tot.sizeBytes), tot.groups.length, tot.lag];
    });
  return formatTable(["topic", "id", "partitions", "appended", "size", "groups", "lag"], rows);
}

/** The `topics describe` text: header fields, the partitions table, the groups table. */
export function renderTopicDescribe(t: TopicStats): string {
  const tot = topicTotals(t);
  let out = formatFields([
    ["topic", t.name],
    ["topic id", t.topic_id],
    ["partitions", t.partition_count],
    ["dead-letter", t.dlq ? "this is a dead-letter twin" : `${t.name}.dlq`],
    ["appended", tot.appended],
    ["size", formatBytes(tot.sizeBytes)],
    ...(t.retention ? [["retention", renderRetention({
      retentionMs: t.retention.retention_ms, retentionBytes: t.retention.retention_bytes,
      retentionMessages: t.retention.retention_messages, discard: t.retention.discard,
    })] as [string, Cell]] : []),
    ...(t.location_hint ? [["location hint", `${t.location_hint}${isLocationHint(t.location_hint) ? ` (${LOCATION_HINT_REGIONS[t.location_hint]})` : ""}`] as [string, Cell]] : []),
  ]);
  const parts = [...t.partitions].sort((a, b) => a.partition - b.partition);
  out += "\n" + formatTable(["partition", "first sequence", "high watermark", "size", "producers"],
    parts.map((p) => [p.partition, p.first_sequence ?? "-", p.high_watermark, formatBytes(p.size_bytes), p.producers]));
  const groupRows: Cell[][] = [];
  for (const name of tot.groups) {
    for (const p of parts) {
      const gr = p.groups.find((x) => x.group === name);
      if (gr) groupRows.push([gr.group, p.partition, gr.members, gr.committed_floor, gr.lag, gr.in_flight, gr.retention_skipped ?? "-"]);
    }
  }
  out += "\n" + (groupRows.length === 0
    ? "no consumer groups\n"
    : formatTable(["group", "partition", "members", "committed floor", "lag", "in flight", "skipped"], groupRows));
  return out;
}
