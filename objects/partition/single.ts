/**
 * One record in, a few records out, for the console (docs/console.md
 * "APIs"): a test message published as a non-idempotent PUB through the
 * Partition's ordinary append (so it is counted, stored and delivered like
 * any PUB), and a peek at the newest records of a partition (read only: no
 * group position moves).
 */
import type { Env } from "../env";
import { Op } from "../../wire/mortar/constants";
import type { TopicInfo } from "../registry/rpc";
import type { AppendResult, PartitionInfo, StoredRecord } from "./rpc";
import { AppendStatus } from "./rpc";
import { PubBatchBuilder } from "./batch";
import { partitionStub } from "./stub";
import { withDeadline } from "../session/faults";

/** Largest peek read, bytes of values (the first record always comes). */
const PEEK_MAX_BYTES = 1024 * 1024;

/** A published record's sequence, or the wire error the partition answered. */
export type PublishOneResult = { ok: true; sequence: number } | { ok: false; code: number; message: string };

/**
 * Appends one record (producer id 0: not deduplicated) to `partition` of
 * `topic`; answers after the commit.
 * @throws when the partition does not answer in time
 */
export async function publishOne(env: Env, tenant: string, topic: TopicInfo, partition: number, key: Uint8Array, value: Uint8Array): Promise<PublishOneResult> {
  const batch = new PubBatchBuilder(64 + key.length + value.length);
  batch.add({ op: Op.PUB, topicId: topic.topicId, partition, producerId: 0n, producerSeq: 0n, flags: 0, key, value });
  const r = await withDeadline(partitionStub(env, tenant, topic.incarnation, topic.topicId, partition).append(batch.finish()) as Promise<AppendResult>);
  if (r.error) return { ok: false, code: r.error.code, message: r.error.message };
  if (r.status[0] !== AppendStatus.APPENDED) return { ok: false, code: r.codes[0] ?? 0, message: "the record was not appended" };
  return { ok: true, sequence: r.sequences[0]! };
}

/**
 * The newest `last` (1..100) records of a partition, oldest first — read
 * from the `last`-th newest on, up to PEEK_MAX_BYTES of values (the first
 * record always comes).
 * @throws when the partition does not answer in time
 */
export async function peekLast(env: Env, tenant: string, topic: TopicInfo, partition: number, last: number): Promise<StoredRecord[]> {
  const stub = partitionStub(env, tenant, topic.incarnation, topic.topicId, partition);
  const info = await withDeadline(stub.info() as Promise<PartitionInfo>);
  if (info.lastSequence === 0) return [];
  const from = Math.max(info.firstSequence, info.lastSequence - last + 1);
  return await withDeadline(stub.read(from, last, PEEK_MAX_BYTES) as Promise<StoredRecord[]>);
}
