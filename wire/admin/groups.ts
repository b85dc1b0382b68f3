/**
 * Consumer-group management over HTTP (DESIGN.md §8; docs/groups.md), the
 * shared pure parts: where a reset moves a group (`earliest`, `latest`,
 * `sequence:N`, `time:ISO8601`), the request bodies and the answer documents
 * (zod). Used by the Worker (validation), the ConsumerGroup object and the
 * `mortarmq groups` CLI. No platform imports.
 */
import { z } from "zod";

/**
 * Where a group reset moves a group's position on a partition:
 * - `earliest`: the oldest stored record;
 * - `latest`: after the newest record (only records appended later are delivered);
 * - `sequence`: that sequence is the next one delivered (clamped into [oldest stored, newest + 1]);
 * - `time`: the first record appended at or after `at` (unix ms), or latest when there is none.
 */
export type ResetTarget =
  | { kind: "earliest" }
  | { kind: "latest" }
  | { kind: "sequence"; sequence: number }
  | { kind: "time"; at: number };

/**
 * Parses the `to` of a reset: `earliest`, `latest`, `sequence:N` (N ≥ 1) or
 * `time:ISO8601` (a date-time with a time zone, e.g. `time:2026-05-02T10:00:00Z`).
 * Returns the target or an error text.
 */
export function parseResetTarget(to: string): ResetTarget | { error: string } {
  const v = to.trim();
  if (v === "earliest" || v === "latest") return { kind: v };
  const seq = /^sequence:(\d{1,16})$/.exec(v);
  if (seq) {
    const n = Number(seq[1]);
    return Number.isSafeInteger(n) && n >= 1 ? { kind: "sequence", sequence: n } : { error: "sequence must be a whole number ≥ 1" };
  }
  if (v.startsWith("time:")) {
    const iso = v.slice(5);
    const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(iso) ? Date.parse(iso) : NaN;
    return Number.isNaN(at) ? { error: `time must be an ISO 8601 date-time with a time zone (e.g. time:2026-05-02T10:00:00Z), not "${iso}"` } : { kind: "time", at };
  }
  return { error: `must be earliest, latest, sequence:N or time:ISO8601, not "${to}"` };
}

/** The canonical text of a target (what the answers echo). */
export function formatResetTarget(t: ResetTarget): string {
  switch (t.kind) {
    case "sequence":
      return `sequence:${t.sequence}`;
    case "time":
      return `time:${new Date(t.at).toISOString()}`;
    default:
      return t.kind;
  }
}

// ------------------------------------------------------------------ request bodies

/** `POST /v0/topics/:topic/groups/:group/reset`. */
export const resetBodySchema = z.strictObject({
  /** `earliest`, `latest`, `sequence:N` or `time:ISO8601`. */
  to: z.string({ error: "must be earliest, latest, sequence:N or time:ISO8601" }),
  /** One partition; absent = every partition. */
  partition: z.number({ error: "must be a partition index" }).int("must be a partition index").min(0).max(0xffff).optional(),
});

/** `POST /v0/topics/:topic/groups/:group/pause`. */
export const pauseBodySchema = z.strictObject({
  /** When deliveries start again: an ISO 8601 date-time with a time zone, in the future. */
  until: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time with a time zone, e.g. 2026-05-02T10:00:00Z" }),
});

// ------------------------------------------------------------------ answers

const count = z.number().int().nonnegative();
const time = z.string().nullable();

/** One member of a group. */
export const groupMemberSchema = z.object({
  member_id: count,
  membership_epoch: count,
  assignment_epoch: count,
  /** Partitions it owns (a partition being revoked still counts until confirmed). */
  partitions: z.array(count),
});

/** The group at one partition. */
export const groupPartitionSchema = z.object({
  partition: count,
  /** Owning member, null when none. */
  owner: count.nullable(),
  ownership_epoch: count,
  /** A REVOKE of this partition waits for the owner's CONTROL_ACK (or the revocation timeout). */
  revoking: z.boolean(),
  /** Every sequence ≤ it is settled by the group (0 = none): the position, as in /stats. */
  committed_floor: count,
  /** Next sequence never delivered to the group. */
  next_sequence: count,
  /** Sequence of the newest record (0 = none). */
  high_watermark: count,
  /** high_watermark − committed_floor. */
  lag: count,
  /** Delivered, neither ACKed nor NACKed. */
  in_flight: count,
  /** Waiting for redelivery (NACK RETRY, expired deadline). */
  pending_redelivery: count,
  /** Waiting for the move to the `.dlq` twin. */
  pending_dead_letter: count,
  /** Moved to the `.dlq` twin so far. */
  dead_lettered: count,
  delivered: count,
  acked: count,
  /** A reset waiting to be applied (the owner has not confirmed its REVOKE yet): the sequence it moves to. */
  reset_pending: count.nullable(),
});

/** `GET /v0/topics/:topic/groups/:group`. */
export const groupDocSchema = z.object({
  tenant: z.string(),
  topic: z.string(),
  topic_id: count,
  group: z.string(),
  partition_count: count,
  /** Fixed by the group's first SUB. */
  start_policy: z.enum(["earliest", "latest"]),
  /** Deliveries are paused until then (ISO 8601); null = not paused. */
  paused_until: time,
  members: z.array(groupMemberSchema),
  partitions: z.array(groupPartitionSchema),
  /** Sums over the partitions. */
  lag: count,
  in_flight: count,
  dead_lettered: count,
});

/** One row of `GET /v0/topics/:topic/groups`. */
export const groupSummarySchema = z.object({
  group: z.string(),
  members: count,
  paused_until: time,
  lag: count,
  in_flight: count,
});

/** `GET /v0/topics/:topic/groups`. */
export const groupListSchema = z.object({
  tenant: z.string(),
  topic: z.string(),
  topic_id: count,
  groups: z.array(groupSummarySchema),
});

/** `POST …/reset`: where each partition moves (applied at once, or after its owner's REVOKE is confirmed). */
export const resetAnswerSchema = z.object({
  tenant: z.string(),
  topic: z.string(),
  group: z.string(),
  to: z.string(),
  partitions: z.array(z.object({
    partition: count,
    /** The next sequence delivered after the reset. */
    next_sequence: count,
    /** next_sequence − 1: the committed floor after the reset. */
    committed_floor: count,
    /** True when the partition's owner must confirm a REVOKE first (at most the revocation timeout). */
    pending: z.boolean(),
  })),
});

/** `DELETE …/groups/:group`. */
export const deleteAnswerSchema = z.object({
  tenant: z.string(),
  topic: z.string(),
  group: z.string(),
  deleted: z.literal(true),
  /** Members removed by `force` (their sessions were told, as after a session timeout). */
  removed_members: count,
});

export type GroupDoc = z.infer<typeof groupDocSchema>;
export type GroupPartitionDoc = z.infer<typeof groupPartitionSchema>;
export type GroupSummary = z.infer<typeof groupSummarySchema>;
export type GroupList = z.infer<typeof groupListSchema>;
export type ResetAnswer = z.infer<typeof resetAnswerSchema>;
export type DeleteAnswer = z.infer<typeof deleteAnswerSchema>;
