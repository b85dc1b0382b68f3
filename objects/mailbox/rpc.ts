/**
 * Types of the Mailbox RPC surface (objects/mailbox/Mailbox.ts; called by
 * the mq9 service, objects/mq9/dispatch.ts). Request shapes are the
 * decoded mq9 requests of wire/mq9 (FetchSpec, QuerySpec, Mq9SendOptions).
 */
import type { Mq9ErrorCode, Mq9Message } from "../../wire/mq9";

/**
 * Result of a Mailbox RPC: success fields, or an mq9 error kind and its
 * `error` string (`retryAfterS`: for a platform fault, seconds after which a
 * retry may succeed).
 */
export type MailboxResult<T extends object = object> =
  | ({ ok: true } & T)
  | { ok: false; code: Mq9ErrorCode; error: string; retryAfterS?: number };

/** Answer to `send` / one item of `sendMany` (packed: {@link PackedSendResult}): the new msg_id, -1 for a delayed message. */
export type SendResult = MailboxResult<{ msgId: number }>;

/** Answer to `fetchMessages` and `query`: messages in msg_id / delivery order. */
export type MessagesResult = MailboxResult<{ messages: Mq9Message[] }>;

/**
 * One item of `sendMany`'s answer as it crosses the RPC: a success as its
 * bare msg_id, anything else as the SendResult itself. Every item as an
 * object was a visible part of the RPC's (de)serialization CPU.
 */
export type PackedSendResult = number | Exclude<SendResult, { ok: true }>;

/** A SendResult as `sendMany` sends it. */
export function packSendResult(r: SendResult): PackedSendResult {
  return r.ok ? r.msgId : r;
}

/** Inverse of {@link packSendResult}. */
export function unpackSendResult(r: PackedSendResult): SendResult {
  return typeof r === "number" ? { ok: true, msgId: r } : r;
}
