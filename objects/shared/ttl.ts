/**
 * TTL and delay math shared by the Mailbox and the MailboxIndex (pure):
 * mq9 TTLs and delays are whole seconds counted from a given time (ms);
 * 0 means none.
 */

/** Due time (ms) of a delayed message sent at `nowMs` with `delaySec`. */
export function dueAt(nowMs: number, delaySec: number): number {
  return nowMs + delaySec * 1000;
}

/** Expiry (ms) of a message sent at `sentMs` with `ttlSec` (0 = none → null); counts from send time. */
export function messageExpiry(sentMs: number, ttlSec: number): number | null {
  return ttlSec > 0 ? sentMs + ttlSec * 1000 : null;
}

/** Expiry (ms) of a mailbox created at `nowMs` with `ttlSec` (0 = never → null). */
export function mailboxExpiry(nowMs: number, ttlSec: number): number | null {
  return ttlSec > 0 ? nowMs + ttlSec * 1000 : null;
}
