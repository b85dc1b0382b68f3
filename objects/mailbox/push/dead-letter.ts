/**
 * Dead-letter copies (docs/push.md "Dead letters"): after `max_attempts`
 * a pushed message is copied to `<address>.dlq` (Mailbox.deadLetter,
 * idempotent by `ref`) and its subscription moves on.
 */
import { deadLetterAddress, type DeadLetterInfo, type Lane } from "../../../wire/mq9";
import { decodeTags, type MailboxMeta, type StoredMessage } from "../store";
import type { OpenRow, PushConfig } from "./store";

/** A dead-letter copy as the source sends it to its `.dlq` mailbox (Mailbox.deadLetter). */
export interface DeadLetterCopy {
  lane: Lane;
  key: string | null;
  tags: string[];
  payload: Uint8Array;
  replyTo: string | null;
  correlationId: string | null;
  info: DeadLetterInfo;
  /** The source message (`<address>/<push_id>/<msg_id>`): a copy resent after a lost answer is stored once. */
  ref: string;
}

/**
 * The copy of message `m` of mailbox `meta` that subscription `cfg` gave
 * up on (open row `row`: its attempts and last error) at `now` (ms), and
 * the address of the mailbox it goes to.
 */
export function deadLetterCopy(meta: MailboxMeta, cfg: PushConfig, row: OpenRow, m: StoredMessage, now: number): { dlq: string; copy: DeadLetterCopy } {
  const info: DeadLetterInfo = {
    mail_address: meta.address, msg_id: m.msgId, push_id: cfg.pushId, group_name: cfg.group,
    reason: row.lastError ?? "", attempts: row.attempts, time: Math.floor(now / 1000),
  };
  const copy: DeadLetterCopy = {
    lane: m.lane, key: m.key, tags: decodeTags(m.tags), payload: m.payload.slice(), // a copy: an RPC would send the whole segment body the view lies in
    replyTo: m.replyTo, correlationId: m.correlationId, info,
    ref: `${meta.address}/${cfg.pushId}/${m.msgId}`,
  };
  return { dlq: deadLetterAddress(meta.address), copy };
}

/** The subscription's `last_error` when storing a copy in mailbox `dlq` failed with `failure` (≤ 300 characters). */
export function copyFailedError(dlq: string, failure: string): string {
  return `dead-letter mailbox ${dlq}: ${failure}`.slice(0, 300);
}
