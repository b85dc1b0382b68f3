/**
 * Schedule math for the Mailbox's ONE alarm (pure). Persistent schedule
 * rows (delayed deliveries, message TTLs, the mailbox TTL, push
 * subscriptions' next attempts) live in the
 * `schedule` table; long-poll deadlines live in memory with the held
 * requests. The alarm is armed for the earliest of both.
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

/** Earliest of the given times (ms), ignoring nulls; null when none. */
export function earliest(...times: (number | null | undefined)[]): number | null {
  let out: number | null = null;
  for (const t of times) if (t != null && (out === null || t < out)) out = t;
  return out;
}

/** What to do with the alarm so that it fires at `next` (ms) or not at all. */
export type AlarmChange = { kind: "keep" } | { kind: "set"; at: number } | { kind: "delete" };

/** Decides the alarm change from the currently armed time to the wanted one. */
export function alarmChange(current: number | null, next: number | null): AlarmChange {
  if (next === current) return { kind: "keep" };
  if (next === null) return { kind: "delete" };
  return { kind: "set", at: next };
}

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
