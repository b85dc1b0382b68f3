/**
 * The rows of the Mailbox's ONE alarm (schedule kinds). Persistent schedule
 * rows (delayed deliveries, message TTLs, the mailbox TTL, push
 * subscriptions' next attempts) live in the
 * `schedule` table; long-poll deadlines live in memory with the held
 * requests. The object's scheduler (shared/scheduler.ts) arms the alarm
 * for the earliest of both. The TTL and delay math is shared/ttl.ts.
 */

/** Kinds of rows in the `schedule` table; `ref` meaning per kind. */
export const ScheduleKind = {
  /** A delayed message becomes visible; ref = `delayed.seq`. */
  deliver: "deliver",
  /** A message TTL ends; ref = `messages.msg_id`. */
  expire: "expire",
  /** The mailbox TTL ends; ref = 0. */
  mailbox: "mailbox",
  /** A push subscription needs the alarm (an attempt or retry is due); ref = `pushes.seq` (push/store.ts). */
  push: "push",
} as const;
export type ScheduleKind = (typeof ScheduleKind)[keyof typeof ScheduleKind];
