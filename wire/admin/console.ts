/**
 * The tenant-scoped HTTP APIs the web console uses (docs/console.md "APIs"),
 * their request bodies (zod, checked by the Worker) and answer documents
 * (types, read by console/ and the CLI). Pure; no platform imports.
 *
 * Every route is per tenant like `/stats` and the group API (docs/groups.md
 * "Access"): a tenant token sees its own tenant; the operator token (or
 * anyone on an open broker) names one with `?tenant=` (default `default`).
 */
import { z } from "zod";
import type { GroupDoc } from "./groups";
import { LOCATION_HINTS, locationHintRefusal, type LocationHint } from "./location-hint";

/** `GET /v0/whoami`: who the token is. */
export interface WhoamiAnswer {
  /** "open": no tokens configured (no login); "tokens": every request needs one. */
  auth: "open" | "tokens";
  /** "operator": ADMIN_TOKEN (or anyone on an open broker) — may name any tenant; "tenant": a tenant's token. */
  role: "operator" | "tenant";
  /** The token's tenant; for the operator the tenant used when none is named (`default`). */
  tenant: string;
  /** The token's scopes (docs/tenants.md "Permissions"); both empty = full tenant access (and always for the operator). */
  allow: string[];
  deny: string[];
  /** The issued token's id (absent: the operator, a static token or an open broker). */
  token_id?: string;
}

// ------------------------------------------------------------------ topics

/** Largest page of `GET /v0/topics`. */
export const MAX_TOPIC_PAGE = 200;
/** Default page of `GET /v0/topics`. */
export const DEFAULT_TOPIC_PAGE = 50;
/** A page stops adding topics once it holds this many partitions (each is one object call). */
export const TOPIC_PAGE_PARTITIONS = 512;

/** One topic in `GET /v0/topics` (a `.dlq` twin is its own row, right after its source). */
export interface TopicRow {
  name: string;
  topic_id: number;
  dlq: boolean;
  partition_count: number;
  /** Records stored over all partitions. */
  records: number;
  /** Keys + values of the stored records, bytes. */
  size_bytes: number;
  /** Consumer groups with a position on any partition. */
  groups: number;
  /** Sum of every group's lag over every partition (a partition a group never owned counts its whole log). */
  lag: number;
  /** Retention settings in force (docs/protocol.md "Topic retention"; 0 = no limit); null = keep everything. */
  retention: RetentionView | null;
  /** Creation time, ISO 8601. */
  created_at: string;
  /** The location hint the topic was created with (docs/deploy.md "Placement"); absent = none. */
  location_hint?: LocationHint;
  /** Present (true) when the totals cover only the page's first 64 written partitions (docs/console.md "Limits of one page"). */
  partial?: true;
}

/** A topic's retention in force: max age (ms), bytes and records per partition (0 = no limit), discard policy. */
export interface RetentionView {
  ms: number;
  bytes: number;
  messages: number;
  discard: "old" | "new";
}

/** `GET /v0/topics?prefix&after&limit`. */
export interface TopicPage {
  tenant: string;
  topics: TopicRow[];
  /** Cursor for the next page (`after=`), null on the last page. */
  next: string | null;
  /** Live topics of the tenant (source topics, twins not counted). */
  total: number;
}

/** A location hint in a JSON body (400 naming the allowed values otherwise). */
export const locationHintSchema = z.enum(LOCATION_HINTS as [LocationHint, ...LocationHint[]], {
  error: (issue) => locationHintRefusal(issue.input),
});

/**
 * `POST /v0/topics` body. `location_hint` (optional): where the topic's
 * objects start (docs/deploy.md "Placement"), one of LOCATION_HINTS.
 */
export const createTopicSchema = z.strictObject({
  name: z.string({ error: "must be a string" }).min(1, "must not be empty"),
  partitions: z.number({ error: "must be a whole number" }).int("must be a whole number").min(1, "must be ≥ 1").max(65535, "must be ≤ 65535"),
  location_hint: locationHintSchema.nullish(),
});

/** One partition on the topic page. */
export interface PartitionRow {
  partition: number;
  /** First retained sequence (the log start; high watermark + 1 when nothing is retained). */
  first_sequence: number;
  /** Newest sequence ever appended (0 = none). */
  high_watermark: number;
  records: number;
  size_bytes: number;
  producers: number;
}

/** `GET /v0/topics/:topic`. */
export interface TopicDetail {
  tenant: string;
  name: string;
  topic_id: number;
  dlq: boolean;
  partition_count: number;
  created_at: string;
  retention: RetentionView | null;
  /** The location hint the topic was created with; absent = none. */
  location_hint?: LocationHint;
  partitions: PartitionRow[];
  /** Every group of the topic, described (docs/groups.md "The group document"), sorted by name. */
  groups: GroupDoc[];
  /** When the page was assembled, unix ms (lag is exact at that time). */
  generated_at: number;
  /**
   * True when the page's object-call budget left something out: written
   * partitions past the 40th are shown empty, groups past the 16th are not
   * described (docs/console.md "Limits of one page").
   */
  partial: boolean;
}

/** Largest `last` of a peek. */
export const MAX_PEEK = 100;

/** `POST /v0/topics/:topic/partitions/:p/records` body: a test message (text). */
export const publishSchema = z.strictObject({
  key: z.string({ error: "must be a string" }).max(255, "must be at most 255 characters").optional(),
  value: z.string({ error: "must be a string" }).max(65536, "must be at most 65536 characters"),
});

/** Answer to a test publish. */
export interface PublishAnswer {
  topic: string;
  partition: number;
  sequence: number;
}

/** One record of a peek; key and value base64 (binary-safe). */
export interface PeekRecord {
  sequence: number;
  key: string;
  value: string;
  /** Append time, ISO 8601. */
  timestamp: string;
  /** "0" for a non-idempotent PUB (decimal string: a u64). */
  producer_id: string;
}

/** `GET /v0/topics/:topic/partitions/:p/records?last=N`: the newest N records, oldest first. */
export interface PeekAnswer {
  topic: string;
  partition: number;
  records: PeekRecord[];
}

// --------------------------------------------------------------- mailboxes

/** Largest page of `GET /v0/mailboxes`. */
export const MAX_MAILBOX_PAGE = 1000;
/** Default page of `GET /v0/mailboxes`. */
export const DEFAULT_MAILBOX_PAGE = 100;

/** One mailbox of the listing. */
export interface MailboxRow {
  mail_address: string;
  created_at: string;
  /** When its TTL deletes it; null = never. */
  expires_at: string | null;
}

/** `GET /v0/mailboxes?prefix&after&limit`. */
export interface MailboxPage {
  tenant: string;
  mailboxes: MailboxRow[];
  /** Cursor for the next page (`after=`), null on the last page. */
  next: string | null;
}

/** Messages of one priority lane. */
export interface LaneDoc {
  messages: number;
  /** Payload bytes. */
  bytes: number;
}

/** One consumer group of a mailbox: its ack floor per lane (every msg_id below is acknowledged). */
export interface MailboxGroupDoc {
  group_name: string;
  floors: { critical: number; urgent: number; normal: number };
  /** Highest msg_id delivered per lane; null = none. */
  delivered: { critical: number | null; urgent: number | null; normal: number | null };
}

/** `GET /v0/mailboxes/:address`. */
export interface MailboxDetail {
  tenant: string;
  mail_address: string;
  created_at: string;
  expires_at: string | null;
  /** Mailbox TTL, s (0 = never expires). */
  ttl: number;
  /** The msg_id the next visible message gets. */
  next_msg_id: number;
  lanes: { critical: LaneDoc; urgent: LaneDoc; normal: LaneDoc };
  /** Delayed messages not yet visible. */
  delayed: number;
  /** Up to 100 groups, by name. */
  groups: MailboxGroupDoc[];
  groups_total: number;
}

// ---------------------------------------------------------------- overview

/** One interval of the overview: counts of what happened in it (as reported to the tenant's aggregator then). */
export interface OverviewBucket {
  /** Start of the interval, unix ms. */
  t: number;
  messages_in: number;
  messages_out: number;
  bytes_in: number;
  bytes_out: number;
  requests: number;
  /** ERR frames to MortarMQ clients + mq9 requests answered with an error. */
  errors: number;
  /** Levels at the end of the interval (carried forward through intervals without reports). */
  connections_mortar: number;
  connections_nats: number;
  storage_bytes: number;
}

/** `GET /v0/overview?minutes=`. */
export interface OverviewAnswer {
  tenant: string;
  /** Width of one bucket, ms. */
  interval_ms: number;
  /** Oldest first, one per interval (zeros where nothing was reported), up to now. */
  buckets: OverviewBucket[];
  now: {
    connections: { mortar: number; nats: number };
    storage_bytes: number;
    mailboxes: number;
    agents: number;
    topics: number;
  };
  quotas: import("./tenants").Quotas;
  /** How late counts may arrive, ms (TELEMETRY_FLUSH_MS). */
  telemetry_interval_ms: number;
  generated_at: number;
}

/** `GET /v0/usage?from&to`: the tenant's own hourly usage (as `/admin/tenants/:id/usage`) and its quotas. */
export type TenantUsageAnswer = import("./tenants").UsageAnswer & { quotas: import("./tenants").Quotas };
