/**
 * Push delivery requests (mq9 extension, DESIGN §8 "push delivery";
 * docs/push.md): `$mq9.AI.PUSH.CREATE/LIST/DELETE.<mail_address>` bodies,
 * their limits and defaults, the headers of a push request, and the
 * dead-letter mailbox name. Pure; validated with zod like the spec's
 * subjects (schemas.ts).
 */
import { z } from "zod";
import { MAIL_ADDRESS_MAX_CHARS } from "./address";
import { Mq9Error, echo } from "./errors";
import { deliverPolicy, deliverSchema, groupNameSchema, msgIdSchema, parseJsonBody, unixSecondsSchema, wholeNumber, type DeliverPolicy } from "./schemas";
import type { Priority } from "./priority";
import { WEBHOOK_SECRET_PREFIX, whsecKey } from "./push-signature";

export type { DeadLetterInfo, PushInfo } from "./push-types";

/** `max_attempts` when CREATE omits it. */
export const DEFAULT_PUSH_MAX_ATTEMPTS = 8;
/** Largest `max_attempts`. */
export const MAX_PUSH_MAX_ATTEMPTS = 100;
/** `concurrency` when CREATE omits it: one message in flight, strictly ordered. */
export const DEFAULT_PUSH_CONCURRENCY = 1;
/** Largest `concurrency` (messages in flight per subscription). */
export const MAX_PUSH_CONCURRENCY = 32;
/** `timeout_ms` when CREATE omits it: an attempt without an answer in 10 s fails. */
export const DEFAULT_PUSH_TIMEOUT_MS = 10_000;
/** Shortest and longest `timeout_ms`. */
export const MIN_PUSH_TIMEOUT_MS = 100;
export const MAX_PUSH_TIMEOUT_MS = 60_000;
/** Shortest and longest `secret`, UTF-8 bytes. */
export const MIN_PUSH_SECRET_BYTES = 32;
export const MAX_PUSH_SECRET_BYTES = 256;
/** Key bytes a `whsec_` secret may decode to (Standard Webhooks: 24–64). */
export const MIN_WHSEC_KEY_BYTES = 24;
export const MAX_WHSEC_KEY_BYTES = 64;
/** Exponential backoff between attempts of one message (docs/push.md "Retries"). */
export interface PushBackoff {
  /** Wait after the first failed attempt before jitter, ms. */
  baseMs: number;
  /** Longest wait before jitter, ms. */
  maxMs: number;
}

/** 1 s, 2 s, 4 s, … up to 10 min (a deployment may change it: Worker vars PUSH_BACKOFF_BASE_MS, PUSH_BACKOFF_MAX_MS). */
export const DEFAULT_PUSH_BACKOFF: PushBackoff = Object.freeze({ baseMs: 1_000, maxMs: 600_000 });

/** Push subscriptions one mailbox holds at most; more → 429. */
export const MAX_PUSHES_PER_MAILBOX = 8;

/** Suffix of a mailbox's dead-letter mailbox. */
export const DEAD_LETTER_SUFFIX = ".dlq";

/** Longest mail_address that can have a push subscription (its dead-letter mailbox must be a valid address). */
export const MAX_PUSH_SOURCE_ADDRESS_CHARS = MAIL_ADDRESS_MAX_CHARS - DEAD_LETTER_SUFFIX.length;

/** The dead-letter mailbox of `address`: `<address>.dlq`. */
export function deadLetterAddress(address: string): string {
  return address + DEAD_LETTER_SUFFIX;
}

const utf8 = new TextEncoder();

/** `$mq9.AI.PUSH.CREATE.*` body. */
export const pushCreateRequestSchema = z.strictObject({
  group_name: groupNameSchema,
  url: z.string({ error: "must be the endpoint URL (https://…)" }),
  secret: z.string().refine((s) => {
    const n = utf8.encode(s).length;
    return n >= MIN_PUSH_SECRET_BYTES && n <= MAX_PUSH_SECRET_BYTES;
  }, { message: `must be ${MIN_PUSH_SECRET_BYTES}–${MAX_PUSH_SECRET_BYTES} bytes (UTF-8); omit it to have one generated` }).refine((s) => {
    if (!s.startsWith(WEBHOOK_SECRET_PREFIX)) return true;
    const key = whsecKey(s);
    return key !== null && key.length >= MIN_WHSEC_KEY_BYTES && key.length <= MAX_WHSEC_KEY_BYTES;
  }, { message: `a ${WEBHOOK_SECRET_PREFIX} secret must be ${WEBHOOK_SECRET_PREFIX} + standard base64 of ${MIN_WHSEC_KEY_BYTES}–${MAX_WHSEC_KEY_BYTES} bytes (Standard Webhooks)` }).nullish(),
  max_attempts: wholeNumber(1, MAX_PUSH_MAX_ATTEMPTS).nullish(),
  deliver: deliverSchema.nullish(),
  from_id: msgIdSchema.nullish(),
  from_time: unixSecondsSchema.nullish(),
  concurrency: wholeNumber(1, MAX_PUSH_CONCURRENCY).nullish(),
  timeout_ms: wholeNumber(MIN_PUSH_TIMEOUT_MS, MAX_PUSH_TIMEOUT_MS, " of ms").nullish(),
});

/** `$mq9.AI.PUSH.DELETE.*` body. */
export const pushDeleteRequestSchema = z.object({
  push_id: z.string({ error: "must be the push_id CREATE answered" }).min(1, "must not be empty").max(64),
});

/** A normalized PUSH.CREATE request (the URL not yet checked against the deployment's policy). */
export interface PushCreateSpec {
  group: string;
  url: string;
  /** The caller's secret, or null: the broker generates one and answers it once. */
  secret: string | null;
  maxAttempts: number;
  /** Where a group without a stored position starts (as FETCH's `deliver`). */
  deliver: DeliverPolicy;
  concurrency: number;
  timeoutMs: number;
}

/** Parses a PUSH.CREATE body (defaults applied). Throws Mq9Error(bad_request). */
export function parsePushCreateRequest(payload: Uint8Array): PushCreateSpec {
  const b = parseJsonBody(payload, pushCreateRequestSchema);
  return {
    group: b.group_name,
    url: b.url,
    secret: b.secret ?? null,
    maxAttempts: b.max_attempts ?? DEFAULT_PUSH_MAX_ATTEMPTS,
    deliver: deliverPolicy(b),
    concurrency: b.concurrency ?? DEFAULT_PUSH_CONCURRENCY,
    timeoutMs: b.timeout_ms ?? DEFAULT_PUSH_TIMEOUT_MS,
  };
}

/** Parses a PUSH.DELETE body: the push_id. */
export function parsePushDeleteRequest(payload: Uint8Array): string {
  return parseJsonBody(payload, pushDeleteRequestSchema).push_id;
}

/** Throws Mq9Error(bad_request) when `address` is too long to have a dead-letter mailbox. */
export function assertPushSource(address: string): void {
  if (address.length > MAX_PUSH_SOURCE_ADDRESS_CHARS) {
    throw new Mq9Error(
      "bad_request",
      `mailbox ${echo(address)} cannot have a push subscription: its dead-letter mailbox ${echo(deadLetterAddress(address))} ` +
        `would be longer than ${MAIL_ADDRESS_MAX_CHARS} characters (use an address of at most ${MAX_PUSH_SOURCE_ADDRESS_CHARS})`,
    );
  }
}

/** Headers of a push request besides content-type (docs/push.md "The request"). */
export const PUSH_HEADERS = {
  mailAddress: "mq9-mail-address",
  msgId: "mq9-msg-id",
  priority: "mq9-priority",
  key: "mq9-key",
  tags: "mq9-tags",
  createTime: "mq9-create-time",
  attempt: "mq9-attempt",
  pushId: "mq9-push-id",
  replyTo: "mq9-reply-to",
  correlationId: "mq9-correlation-id",
} as const;

/** A message as the push request describes it. */
export interface PushedMessage {
  mailAddress: string;
  msgId: number;
  priority: Priority;
  key: string | null;
  tags: readonly string[];
  /** Visibility time, ms since the epoch. */
  createMs: number;
  /** Conversation headers of the SEND (ASCII by their rules), or null. */
  replyTo?: string | null;
  correlationId?: string | null;
}

/**
 * The push request's `mq9-*` headers of message `m` at attempt `attempt`
 * (1-based). `mq9-key` and each tag are percent-encoded UTF-8
 * (encodeURIComponent; a plain ASCII key such as `status` is unchanged),
 * since HTTP header values cannot carry every character a key may hold;
 * tags are joined with ",". `mq9-reply-to` and `mq9-correlation-id` (ASCII
 * by their rules) are sent as stored. Absent key, tags, reply-to or
 * correlation id: the header is left out.
 */
export function pushHeaders(m: PushedMessage, attempt: number, pushId: string): Record<string, string> {
  const h: Record<string, string> = {
    "content-type": "application/octet-stream",
    [PUSH_HEADERS.mailAddress]: m.mailAddress,
    [PUSH_HEADERS.msgId]: String(m.msgId),
    [PUSH_HEADERS.priority]: m.priority,
    [PUSH_HEADERS.createTime]: String(Math.floor(m.createMs / 1000)),
    [PUSH_HEADERS.attempt]: String(attempt),
    [PUSH_HEADERS.pushId]: pushId,
  };
  if (m.key !== null) h[PUSH_HEADERS.key] = encodeURIComponent(m.key);
  if (m.tags.length) h[PUSH_HEADERS.tags] = m.tags.map(encodeURIComponent).join(",");
  if (m.replyTo) h[PUSH_HEADERS.replyTo] = m.replyTo;
  if (m.correlationId) h[PUSH_HEADERS.correlationId] = m.correlationId;
  return h;
}
