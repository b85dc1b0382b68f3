/**
 * Topic retention on the SDK side (docs/protocol.md "Topic retention"): the
 * options of `declare()` / `alterTopic()` and their wire tail, and the
 * settings a broker answers.
 */
import { Discard, RetentionFields, type DeclareRetention, type RetentionValues } from "../../wire/mortar";

/** Retention settings of a topic. Limits are per partition; 0 = unlimited. */
export interface TopicRetention {
  /** Records older than this are deleted, ms. */
  retentionMs: number;
  /** Keys + values kept at most, bytes. */
  retentionBytes: number;
  /** Records kept at most. */
  retentionMessages: number;
  /** At a size limit: "old" deletes the oldest records, "new" refuses PUBs (PARTITION_FULL). */
  discard: "old" | "new";
}

/** Options of `MortarClient.declare`. */
export interface DeclareOptions {
  /** Settings to store (the fields given; the others keep their value or default). */
  retention?: Partial<TopicRetention>;
}

/** A DECLARE answer. */
export interface TopicDeclared {
  topicId: number;
  partitionCount: number;
  /** DeclareCreated: 0 created, 1 existed (unchanged), 2 altered (retention settings changed). */
  created: number;
  /** The settings in force, when the request carried retention settings. */
  retention?: TopicRetention;
}

/**
 * The DECLARE retention tail for `r` (the fields given are set).
 * @throws RangeError for a value that is not a whole number in 0..2^53 − 1, or a discard other than old/new
 */
export function retentionTail(r: Partial<TopicRetention>): DeclareRetention {
  const t: DeclareRetention = { fields: 0, retentionMs: 0n, retentionBytes: 0n, retentionMessages: 0n, discard: Discard.OLD };
  const num = (name: string, v: number): bigint => {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a whole number ≥ 0 (0 = unlimited), not ${v}`);
    return BigInt(v);
  };
  if (r.retentionMs !== undefined) {
    t.fields |= RetentionFields.MS;
    t.retentionMs = num("retentionMs", r.retentionMs);
  }
  if (r.retentionBytes !== undefined) {
    t.fields |= RetentionFields.BYTES;
    t.retentionBytes = num("retentionBytes", r.retentionBytes);
  }
  if (r.retentionMessages !== undefined) {
    t.fields |= RetentionFields.MESSAGES;
    t.retentionMessages = num("retentionMessages", r.retentionMessages);
  }
  if (r.discard !== undefined) {
    if (r.discard !== "old" && r.discard !== "new") throw new RangeError(`discard must be "old" or "new", not ${String(r.discard)}`);
    t.fields |= RetentionFields.DISCARD;
    t.discard = r.discard === "new" ? Discard.NEW : Discard.OLD;
  }
  return t;
}

/** The settings a DECLARE OK tail carries. */
export function topicRetention(v: RetentionValues): TopicRetention {
  return {
    retentionMs: Number(v.retentionMs), retentionBytes: Number(v.retentionBytes), retentionMessages: Number(v.retentionMessages),
    discard: v.discard === Discard.NEW ? "new" : "old",
  };
}
