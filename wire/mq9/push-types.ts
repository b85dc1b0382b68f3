/**
 * Shapes of push subscriptions in replies (docs/push.md), apart from
 * wire/mq9/push.ts so that the mq9 client's published types need no zod.
 */

/** One push subscription as LIST shows it (never its secret). */
export interface PushInfo {
  push_id: string;
  group_name: string;
  url: string;
  max_attempts: number;
  concurrency: number;
  timeout_ms: number;
  /** `active` (delivering, or nothing to deliver) or `retrying` (a message waits for its next attempt after a failure). */
  state: "active" | "retrying";
  /** Messages acknowledged by a 2xx answer. */
  delivered: number;
  /** Failed attempts (answers other than 2xx, network errors, timeouts). */
  failed: number;
  /** Messages copied to the dead-letter mailbox after max_attempts. */
  dead_lettered: number;
  /** Why the last failed attempt failed, or "" (kept after later successes: compare last_failure_time with last_success_time). */
  last_error: string;
  /** When a message was last acknowledged, unix seconds, or null. */
  last_success_time: number | null;
  /** When the last failure (a failed attempt, or a failed copy to the dead-letter mailbox) happened, unix seconds, or null. */
  last_failure_time: number | null;
  created_time: number;
  /** Messages taken by the subscription and not yet settled (in flight or waiting for a retry). */
  in_flight: number;
  /** Messages of the mailbox the group has not acknowledged yet (in flight included). */
  backlog: number;
}

/** What a dead-letter copy carries about its failure (`dead_letter` of a FETCH/QUERY message). */
export interface DeadLetterInfo {
  /** The mailbox the message was pushed from. */
  mail_address: string;
  /** Its msg_id there. */
  msg_id: number;
  push_id: string;
  group_name: string;
  /** Why the last attempt failed. */
  reason: string;
  /** Attempts made. */
  attempts: number;
  /** When it was dead-lettered, unix seconds. */
  time: number;
}
