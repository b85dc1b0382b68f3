/**
 * `consume()`: an async iterator over a mailbox for one consumer group,
 * long-polling FETCH in a loop (docs/mq9.md "FETCH").
 *
 * - Messages come in delivery order (critical, urgent, normal; FIFO inside
 *   each). Each must be acknowledged with `message.ack()`; FETCH never
 *   moves a position, so a message not acknowledged is delivered again
 *   (at-least-once). When a FETCH returns only messages this consumer
 *   already handed out and that were not acknowledged, it waits
 *   `redeliveryDelayMs` before handing them out again, instead of spinning.
 * - Errors the broker (or the network) says may pass — `retryable`:
 *   unreachable broker, lost connection, timeouts, 503, rate limits — are
 *   waited out: the `Retry-After` the broker sent, else exponential backoff
 *   (100 ms doubling to 10 s, with jitter). Any other error (mailbox does
 *   not exist, bad request, unauthorized) ends the iteration by throwing it.
 * - `close()` or the `signal` ends the iteration cleanly (the loop returns;
 *   a FETCH in flight is abandoned, and what it would have delivered is
 *   delivered again later, since nothing was acknowledged).
 */
import { Backoff, sleep } from "./backoff";
import { Mq9ClientError } from "./errors";
import type { MessageOwner, Mq9Message } from "./message";

/** Options of consume(). */
export interface ConsumeOptions {
  /** The consumer group (required: its stored position is what consume() advances by acknowledging). */
  group: string;
  /** Where a new group starts (docs/mq9.md FETCH; default `latest`, as in the spec). */
  deliver?: "latest" | "earliest" | "from_time" | "from_id";
  fromTime?: number | Date;
  fromId?: number;
  /** Messages per FETCH (broker default 100, max 1000). */
  numMsgs?: number;
  /** Long-poll wait per FETCH, ms (default 10 000; the broker clamps at 30 000). */
  maxWaitMs?: number;
  /** Wait before handing out again messages that were not acknowledged, ms (default 1000). */
  redeliveryDelayMs?: number;
  /** Ends the iteration when aborted. */
  signal?: AbortSignal;
  /** Called for every retryable error before waiting `delayMs` (logging, metrics). */
  onError?: (error: Mq9ClientError, delayMs: number) => void;
}

/** One FETCH for the consumer; the messages must use `owner` for ack() and reply(). */
export type ConsumerFetch = (signal: AbortSignal, owner: MessageOwner) => Promise<Mq9Message[]>;

/** Default long-poll wait of consume(), ms. */
export const CONSUME_MAX_WAIT_MS = 10_000;

/** Default wait before redelivering unacknowledged messages, ms. */
export const REDELIVERY_DELAY_MS = 1000;

/** The iterator consume() returns. */
export class Mq9Consumer implements AsyncIterable<Mq9Message> {
  private readonly stop = new AbortController();
  private started = false;

  constructor(
    private readonly client: MessageOwner,
    private readonly fetchBatch: ConsumerFetch,
    private readonly options: Pick<ConsumeOptions, "signal" | "onError" | "redeliveryDelayMs">,
  ) {
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) this.stop.abort(signal.reason);
      else signal.addEventListener("abort", () => this.stop.abort(signal.reason), { once: true });
    }
  }

  /** True once close() was called or the signal aborted. */
  get closed(): boolean {
    return this.stop.signal.aborted;
  }

  /** Ends the iteration: the loop returns at its next step (a FETCH in flight is abandoned). */
  close(): void {
    this.stop.abort(new Error("consumer closed"));
  }

  [Symbol.asyncIterator](): AsyncIterator<Mq9Message> {
    if (this.started) throw Mq9ClientError.client("a consumer can be iterated only once; call consume() again for another loop");
    this.started = true;
    return this.loop();
  }

  private async *loop(): AsyncGenerator<Mq9Message, void, undefined> {
    const signal = this.stop.signal;
    const backoff = new Backoff();
    let handedOut = new Set<number>();
    const acked = new Set<number>();
    const owner: MessageOwner = {
      ack: async (address, group, msgId) => {
        await this.client.ack(address, group, msgId);
        acked.add(msgId);
      },
      send: (address, payload, opts) => this.client.send(address, payload, opts),
    };
    try {
      while (!signal.aborted) {
        let batch: Mq9Message[];
        try {
          batch = await this.fetchBatch(signal, owner);
          backoff.reset();
        } catch (e) {
          if (signal.aborted) return;
          if (!(e instanceof Mq9ClientError) || !e.retryable) throw e;
          const delay = e.retryAfterMs ?? backoff.next();
          this.options.onError?.(e, delay);
          await sleep(delay, signal);
          continue;
        }
        if (batch.length === 0) continue;
        const redelivery = batch.every((m) => handedOut.has(m.msgId) && !acked.has(m.msgId));
        if (redelivery && !(await sleep(this.options.redeliveryDelayMs ?? REDELIVERY_DELAY_MS, signal))) return;
        handedOut = new Set(batch.map((m) => m.msgId));
        acked.clear();
        for (const m of batch) {
          if (signal.aborted) return;
          yield m;
        }
      }
    } finally {
      this.stop.abort(new Error("consumer ended"));
    }
  }
}
