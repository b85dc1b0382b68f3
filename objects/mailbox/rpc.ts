/**
 * Types of the Mailbox RPC surface (objects/mailbox/Mailbox.ts; called by
 * the mq9 service, objects/mq9/dispatch.ts). Request shapes are the
 * decoded mq9 requests of wire/mq9 (FetchSpec, QuerySpec, Mq9SendOptions).
 */
import type { FetchSpec, Mq9ErrorCode, Mq9Message } from "../../wire/mq9";

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

// ---- the long-poll wait socket (`GET /wait`, wait-sockets.ts; its caller objects/mq9/long-poll.ts)

/** Path of the wait upgrade (any host). */
export const WAIT_PATH = "/wait";
/** Tag of parked sockets among the Mailbox's hibernatable WebSockets. */
export const WAIT_TAG = "mq9-wait";
/** Request header: the FETCH, JSON {@link WaitRequest}. */
export const WAIT_HEADER = "x-mq9-wait";
/** 101 answer header: a stateless FETCH's per-lane floors, JSON number[] (absent for a group). */
export const WAIT_FLOORS_HEADER = "x-mq9-wait-floors";
/** The Mailbox's one message on a parked socket: something changed, probe again. */
export const WAKE = "wake";

/** A long-poll FETCH's probe as sent in WAIT_HEADER. */
export interface WaitRequest {
  address: string;
  spec: FetchSpec;
  /** A stateless FETCH's floors from its first probe; null on the first. */
  floors: number[] | null;
  /** When the caller stops waiting (unix ms): at or after it, an empty probe answers `[]` instead of parking. */
  deadline: number;
}
