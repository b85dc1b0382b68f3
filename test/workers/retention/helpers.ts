/**
 * Helpers of the retention tests (project workers-retention: default
 * retention_ms 600 ms, telemetry flush 100 ms). Everything goes through the
 * real Worker: raw MortarMQ frames over a WebSocket, GET /stats, GET /metrics.
 */
import { SELF, env } from "cloudflare:test";
import {
  DeclareFlags, Discard, Op, RetentionFields, decodeDeclareResult, utf8Bytes,
  type DeclareRetention, type DeclareResult, type Frame,
} from "../../../wire/mortar";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import type { PartitionInfo } from "../../../objects/partition/rpc";
import { expectOk } from "../helpers/mortar-ws";
import type { Peer } from "../helpers/peer";
import { parseMetrics } from "../../fixtures/prometheus";

let n = 0;
/** A topic name no other test uses. */
export const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retention fields to set (the others are left as they are). */
export interface RetentionSet {
  ms?: number;
  bytes?: number;
  messages?: number;
  discard?: "old" | "new";
}

/** The DECLARE retention tail setting the fields of `r`. */
export function tail(r: RetentionSet): DeclareRetention {
  return {
    fields: (r.ms !== undefined ? RetentionFields.MS : 0) | (r.bytes !== undefined ? RetentionFields.BYTES : 0)
      | (r.messages !== undefined ? RetentionFields.MESSAGES : 0) | (r.discard !== undefined ? RetentionFields.DISCARD : 0),
    retentionMs: BigInt(r.ms ?? 0), retentionBytes: BigInt(r.bytes ?? 0), retentionMessages: BigInt(r.messages ?? 0),
    discard: r.discard === "new" ? Discard.NEW : Discard.OLD,
  };
}

/** A DECLARE frame with the RETENTION flag and tail (partitions 0 = alter an existing topic). */
export function declareFrame(name: string, partitions: number, r: RetentionSet): Frame {
  return { op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: partitions, flags: DeclareFlags.RETENTION, retention: tail(r) };
}

/** DECLARE with retention settings over `p`'s connection; the OK's decoded result (throws on ERR). */
export async function declareRetention(p: Peer, name: string, partitions: number, r: RetentionSet): Promise<DeclareResult> {
  return decodeDeclareResult(expectOk(await p.request(declareFrame(name, partitions, r)), Op.DECLARE).result);
}

/** The registry's view of `topicId` in the open tenant. */
export async function topicOf(topicId: number): Promise<TopicInfo> {
  const r = (await registryStub(env, "default").lookup(topicId)) as LookupResult;
  if (!r.ok) throw new Error(`lookup ${topicId}: ${r.message}`);
  return r.topic;
}

/** Partition `partition` of `t`. */
export function partitionOf(t: TopicInfo, partition = 0) {
  return partitionStub(env, "default", t.incarnation, t.topicId, partition);
}

/** `Partition.info()` of partition `partition` of `t`. */
export async function infoOf(t: TopicInfo, partition = 0): Promise<PartitionInfo> {
  return (await partitionOf(t, partition).info()) as PartitionInfo;
}

/** Polls `Partition.info()` until `pred` holds (at most `ms`); returns the info that did. */
export async function infoUntil(t: TopicInfo, pred: (i: PartitionInfo) => boolean, ms = 5000, partition = 0): Promise<PartitionInfo> {
  const end = Date.now() + ms;
  for (;;) {
    const i = await infoOf(t, partition);
    if (pred(i)) return i;
    if (Date.now() > end) throw new Error(`partition info did not reach the condition: ${JSON.stringify({ ...i, groups: i.groups.length })}`);
    await sleep(20);
  }
}

/** One topic of GET /stats. */
export interface StatsTopic {
  name: string;
  retention: { retention_ms: number; retention_bytes: number; retention_messages: number; discard: string } | null;
  partitions: {
    partition: number; first_sequence: number; high_watermark: number; size_bytes: number;
    groups: { group: string; committed_floor: number; lag: number; in_flight: number; retention_skipped: number }[];
  }[];
}

/** GET /stats → the topic named `name`. */
export async function statsOf(name: string): Promise<StatsTopic> {
  const res = await SELF.fetch("http://broker/stats");
  const doc = (await res.json()) as { topics: StatsTopic[] };
  const t = doc.topics.find((x) => x.name === name);
  if (!t) throw new Error(`no topic ${name} in /stats`);
  return t;
}

/** The value of `name` with labels `labels` (others ignored) on GET /metrics, 0 when absent. */
export async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await SELF.fetch("http://broker/metrics");
  const samples = parseMetrics(await res.text());
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}
