/**
 * The TopicRegistry's settings from Worker vars, pure. The topic retention
 * defaults (MORTAR_RETENTION_*) are shared with the Partition:
 * shared/retention-config.ts.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | MORTAR_MAX_PARTITIONS_PER_TOPIC | 1024 | largest partition_count a DECLARE may create (> 0, at most 65535) |
 * | MORTAR_PARTITIONS_PER_TENANT | 10000 | partitions over all of a tenant's topics without a `partitions` quota (> 0) |
 * | MORTAR_MAX_GROUPS_PER_TOPIC | 1000 | consumer groups one topic (a `.dlq` twin on its own) may have (> 0) |
 */
import { DEFAULT_MAX_PARTITIONS_PER_TOPIC } from "../../wire/mortar/constants";
import { positiveInt } from "../shared/int-var";

/**
 * Built-in partitions per tenant (over all its topics; a `.dlq` twin's
 * partitions are counted with its topic's). Each partition is a Durable
 * Object with its own SQLite database: locally all of them share one
 * workerd process and its 512 MiB SQLite heap, which one tenant's thousands
 * of written partitions exhausted for everyone (issue 28 item 1).
 */
export const DEFAULT_PARTITIONS_PER_TENANT = 10_000;

/** Partitions a tenant's topics may have together: its `partitions` quota, else `MORTAR_PARTITIONS_PER_TENANT`, else 10,000. */
export function partitionsPerTenant(env: { MORTAR_PARTITIONS_PER_TENANT?: string }, quota: number | null): number {
  return quota ?? positiveInt(env.MORTAR_PARTITIONS_PER_TENANT, DEFAULT_PARTITIONS_PER_TENANT);
}

/** Largest partition_count a new topic may have: `MORTAR_MAX_PARTITIONS_PER_TOPIC` (capped at 65535), else 1024. */
export function maxPartitionsPerTopic(env: { MORTAR_MAX_PARTITIONS_PER_TOPIC?: string }): number {
  return positiveInt(env.MORTAR_MAX_PARTITIONS_PER_TOPIC, DEFAULT_MAX_PARTITIONS_PER_TOPIC, 0xffff);
}

/** Built-in consumer groups per topic: each is a Durable Object with its own database (~50 KB), recorded in the registry. */
export const DEFAULT_MAX_GROUPS_PER_TOPIC = 1_000;

/**
 * Bytes a consumer group counts toward its tenant's storage (the
 * `storage_bytes` quota, `mortarmq_stored_bytes{system="mortar"}`): its
 * Durable Object's database, measured at ~48–52 KiB for a group with one
 * member (issue 28 item 3), whatever its records. Reported by the
 * TopicRegistry, which records every group (telemetry.ts).
 */
export const GROUP_STORAGE_BYTES = 48 * 1024;

/** Consumer groups one topic may have: `MORTAR_MAX_GROUPS_PER_TOPIC`, else 1,000. */
export function maxGroupsPerTopic(env: { MORTAR_MAX_GROUPS_PER_TOPIC?: string }): number {
  return positiveInt(env.MORTAR_MAX_GROUPS_PER_TOPIC, DEFAULT_MAX_GROUPS_PER_TOPIC);
}
