/**
 * Which partition `mortarmq pub` sends a message to (docs/cli.md, "pub"):
 * a fixed `--partition`; else a keyed message goes to
 * `fnv1a32(key bytes) mod partition_count` (the same key always lands on the
 * same partition, so per-key order holds); else messages go round-robin
 * starting at partition 0 (deterministic, so a re-run with the same
 * `--producer-id` is deduplicated message for message).
 */

/** 32-bit FNV-1a of `bytes` (offset basis 2166136261, prime 16777619), as an unsigned number. */
export function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The partition for `key` among `partitionCount` partitions. */
export function partitionForKey(key: Uint8Array, partitionCount: number): number {
  return fnv1a32(key) % partitionCount;
}

/** Chooses partitions for a stream of messages (see the module comment). */
export class PartitionRouter {
  private next = 0;

  /**
   * @param partitionCount the topic's partitions (≥ 1)
   * @param fixed a partition every message goes to, or undefined
   */
  constructor(private readonly partitionCount: number, private readonly fixed?: number) {}

  /** The partition for a message with `key` (null or empty = no key). */
  route(key: Uint8Array | null): number {
    if (this.fixed !== undefined) return this.fixed;
    if (key !== null && key.length > 0) return partitionForKey(key, this.partitionCount);
    const p = this.next;
    this.next = (this.next + 1) % this.partitionCount;
    return p;
  }
}
