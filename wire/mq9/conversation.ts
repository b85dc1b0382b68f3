/**
 * Conversation headers, an mq9 extension (DESIGN.md §8 "conversations";
 * docs/mq9.md "Conversations"): a SEND may name where answers go and which
 * exchange it belongs to. Both are stored with the message and returned by
 * FETCH and QUERY (`reply_to`, `correlation_id`); QUERY can filter on
 * `correlation_id`.
 *
 * - `mq9-reply-to: <mail_address>` — a valid mail_address (the same rules as
 *   every address, wire/mq9/address.ts). The mailbox need not exist.
 * - `mq9-correlation-id: <id>` — opaque, 1–128 bytes of printable ASCII
 *   (0x20–0x7E; the value is trimmed first, so it neither starts nor ends
 *   with a space). ASCII only, so HTTP and NATS carry the same bytes.
 */
import { mailAddressProblem } from "./address";
import { Mq9Error, echo } from "./errors";

/** Longest `mq9-correlation-id` (and QUERY `correlation_id`), bytes (= characters: ASCII only). */
export const MAX_CORRELATION_ID_BYTES = 128;

/** Returns why `id` is not a valid correlation id, or null when it is. */
export function correlationIdProblem(id: string): string | null {
  if (id.length === 0) return "must not be empty";
  if (id.length > MAX_CORRELATION_ID_BYTES) return `longer than ${MAX_CORRELATION_ID_BYTES} bytes`;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return `contains ${describeChar(id.codePointAt(i)!)} (allowed: printable ASCII, 0x20–0x7E)`;
  }
  return null;
}

/**
 * Validates an `mq9-reply-to` value (already trimmed).
 * @throws Mq9Error(bad_request) `invalid mq9-reply-to "X": <why>` when it is not a mail_address
 */
export function parseReplyTo(value: string): string {
  const problem = mailAddressProblem(value);
  if (problem) throw new Mq9Error("bad_request", `invalid mq9-reply-to "${echo(value)}": ${problem} (it must be a mail_address)`);
  return value;
}

/**
 * Validates a correlation id; `field` names it in the error (`mq9-correlation-id`,
 * or `request field correlation_id` for QUERY).
 * @throws Mq9Error(bad_request) `invalid <field> "X": <why>`
 */
export function parseCorrelationId(value: string, field = "mq9-correlation-id"): string {
  const problem = correlationIdProblem(value);
  if (problem) throw new Mq9Error("bad_request", `invalid ${field} "${echo(value)}": ${problem}`);
  return value;
}

function describeChar(c: number): string {
  if (c < 0x20 || c === 0x7f) return `control character 0x${c.toString(16).padStart(2, "0")}`;
  return `non-ASCII "${String.fromCodePoint(c)}"`;
}
