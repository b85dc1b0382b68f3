/**
 * A mailbox's byte cap (docs/mq9.md "Defaults and limits"): a SEND (or a
 * dead-letter copy) that would take the bytes a mailbox stores past
 * `MQ9_MAILBOX_MAX_BYTES` is refused with 429 `quota_exceeded`, so no
 * mailbox grows to its Durable Object's 10 GB storage cap.
 *
 * The measure is MailboxStore.storedBytes' (payload + key + tags +
 * reply_to + correlation_id of visible and delayed messages). Counting it
 * reads every message row, so it is not done per SEND: the cap keeps an
 * upper bound — the last count plus every byte admitted since — and counts
 * again only when that bound would refuse a SEND, at most once per
 * {@link RECOUNT_MS} (bytes freed by DELETE, expiry or key replacement are
 * seen at the next count). Pure apart from the `count` callback.
 */
import { Mq9Error, echo } from "../../wire/mq9";
import { utf8Length } from "../../wire/nats";
import { nonNegativeInt } from "../shared/int-var";
import type { NewMessage } from "./send-path";

/** Bytes a mailbox stores at most when MQ9_MAILBOX_MAX_BYTES is unset: 1 GiB. */
export const DEFAULT_MAILBOX_MAX_BYTES = 1024 ** 3;

/** A refusing bound is re-counted at most this often, ms. */
export const RECOUNT_MS = 1_000;

/** The cap from the Worker var `MQ9_MAILBOX_MAX_BYTES` (bytes; 0 = no limit; empty or junk = 1 GiB). */
export function mailboxMaxBytes(env: { MQ9_MAILBOX_MAX_BYTES?: string }): number {
  return nonNegativeInt(env.MQ9_MAILBOX_MAX_BYTES, DEFAULT_MAILBOX_MAX_BYTES);
}

/** Bytes `m` adds to the mailbox's stored bytes (an upper bound of MailboxStore.storedBytes' measure of its row). */
export function storedSize(m: NewMessage): number {
  let n = m.payload.byteLength;
  if (m.key !== null) n += utf8Length(m.key);
  if (m.tags.length > 0) n += utf8Length(m.tags.join(",")) + 2; // stored as ",a,b,"
  if (m.replyTo !== null) n += m.replyTo.length;
  if (m.correlationId !== null) n += m.correlationId.length;
  return n;
}

/** One mailbox's byte cap (see the module comment). */
export class MailboxByteCap {
  /** Upper bound of the stored bytes of the mailbox `countedFor`. */
  private held = 0;
  /** The mailbox row (the object's cached meta) the bound belongs to; another (re)created mailbox is counted afresh. */
  private countedFor: object | null = null;
  private countedMs = Number.NEGATIVE_INFINITY;

  /**
   * @param max bytes the mailbox may store (0 = no limit)
   * @param count the mailbox's stored bytes now (MailboxStore.storedBytes)
   */
  constructor(
    readonly max: number,
    private readonly count: () => number,
  ) {}

  /**
   * Admits `bytes` more into the mailbox `mailbox` (its cached meta row) at
   * `now` (ms) and adds them to the bound. Throws Mq9Error
   * `quota_exceeded` (nothing admitted) when they would take it past the cap.
   */
  admit(mailbox: object, address: string, bytes: number, now: number): void {
    if (!this.room(mailbox, bytes, now)) {
      throw new Mq9Error(
        "quota_exceeded",
        `mailbox ${echo(address)} is full: it stores ${this.held} bytes and may store ${this.max} (MQ9_MAILBOX_MAX_BYTES); ` +
          `this message of ${bytes} bytes was not stored — DELETE messages or let them expire, then retry`,
      );
    }
  }

  /** Like {@link admit}, but answers false instead of throwing (nothing admitted). */
  room(mailbox: object, bytes: number, now: number): boolean {
    if (this.max === 0) return true;
    if (this.countedFor !== mailbox || (this.held + bytes > this.max && now - this.countedMs >= RECOUNT_MS)) {
      this.held = this.count();
      this.countedFor = mailbox;
      this.countedMs = now;
    }
    if (this.held + bytes > this.max) return false;
    this.held += bytes; // a write that then fails leaves the bound high: only a recount sooner
    return true;
  }
}
