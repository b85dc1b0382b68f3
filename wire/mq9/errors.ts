/**
 * mq9 error kinds, the spec's exact error strings, and the HTTP status each
 * kind maps to (DESIGN.md §5). Every mq9 reply carries `error` ("" on
 * success); transports with a status code (HTTP) also use `MQ9_HTTP_STATUS`.
 */

/** Machine-readable kind of an mq9 failure. */
export type Mq9ErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "unknown_subject"
  | "mailbox_not_found"
  | "message_not_found"
  | "group_not_found"
  | "message_not_delivered"
  | "push_not_found"
  | "group_pushed"
  | "mailbox_exists"
  | "payload_too_large"
  | "too_many_requests"
  | "quota_exceeded"
  | "unavailable"
  | "internal";

/** HTTP status for each error kind. */
export const MQ9_HTTP_STATUS: Readonly<Record<Mq9ErrorCode, number>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  unknown_subject: 404,
  mailbox_not_found: 404,
  message_not_found: 404,
  group_not_found: 404,
  message_not_delivered: 409,
  push_not_found: 404,
  group_pushed: 409,
  mailbox_exists: 409,
  payload_too_large: 413,
  too_many_requests: 429,
  quota_exceeded: 429,
  unavailable: 503,
  internal: 500,
};

/** A failure with its kind; `message` is the reply's `error` string. */
export class Mq9Error extends Error {
  constructor(
    readonly code: Mq9ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "Mq9Error";
  }

  /** HTTP status of this error. */
  get status(): number {
    return MQ9_HTTP_STATUS[this.code];
  }
}

/**
 * Longest piece of client input (address, subject, header value, name)
 * echoed in an error string, characters. Valid mail_addresses (≤ 128
 * characters) are always echoed whole, so the spec's exact strings hold.
 */
export const MAX_ECHO_CHARS = 128;

/**
 * Client input as an error string may echo it: unchanged up to
 * `max` characters, else its first `max` characters (never splitting a
 * surrogate pair) followed by "…". A 60 KB address must not come back as a
 * 60 KB error.
 */
export function echo(input: string, max = MAX_ECHO_CHARS): string {
  if (input.length <= max) return input;
  let end = max;
  const last = input.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // keep a surrogate pair whole
  return `${input.slice(0, end)}…`;
}

/** The spec's error strings (mq9 spec, 错误一览); the address is echoed with {@link echo}. */
export const mq9Messages = {
  mailboxNotFound: (address: string) => `mailbox ${echo(address)} does not exist`,
  mailboxExists: (address: string) => `mailbox ${echo(address)} already exists`,
  messageNotFound: () => "message not found",
  /** ACK of a message the group was never given (docs/mq9.md, ACK rule 4). */
  notDelivered: (msgId: number, group: string, priority: string, highest: number) =>
    `msg_id ${msgId} has not been delivered to consumer group ${echo(group)}: FETCH it before acknowledging it ` +
    `(highest ${priority} msg_id delivered to the group: ${highest < 0 ? "none" : highest})`,
  /** PUSH.DELETE of an unknown push_id (docs/push.md). */
  pushNotFound: () => "push subscription not found",
  /** FETCH/ACK of a group that a push subscription delivers, or a second push on it (docs/push.md). */
  groupPushed: (group: string, address: string, pushId: string, verb: "FETCH" | "ACK" | "PUSH.CREATE") =>
    verb === "PUSH.CREATE"
      ? `consumer group ${echo(group)} of mailbox ${echo(address)} already has push subscription ${pushId}: DELETE it first or use another group_name`
      : `consumer group ${echo(group)} of mailbox ${echo(address)} is delivered by push subscription ${pushId}: ${verb} on it is refused while the push exists (DELETE the push, or ${verb === "FETCH" ? "FETCH with another group_name" : "use another group"})`,
} as const;
