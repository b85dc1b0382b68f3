/**
 * The TopicRegistry's settings from Worker vars, pure. The topic retention
 * defaults (MORTAR_RETENTION_*) are shared with the Partition:
 * shared/retention-config.ts.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | MORTAR_MAX_PARTITIONS_PER_TOPIC | 1024 | largest partition_count a DECLARE may create (> 0, at most 65535) |
 */
import { DEFAULT_MAX_PARTITIONS_PER_TOPIC } from "../../wire/mortar/constants";
import { positiveInt } from "../shared/int-var";

/** Largest partition_count a new topic may have: `MORTAR_MAX_PARTITIONS_PER_TOPIC` (capped at 65535), else 1024. */
export function maxPartitionsPerTopic(env: { MORTAR_MAX_PARTITIONS_PER_TOPIC?: string }): number {
  return positiveInt(env.MORTAR_MAX_PARTITIONS_PER_TOPIC, DEFAULT_MAX_PARTITIONS_PER_TOPIC, 0xffff);
}
