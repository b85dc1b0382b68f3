/** Types of the TopicRegistry RPC surface. */
import type { Retention } from "../shared/retention-config";
import type { RetentionUpdate } from "../partition/rpc";
import type { LocationHint } from "../../wire/admin/location-hint";

/** One topic as the registry knows it (a source topic or its `.dlq` twin). */
export interface TopicInfo {
  topicId: number;
  /** UTF-8 name; twins are `<source>.dlq`. */
  name: string;
  partitionCount: number;
  /**
   * Generation of the name: a topic recreated after a delete gets a new
   * incarnation, and the incarnation is part of every Partition object name,
   * so the new topic never sees the old data.
   */
  incarnation: number;
  /** True for the `.dlq` twin (even id). */
  dlq: boolean;
  /** Creation time, ms since the epoch. */
  createdAt: number;
  /** The retention settings in force (docs/protocol.md "Topic retention"); set on every registry answer. */
  retention?: Retention;
  /** The location hint the topic was created with (docs/deploy.md "Placement"), its twin's too; absent = none. */
  locationHint?: LocationHint;
}

/**
 * Answer to `declare`: the DECLARE OK result (`created` is DeclareCreated,
 * ALTERED only for a request with the RETENTION flag), or a registry error
 * code. `topic.retention` holds the settings in force.
 */
export type DeclareResult =
  | { ok: true; topicId: number; partitionCount: number; created: number; topic: TopicInfo }
  | { ok: false; code: number; message: string };

/**
 * Answer to `registerPartition`: whether the partition's topic incarnation
 * is live and, when it is, the retention settings the partition applies.
 */
export interface RegisterResult {
  live: boolean;
  retention: RetentionUpdate | null;
  /** The topic's location hint (absent = none): the partition starts its `.dlq` twin with it. */
  locationHint?: LocationHint;
}

/** Answer to `lookup`. `code` is UNKNOWN_TOPIC (0x0008) or TOPIC_DELETED (0x2005). */
export type LookupResult = { ok: true; topic: TopicInfo } | { ok: false; code: number; message: string };

/** Answer to `page`: topics by name, each source followed by its `.dlq` twin. */
export interface TopicInfoPage {
  topics: TopicInfo[];
  /** The last source name of this page (the next page's `after`), null when this was the last page. */
  next: string | null;
  /** Live source topics of the tenant. */
  total: number;
}

/** One object a tenant purge must visit (TopicRegistry.purgeTargets; purge-store.ts). */
export type PurgeTarget =
  | { kind: "group"; incarnation: number; topicId: number; group: string }
  | { kind: "partition"; incarnation: number; topicId: number; partition: number };

/** A page of purge targets and the cursor after it (null: nothing is left). */
export interface PurgeTargetPage {
  targets: PurgeTarget[];
  next: string | null;
}

/** Estimated objects a tenant purge visits (TopicRegistry.purgeTotals, for progress). */
export interface PurgeTotals {
  topics: number;
  groups: number;
  partitions: number;
}

/** One topic asked about in `writtenOf`: its partitions from index `from` on. */
export interface WrittenQuery {
  incarnation: number;
  topicId: number;
  partitionCount: number;
  from: number;
}

/** A partition that may hold data (`writtenOf`). */
export interface WrittenPartition {
  topicId: number;
  partition: number;
}

/** `registerGroup`'s answer: whether the topic incarnation is live, or why a new group was refused (the topic has MORTAR_MAX_GROUPS_PER_TOPIC groups). */
export type RegisterGroupResult = boolean | { refused: string };
