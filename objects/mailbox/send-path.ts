/**
 * The Mailbox's send path, pure (no storage, no platform): what a SEND
 * stores, and how a run of SENDs applied in one turn is cut into writes.
 * The glue (Mailbox.ts) persists what these decide (store.ts) and replies.
 */
import { laneOf, type Lane, type Mq9SendOptions } from "../../wire/mq9";
import { messageExpiry } from "../shared/ttl";

/** A message as a SEND (or a dead-letter copy) stores it (store.ts appendVisible, addDelayed). */
export interface NewMessage {
  lane: Lane;
  key: string | null;
  tags: string[];
  payload: Uint8Array;
  sentMs: number;
  expiresMs: number | null;
  /** `mq9-reply-to`, or null. */
  replyTo: string | null;
  /** `mq9-correlation-id`, or null. */
  correlationId: string | null;
  /** A dead-letter copy's DeadLetterInfo as JSON (push delivery), else absent/null. */
  deadLetter?: string | null;
}

/** The message a SEND with header options `opts` and `payload` stores at `now` (ms); its TTL counts from `now`. */
export function newMessage(opts: Mq9SendOptions, payload: Uint8Array, now: number): NewMessage {
  return {
    lane: laneOf(opts.priority),
    key: opts.key,
    tags: opts.tags,
    payload,
    sentMs: now,
    expiresMs: messageExpiry(now, opts.ttlSec),
    replyTo: opts.replyTo ?? null, // ?? null: options from a caller that predates the conversation headers
    correlationId: opts.correlationId ?? null,
  };
}

/**
 * A plain SEND (no delay): stored at once, so runs of them are written
 * together as one segment (a keyed one replaces an older message with its
 * key inside that write, segment-store.ts).
 */
export function isPlain(opts: Mq9SendOptions): boolean {
  return !(opts.delaySec > 0);
}

/**
 * One write of a run of SENDs: `plain` — SENDs [from, to) (at least two,
 * all plain) in one multi-message append; `one` — SEND `at` alone (delayed,
 * or a plain SEND with no plain neighbour).
 */
export type SendWrite = { kind: "plain"; from: number; to: number } | { kind: "one"; at: number };

/**
 * Cuts SENDs applied in one turn (a `sendMany`, or a group commit's
 * waiting SENDs) into writes, in order: every run of two or more plain
 * SENDs is one `plain` write, every other SEND a `one` write. Results are
 * answered in the same order.
 */
export function planSendWrites(opts: readonly Mq9SendOptions[]): SendWrite[] {
  const out: SendWrite[] = [];
  let from = 0; // start of the current run of plain SENDs
  for (let i = 0; i <= opts.length; i++) {
    const o = opts[i];
    if (o !== undefined && isPlain(o)) continue;
    // [from, i) is a run of plain SENDs; o (if any) goes alone
    if (i - from === 1) out.push({ kind: "one", at: from });
    else if (i - from > 1) out.push({ kind: "plain", from, to: i });
    if (o !== undefined) out.push({ kind: "one", at: i });
    from = i + 1;
  }
  return out;
}
