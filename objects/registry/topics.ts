/**
 * Topic registry rules, pure (spec §2 DECLARE, §2.1 paired topic_id; DESIGN.md §3).
 *
 * - Names: 1..MAX_TOPIC_LEN (255) bytes of valid UTF-8 (wire/mortar/validate.ts).
 *   Names ending in `.dlq` are reserved for dead-letter twins; DECLARE of
 *   `<source>.dlq` answers the twin of an existing source.
 * - ids: pair p (1..MAX_TOPIC_PAIRS = 32767) gives the source topic_id 2p−1
 *   (odd) and its `.dlq` twin 2p (even): 1/2, 3/4, …, 65533/65534.
 * - Allocation: fresh pairs in increasing order; once all 32767 were handed
 *   out, the lowest pair freed by a delete is reused. None left →
 *   MUTATION_NOT_PACKABLE.
 */
import { MAX_TOPIC_PAIRS } from "../../wire/mortar/constants";
import type { TopicInfo } from "./rpc";
import type { LocationHint } from "../../wire/admin/location-hint";

/** Source (odd) topic_id of pair `pair`. */
export function sourceTopicId(pair: number): number {
  return 2 * pair - 1;
}

/** Twin (even) topic_id of pair `pair`. */
export function twinTopicId(pair: number): number {
  return 2 * pair;
}

/** Pair of a topic_id (0 and ids above 65534 have none → 0). */
export function pairOf(topicId: number): number {
  return topicId >= 1 && topicId <= 2 * MAX_TOPIC_PAIRS ? Math.ceil(topicId / 2) : 0;
}

/** True when `topicId` is a `.dlq` twin (even). */
export function isTwinId(topicId: number): boolean {
  return topicId % 2 === 0;
}

/**
 * Chooses the pair for a new topic. `nextFresh` is the lowest never-used
 * pair; `usedAscending` are the pairs in use, ascending (read only when no
 * fresh pair is left). Returns 0 when all MAX_TOPIC_PAIRS are taken.
 */
export function choosePair(nextFresh: number, usedAscending: () => Iterable<number>, maxPairs = MAX_TOPIC_PAIRS): number {
  if (nextFresh <= maxPairs) return nextFresh;
  let expect = 1;
  for (const p of usedAscending()) {
    if (p > expect) return expect;
    expect = p + 1;
  }
  return expect <= maxPairs ? expect : 0;
}

/** A live topic as the registry stores it (store.ts); its pair holds the source and the twin. */
export interface StoredTopic {
  name: string;
  pair: number;
  partitions: number;
  incarnation: number;
  /** ms since the epoch. */
  createdAt: number;
  /** Where its objects start (set at creation only; shared/location-hint.ts); null = none. */
  locationHint: LocationHint | null;
}

/** The RPC view of a stored topic: its source (`twin` false) or its `.dlq` twin. */
export function topicInfo(t: StoredTopic, twin: boolean): TopicInfo {
  return {
    topicId: twin ? twinTopicId(t.pair) : sourceTopicId(t.pair),
    name: twin ? `${t.name}.dlq` : t.name,
    partitionCount: t.partitions,
    incarnation: t.incarnation,
    dlq: twin,
    createdAt: t.createdAt,
    ...(t.locationHint !== null ? { locationHint: t.locationHint } : {}),
  };
}

/** One alarm run's share of a purge job: which partitions to tell, and whether the job is then done. */
export interface PurgePage {
  partitions: number[];
  done: boolean;
}

/**
 * The next page of a purge job of `partitions` partitions, at most `fanout`
 * of them. `fullFanOut` (a topic created before partitions registered
 * themselves): partitions `next`, `next`+1, … in index order; otherwise the
 * registered partitions still left (`registered(fanout)`, ascending; they
 * are forgotten as they are purged, so the job is done when a page is short).
 */
export function purgePage(
  job: { partitions: number; next: number },
  fullFanOut: boolean,
  registered: (limit: number) => number[],
  fanout: number,
): PurgePage {
  if (!fullFanOut) {
    const partitions = registered(fanout);
    return { partitions, done: partitions.length < fanout };
  }
  const end = Math.min(job.partitions, job.next + fanout);
  const partitions = Array.from({ length: Math.max(0, end - job.next) }, (_, i) => job.next + i);
  return { partitions, done: partitions.length < fanout || end >= job.partitions };
}
