/** RPC shapes of the Mailbox Durable Object (called by worker/mq9/dispatch.ts). */
import type { Mq9ErrorCode } from "../../wire/mq9";

/**
 * Result of a Mailbox RPC: success fields, or an mq9 error kind and its
 * `error` string (`retryAfterS`: for a platform fault, seconds after which a
 * retry may succeed).
 */
export type MailboxResult<T extends object = object> =
  | ({ ok: true } & T)
  | { ok: false; code: Mq9ErrorCode; error: string; retryAfterS?: number };
