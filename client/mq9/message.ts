/**
 * A message as FETCH and QUERY return it (docs/mq9.md "Messages"), with the
 * payload as bytes and the conversation fields of the extension
 * (`reply_to`, `correlation_id`; docs/mq9.md "Conversations").
 */
import type { Mq9Message as Mq9WireMessage } from "../../wire/mq9/messages";
import type { Priority } from "../../wire/mq9/priority";
import type { DeadLetterInfo } from "../../wire/mq9/push-types";
import { Mq9ClientError } from "./errors";
import { decodePayload, type Mq9Payload } from "./payload";

export type { Mq9WireMessage };

/** SEND options (the `mq9-*` headers, docs/mq9.md "Defaults and limits"). */
export interface SendOptions {
  /** `mq9-key`: only the newest message per key is kept (compaction). */
  key?: string;
  /** `mq9-delay`, whole seconds: visible only after this long; the SEND answers msgId -1. */
  delay?: number;
  /** `mq9-ttl`, whole seconds from sending (0 = none). */
  ttl?: number;
  /** `mq9-tags`: QUERY can filter on them. */
  tags?: readonly string[];
  /** `mq9-priority`: normal (default), urgent, critical. */
  priority?: Priority;
  /** `mq9-reply-to`: the mail_address answers should go to. */
  replyTo?: string;
  /** `mq9-correlation-id`: the exchange this message belongs to (≤ 128 printable ASCII bytes). */
  correlationId?: string;
  /** Gives up waiting for the answer (the SEND may still be stored). */
  signal?: AbortSignal;
}

/** What a message needs from its client to ack and reply. */
export interface MessageOwner {
  ack(address: string, group: string, msgId: number): Promise<void>;
  send(address: string, payload: Mq9Payload, opts?: SendOptions): Promise<{ msgId: number }>;
}

const td = new TextDecoder();

/** One stored message. */
export class Mq9Message {
  /** Per-mailbox id (0, 1, 2, … in visibility order). */
  readonly msgId: number;
  /** The payload bytes. */
  readonly payload: Uint8Array;
  readonly priority: Priority;
  /** When the message became visible, unix seconds. */
  readonly createTime: number;
  /** `mq9-key`, or null. */
  readonly key: string | null;
  /** `mq9-tags` (possibly empty). */
  readonly tags: readonly string[];
  /** `mq9-reply-to`, or null. */
  readonly replyTo: string | null;
  /** `mq9-correlation-id`, or null. */
  readonly correlationId: string | null;
  /** On a dead-letter copy (a `<mail_address>.dlq` mailbox): where it came from and why its push failed (docs/push.md), else null. */
  readonly deadLetter: DeadLetterInfo | null;

  /**
   * @param mailAddress the mailbox it was read from
   * @param group the consumer group that fetched it (null: stateless FETCH or QUERY; ack() then refuses)
   */
  constructor(
    private readonly owner: MessageOwner,
    readonly mailAddress: string,
    readonly group: string | null,
    private readonly wire: Mq9WireMessage,
  ) {
    this.msgId = wire.msg_id;
    this.payload = decodePayload(wire.payload);
    this.priority = wire.priority;
    this.createTime = wire.create_time;
    this.key = wire.key ?? null;
    this.tags = wire.tags ?? [];
    this.replyTo = wire.reply_to ?? null;
    this.correlationId = wire.correlation_id ?? null;
    this.deadLetter = wire.dead_letter ?? null;
  }

  /** The payload as UTF-8 text (invalid sequences become U+FFFD). */
  text(): string {
    return td.decode(this.payload);
  }

  /**
   * The payload parsed as JSON.
   * @throws SyntaxError when it is not JSON
   */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }

  /**
   * Acknowledges this message for the group that fetched it ($mq9.AI.MSG.ACK;
   * cumulative inside its priority lane, docs/mq9.md "Cursor and ACK rule").
   * @throws Mq9ClientError invalid_request when it was not fetched for a group; any ACK error
   */
  async ack(): Promise<void> {
    if (this.group === null) throw Mq9ClientError.client(`msg_id ${this.msgId} was not fetched for a consumer group: there is nothing to acknowledge`);
    await this.owner.ack(this.mailAddress, this.group, this.msgId);
  }

  /**
   * Answers this message: sends `payload` to its `replyTo` with its
   * `correlationId` (and `opts`, which may not change either).
   * @throws Mq9ClientError invalid_request when the message has no reply_to; any SEND error
   */
  async reply(payload: Mq9Payload, opts: Omit<SendOptions, "replyTo" | "correlationId"> = {}): Promise<{ msgId: number }> {
    if (this.replyTo === null) throw Mq9ClientError.client(`msg_id ${this.msgId} of ${this.mailAddress} has no reply_to: there is nowhere to send a reply`);
    return this.owner.send(this.replyTo, payload, { ...opts, ...(this.correlationId !== null ? { correlationId: this.correlationId } : {}) });
  }

  /** The message as the broker sent it (payload base64) — what `JSON.stringify` prints. */
  toJSON(): Mq9WireMessage {
    return this.wire;
  }
}
