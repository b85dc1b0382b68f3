/**
 * Schedule math for the Mailbox's ONE alarm (pure). Persistent schedule
 * rows (delayed deliveries, message TTLs, the mailbox TTL, push
 * subscriptions' next attempts) live in the
 * `schedule` table; long-poll deadlines live in memory with the held
 * requests. The object's scheduler (shared/scheduler.ts) arms the alarm
 * for the earliest of both.
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

/** Due time of a delayed message sent at `nowMs` with `delaySec`. */
export function dueAt(nowMs: number, delaySec: number): number {
  return nowMs + delaySec * 1000;
}

/** Expiry of a message sent at `sentMs` with `ttlSec` (0 = none → null); counts from send time. */
export function messageExpiry(sentMs: number, ttlSec: number): number | null {
  return ttlSec > 0 ? sentMs + ttlSec * 1000 : null;
}

/** Expiry of a mailbox created at `nowMs` with `ttlSec` (0 = never → null). */
export function mailboxExpiry(nowMs: number, ttlSec: number): number | null {
  return ttlSec > 0 ? nowMs + ttlSec * 1000 : null;
}
