/**
 * The `@a2a-js/sdk` server side of A2A over mq9 (binding.ts; docs/a2a.md
 * "A2A over mq9"): serves an `A2ARequestHandler` (e.g. the SDK's
 * `DefaultRequestHandler`) from an mq9 mailbox, so the agent needs no
 * public endpoint. Each request message is answered to its `mq9-reply-to`
 * with its `mq9-correlation-id`: one message per response (each event of
 * a stream, as the agent publishes it), the last tagged `a2a.end`.
 *
 * Requests are handled concurrently. The mailbox is read as one consumer
 * group; a request is acknowledged once answered in full, and only when
 * every earlier request is too (an ACK is cumulative), so a request in
 * progress when the agent stops is delivered again to the restarted agent
 * and run again: its client, still waiting, gets the new run's answers.
 */
import { JsonRpcTransportHandler, STATE_HEADERS_KEY, ServerCallContext, UnauthenticatedUser, validateVersion, type A2ARequestHandler } from "@a2a-js/sdk/server";
import type { Mq9Client } from "../client";
import type { Mq9Message } from "../message";
import { Mq9ClientError } from "../errors";
import { Backoff, sleep } from "../backoff";
import { AckTracker } from "./ack-tracker";
import { A2A_END_TAG, A2A_EVENT_TAG, MQ9_A2A_BINDING, decodeBindingMessage, encodeBindingMessage, serviceParameter, type ServiceParameters } from "./binding";

/** Options of {@link serveA2aOverMq9}. */
export interface ServeA2aOverMq9Options {
  /** The client connected to the broker. */
  client: Mq9Client;
  /** The agent's mailbox (it must exist): the mail_address its AgentCard's mq9 interface names. */
  mailbox: string;
  /** Consumer group the mailbox is read with (default `a2a-agent`): keep it across restarts. */
  group?: string;
  /** Stops serving (requests in progress are left unacknowledged: delivered again next time). */
  signal?: AbortSignal;
  /** Called for errors that do not stop serving (an answer that could not be sent, a retryable FETCH error). */
  onError?: (error: unknown) => void;
}

const isStream = (v: unknown): v is AsyncIterable<Record<string, unknown>> =>
  typeof (v as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === "function";

/** The extensions of an `A2A-Extensions` value (comma-separated URIs). */
const extensionsOf = (v: string | undefined) => [...new Set((v ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""))];

/**
 * Serves `handler` from `o.mailbox` until `o.signal` aborts (resolves
 * then). Throws when reading the mailbox fails for good (no such mailbox,
 * unauthorized); retryable errors are waited out.
 */
export async function serveA2aOverMq9(handler: A2ARequestHandler, o: ServeA2aOverMq9Options): Promise<void> {
  const { client, mailbox, signal } = o;
  const group = o.group ?? "a2a-agent";
  const rpc = new JsonRpcTransportHandler(handler);
  const tracker = new AckTracker();
  const backoff = new Backoff();
  const report = (e: unknown) => o.onError?.(e);

  /** Sends one answer, retrying what may pass. */
  const answer = async (m: Mq9Message, payload: Uint8Array, end: boolean) => {
    const retry = new Backoff();
    for (;;) {
      try {
        await client.send(m.replyTo!, payload, { correlationId: m.correlationId!, tags: end ? [A2A_EVENT_TAG, A2A_END_TAG] : [A2A_EVENT_TAG] });
        return;
      } catch (e) {
        if (!(e instanceof Mq9ClientError && e.retryable) || signal?.aborted) throw e;
        report(e);
        await sleep(e.retryAfterMs ?? retry.next(), signal);
      }
    }
  };

  const serve = async (m: Mq9Message) => {
    if (m.replyTo === null || m.correlationId === null) return; // nobody to answer
    const req = decodeBindingMessage(m.payload);
    const id = (req?.rpc.id as string | number | null | undefined) ?? null;
    const error = (e: unknown) => ({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
    if (!req) {
      await answer(m, encodeBindingMessage({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the request is not a JSON object" } }), true);
      return;
    }
    const sp = req.serviceParameters;
    const context = new ServerCallContext({
      requestedExtensions: extensionsOf(serviceParameter(sp, "A2A-Extensions")),
      user: new UnauthenticatedUser(),
      requestedVersion: serviceParameter(sp, "A2A-Version"),
      state: new Map([[STATE_HEADERS_KEY, sp]]),
    });
    const activated = (): ServiceParameters => (context.activatedExtensions?.length ? { "A2A-Extensions": context.activatedExtensions.join(",") } : {});
    let result: unknown;
    try {
      validateVersion(context.requestedVersion, await handler.getAgentCard(), MQ9_A2A_BINDING as Parameters<typeof validateVersion>[2]);
      result = await rpc.handle(req.rpc, context);
    } catch (e) {
      result = error(e);
    }
    if (!isStream(result)) {
      await answer(m, encodeBindingMessage(result as Record<string, unknown>, activated()), true);
      return;
    }
    try {
      for await (const event of result) await answer(m, encodeBindingMessage(event, activated()), false);
    } catch (e) {
      if (signal?.aborted) throw e;
      await answer(m, encodeBindingMessage(error(e)), false);
    }
    await answer(m, new Uint8Array(0), true);
  };

  const run = (m: Mq9Message) => {
    tracker.start(m.msgId);
    void serve(m)
      .catch((e) => {
        if (!signal?.aborted) report(e);
      })
      .then(async () => {
        if (signal?.aborted) return; // stopped: leave it for the next run
        const upTo = tracker.done(m.msgId);
        if (upTo === null) return;
        await client.ack(mailbox, group, upTo).then(() => tracker.acked(upTo), report);
      });
  };

  while (!signal?.aborted) {
    let batch: Mq9Message[];
    try {
      // Nothing in progress: the group's FETCH (what is not acknowledged yet, long-polled). Something in
      // progress: only what came after it (stateless from_id), since the group's FETCH would return it again at once.
      batch = tracker.size === 0
        ? await client.fetch(mailbox, { group, deliver: "earliest", numMsgs: 100, maxWaitMs: 10_000, signal })
        : await client.fetch(mailbox, { deliver: "from_id", fromId: tracker.highestSeen + 1, numMsgs: 100, maxWaitMs: 10_000, signal });
      backoff.reset();
    } catch (e) {
      if (signal?.aborted) return;
      if (!(e instanceof Mq9ClientError && e.retryable)) throw e;
      report(e);
      await sleep(e.retryAfterMs ?? backoff.next(), signal);
      continue;
    }
    for (const m of batch) if (!tracker.has(m.msgId)) run(m);
  }
}
