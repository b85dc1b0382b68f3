/**
 * `request()`: request/reply over mailboxes with the conversation headers
 * (docs/mq9.md "Conversations"). Each client has a private reply mailbox —
 * created on the first request, with a broker-generated (unguessable)
 * address and a short TTL, replaced by a fresh one before it could expire
 * under a waiting request. A request SENDs with `mq9-reply-to: <reply
 * mailbox>` and a fresh random `mq9-correlation-id`; one poller per reply
 * mailbox long-polls it (consumer group {@link REPLY_GROUP}) while requests
 * wait, hands each answer to the request with its correlation id and
 * acknowledges the batch. Answers nobody waits for any more (late, or
 * duplicates) are acknowledged and dropped.
 */
import { Backoff, sleep } from "./backoff";
import { Mq9ClientError } from "./errors";
import type { Mq9Message } from "./message";

/** Consumer group the poller reads reply mailboxes with. */
export const REPLY_GROUP = "mq9-client-replies";

/** TTL of a reply mailbox, seconds (longer when a request waits longer than a quarter of it). */
export const REPLY_MAILBOX_TTL_S = 600;

/** Long-poll wait of the reply poller, ms. */
const POLL_WAIT_MS = 10_000;

/** What the router needs from the client. */
export interface ReplyRouterClient {
  createMailbox(o: { ttl: number }): Promise<{ mailAddress: string }>;
  fetch(address: string, o: { group: string; deliver: "earliest"; numMsgs: number; maxWaitMs: number; signal: AbortSignal }): Promise<Mq9Message[]>;
  ack(address: string, group: string, msgId: number): Promise<void>;
}

interface Waiter {
  resolve: (m: Mq9Message) => void;
  reject: (e: unknown) => void;
}

/** One reply mailbox and the requests waiting on it. */
class ReplyBox {
  readonly pending = new Map<string, Waiter>();
  polling = false;
  /** Aborts the poller's FETCH in flight (when no request waits any more). */
  poll: AbortController | null = null;

  constructor(
    readonly address: string,
    readonly expiresAtMs: number,
  ) {}
}

/** A random correlation id: 32 hex digits (128 bits, crypto.getRandomValues). */
export function newCorrelationId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** The error of a request whose answer did not come in time. */
function noReply(timeoutMs: number): Mq9ClientError {
  return new Mq9ClientError(`no reply within ${timeoutMs} ms`, { kind: "unavailable", retryable: true, source: "timeout", timeoutMs });
}

/** Routes answers of a client's reply mailboxes to its waiting requests. */
export class ReplyRouter {
  private box: Promise<ReplyBox> | null = null;
  private closed = false;

  constructor(private readonly client: ReplyRouterClient) {}

  /**
   * Sends with `send(replyTo, correlationId)` and resolves with the answer
   * carrying that correlation id.
   * @throws Mq9ClientError source "timeout" when no answer came within `timeoutMs`; any error of the SEND or of the reply mailbox
   */
  async request(timeoutMs: number, send: (replyTo: string, correlationId: string) => Promise<unknown>, signal?: AbortSignal): Promise<Mq9Message> {
    if (this.closed) throw Mq9ClientError.client("the client is closed");
    const box = await this.replyBox(timeoutMs);
    const id = newCorrelationId();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const answer = new Promise<Mq9Message>((resolve, reject) => {
      box.pending.set(id, { resolve, reject });
      timer = setTimeout(() => reject(noReply(timeoutMs)), timeoutMs);
      if (signal) {
        onAbort = () => reject(signal.reason);
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    answer.catch(() => {}); // a SEND failure is thrown instead
    try {
      await send(box.address, id);
      if (!box.polling) void this.pollLoop(box);
      return await answer;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      box.pending.delete(id);
      if (box.pending.size === 0) box.poll?.abort();
    }
  }

  /** Fails every waiting request and stops polling. */
  close(): void {
    this.closed = true;
    const box = this.box;
    this.box = null;
    void box?.then((b) => {
      for (const w of b.pending.values()) w.reject(Mq9ClientError.client("the client was closed while waiting for a reply"));
      b.pending.clear();
      b.poll?.abort();
    }, () => {});
  }

  /** The reply mailbox to use for a request waiting `timeoutMs`: the current one, or a new one when it could expire first. */
  private async replyBox(timeoutMs: number): Promise<ReplyBox> {
    const current = this.box;
    if (current) {
      const b = await current.catch(() => null);
      if (b && b.expiresAtMs - Date.now() > timeoutMs + POLL_WAIT_MS) return b;
      if (this.box !== current) return this.replyBox(timeoutMs); // another request replaced it meanwhile
    }
    const ttl = Math.max(REPLY_MAILBOX_TTL_S, Math.ceil((4 * (timeoutMs + POLL_WAIT_MS)) / 1000));
    const created = this.client.createMailbox({ ttl }).then(({ mailAddress }) => new ReplyBox(mailAddress, Date.now() + ttl * 1000));
    this.box = created;
    created.catch(() => {
      if (this.box === created) this.box = null; // the next request tries again
    });
    return created;
  }

  /** Long-polls `box` while requests wait on it. */
  private async pollLoop(box: ReplyBox): Promise<void> {
    box.polling = true;
    const backoff = new Backoff();
    try {
      while (box.pending.size > 0 && !this.closed) {
        const ac = new AbortController();
        box.poll = ac;
        let batch: Mq9Message[];
        try {
          batch = await this.client.fetch(box.address, { group: REPLY_GROUP, deliver: "earliest", numMsgs: 100, maxWaitMs: POLL_WAIT_MS, signal: ac.signal });
          backoff.reset();
        } catch (e) {
          if (ac.signal.aborted) continue;
          if (!(e instanceof Mq9ClientError) || !e.retryable) {
            for (const w of box.pending.values()) w.reject(e);
            box.pending.clear();
            return;
          }
          await sleep(e.retryAfterMs ?? backoff.next());
          continue;
        }
        for (const m of batch) {
          const w = m.correlationId === null ? undefined : box.pending.get(m.correlationId);
          if (w) {
            box.pending.delete(m.correlationId!);
            w.resolve(m);
          }
        }
        const last = batch[batch.length - 1];
        // acknowledging the last of a batch acknowledges the batch (docs/mq9.md ACK rule 2); if it fails, the next FETCH redelivers and nobody waits for them
        if (last) await this.client.ack(box.address, REPLY_GROUP, last.msgId).catch(() => {});
      }
    } finally {
      box.polling = false;
      box.poll = null;
    }
  }
}
