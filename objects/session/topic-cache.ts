/**
 * Session-side cache of topic metadata (topic_id → name, partition_count,
 * incarnation), pure. A PUB for a cached topic needs no Registry call.
 *
 * Staleness bound: an entry is used for at most TOPIC_CACHE_TTL_MS (1 s)
 * after it was fetched; the next PUB after that waits for a fresh lookup.
 * So after a DECLARE(DELETE) is answered, every session stops routing PUBs
 * to the deleted topic within 1 s (the deleting session at once), and the
 * old incarnation's partitions refuse appends (TOPIC_DELETED) as soon as
 * the Registry's purge reaches them.
 */
import type { TopicInfo } from "../registry/rpc";

/** How long a cached topic entry is trusted, ms. */
export const TOPIC_CACHE_TTL_MS = 1_000;
/** Max cached topics per session (oldest evicted). */
const MAX_ENTRIES = 1024;

export class TopicCache {
  private readonly map = new Map<number, { topic: TopicInfo; at: number }>();

  constructor(private readonly ttlMs = TOPIC_CACHE_TTL_MS) {}

  /** The entry for `topicId` if fetched less than the TTL ago, else undefined. */
  fresh(topicId: number, now: number): TopicInfo | undefined {
    const e = this.map.get(topicId);
    return e && now - e.at < this.ttlMs ? e.topic : undefined;
  }

  /** Stores `topic` as fetched at `now`. */
  put(topic: TopicInfo, now: number): void {
    this.map.delete(topic.topicId);
    this.map.set(topic.topicId, { topic, at: now });
    if (this.map.size > MAX_ENTRIES) this.map.delete(this.map.keys().next().value as number);
  }

  /** Forgets a topic and its twin (after this session deleted it). */
  forgetPair(topicId: number): void {
    const odd = topicId % 2 === 1 ? topicId : topicId - 1;
    this.map.delete(odd);
    this.map.delete(odd + 1);
  }
}
