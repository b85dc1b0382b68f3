/**
 * The `@a2a-js/sdk` client side of A2A over mq9 (binding.ts; docs/a2a.md
 * "A2A over mq9"): a `TransportFactory` for the binding
 * {@link MQ9_A2A_BINDING}, so `ClientFactory` picks it for an AgentCard
 * that declares it. Each request becomes one mq9 message to the agent's
 * mailbox with this client's reply mailbox as `mq9-reply-to`; the answers
 * are read back from it by correlation id.
 *
 * The transport is the SDK's own JSON-RPC transport (its JSON mapping,
 * errors and stream parsing) with the HTTP exchange replaced: its `fetch`
 * sends the request as an mq9 message and builds the `Response` — JSON for
 * a single answer, `text/event-stream` for a stream — from the answer
 * messages. The A2A service parameters it would send as headers
 * (`A2A-Version`, `A2A-Extensions`) travel in the message.
 */
import { JsonRpcTransportFactory, type Transport, type TransportFactory } from "@a2a-js/sdk/client";
import type { AgentCard } from "@a2a-js/sdk";
import type { Mq9Client } from "../client";
import type { Mq9Message } from "../message";
import { Mq9ClientError } from "../errors";
import { Backoff, sleep } from "../backoff";
import { newCorrelationId } from "../replies";
import { A2A_END_TAG, MQ9_A2A_BINDING, decodeBindingMessage, encodeBindingMessage, mailboxOfInterfaceUrl, serviceParametersOf } from "./binding";

/** Options of {@link Mq9TransportFactory}. */
export interface Mq9TransportFactoryOptions {
  /** TTL of the reply mailbox, seconds (default 86 400): a request must be answered within it. */
  replyTtlS?: number;
  /** Consumer group the reply mailbox is read with (default `a2a-client`). */
  replyGroup?: string;
}

/** Answers for one request, in arrival order. */
class AnswerQueue {
  private readonly items: Mq9Message[] = [];
  private wake: (() => void) | null = null;
  failure: unknown = null;

  push(m: Mq9Message): void {
    this.items.push(m);
    this.wake?.();
  }

  fail(e: unknown): void {
    this.failure = e;
    this.wake?.();
  }

  /** The next answer; throws when the link failed or `signal` aborted. */
  async next(signal?: AbortSignal | null): Promise<Mq9Message> {
    for (;;) {
      const m = this.items.shift();
      if (m) return m;
      if (this.failure !== null) throw this.failure;
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wake = null;
          signal?.removeEventListener("abort", done);
          resolve();
        };
        this.wake = done;
        signal?.addEventListener("abort", done, { once: true });
      });
    }
  }
}

/**
 * One reply mailbox (created on first use, generated address) and the
 * requests waiting on it: one long-poll loop reads it while any waits,
 * routes each answer by correlation id and acknowledges the batch; answers
 * nobody waits for are dropped.
 */
class ReplyLink {
  private box: Promise<string> | null = null;
  private readonly waiting = new Map<string, AnswerQueue>();
  private polling = false;
  /** Aborts the poller's long-poll FETCH once no request waits. */
  private pollAbort: AbortController | null = null;

  constructor(
    private readonly mq9: Mq9Client,
    private readonly o: Required<Mq9TransportFactoryOptions>,
  ) {}

  /** Registers request `id`; resolves with the reply mailbox and its answer queue. */
  async open(id: string): Promise<{ replyTo: string; answers: AnswerQueue }> {
    this.box ??= this.mq9.createMailbox({ ttl: this.o.replyTtlS }).then((r) => r.mailAddress);
    const replyTo = await this.box.catch((e) => {
      this.box = null;
      throw e;
    });
    const answers = new AnswerQueue();
    this.waiting.set(id, answers);
    if (!this.polling) void this.poll(replyTo);
    return { replyTo, answers };
  }

  /** Request `id` wants no more answers. */
  close(id: string): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.pollAbort?.abort();
  }

  private async poll(box: string): Promise<void> {
    this.polling = true;
    const backoff = new Backoff();
    try {
      while (this.waiting.size > 0) {
        let batch: Mq9Message[];
        const abort = (this.pollAbort = new AbortController());
        try {
          batch = await this.mq9.fetch(box, { group: this.o.replyGroup, deliver: "earliest", numMsgs: 100, maxWaitMs: 10_000, signal: abort.signal });
          backoff.reset();
        } catch (e) {
          if (abort.signal.aborted) continue; // nobody waits any more (the loop ends), or a new request does (it goes on)
          if (e instanceof Mq9ClientError && e.retryable) {
            await sleep(e.retryAfterMs ?? backoff.next());
            continue;
          }
          for (const q of this.waiting.values()) q.fail(e);
          this.waiting.clear();
          return;
        }
        for (const m of batch) if (m.correlationId !== null) this.waiting.get(m.correlationId)?.push(m);
        if (batch.length > 0) await batch[batch.length - 1]!.ack().catch(() => {}); // cumulative: the batch
      }
    } finally {
      this.polling = false;
    }
  }
}

const te = new TextEncoder();

/** The `fetch` the SDK's JSON-RPC transport uses: one mq9 request to `mailbox`, its answers as an HTTP response. */
function mq9Fetch(mq9: Mq9Client, link: ReplyLink, mailbox: string): typeof fetch {
  return async (_url: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const signal = init?.signal ?? undefined;
    const streaming = (new Headers(init?.headers).get("accept") ?? "").includes("text/event-stream");
    const id = newCorrelationId();
    const { replyTo, answers } = await link.open(id);
    try {
      await mq9.send(mailbox, encodeBindingMessage(String(init?.body ?? "{}"), serviceParametersOf(init?.headers)), { replyTo, correlationId: id, signal });
      if (!streaming) {
        const m = await answers.next(signal);
        link.close(id);
        const answer = decodeBindingMessage(m.payload);
        const headers: Record<string, string> = { "Content-Type": "application/json" };
        const ext = answer?.serviceParameters["A2A-Extensions"];
        if (ext) headers["A2A-Extensions"] = ext;
        return new Response(JSON.stringify(answer?.rpc ?? null), { status: 200, headers });
      }
    } catch (e) {
      link.close(id);
      throw e;
    }
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const m = await answers.next(signal);
          const answer = decodeBindingMessage(m.payload);
          if (answer) controller.enqueue(te.encode(`data: ${JSON.stringify(answer.rpc)}\n\n`));
          if (m.tags.includes(A2A_END_TAG)) {
            link.close(id);
            controller.close();
          }
        } catch (e) {
          link.close(id);
          controller.error(e);
        }
      },
      cancel() {
        link.close(id);
      },
    });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
}

/**
 * `TransportFactory` of A2A over mq9 for the SDK's `ClientFactory`
 * (`new ClientFactory({ transports: [new Mq9TransportFactory(mq9)] })`).
 * The interface URL names the agent's mailbox (`mq9://<host>/<mail_address>`
 * or the bare address); requests go through `mq9`, already connected to
 * the agent's broker. All transports it creates share one reply mailbox.
 */
export class Mq9TransportFactory implements TransportFactory {
  private link: ReplyLink | null = null;
  private readonly o: Required<Mq9TransportFactoryOptions>;

  constructor(
    private readonly mq9: Mq9Client,
    o: Mq9TransportFactoryOptions = {},
  ) {
    this.o = { replyTtlS: o.replyTtlS ?? 86_400, replyGroup: o.replyGroup ?? "a2a-client" };
  }

  get protocolName(): string {
    return MQ9_A2A_BINDING;
  }

  async create(url: string, agentCard: AgentCard): Promise<Transport> {
    this.link ??= new ReplyLink(this.mq9, this.o);
    const inner = await new JsonRpcTransportFactory({ fetchImpl: mq9Fetch(this.mq9, this.link, mailboxOfInterfaceUrl(url)) }).create(url, agentCard);
    return new Proxy(inner, { get: (t, k, r) => (k === "protocolName" ? MQ9_A2A_BINDING : Reflect.get(t, k, r)) });
  }
}
