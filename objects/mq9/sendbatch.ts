/**
 * How one client's mq9 requests reach their Mailboxes: in order, with
 * same-mailbox SENDs coalesced. The ordering is objects/shared/lanes.ts,
 * one lane per mailbox.
 *
 * - Order: a connection's requests must reach a Mailbox in the order the
 *   client sent them (a QUERY pipelined after a SEND sees it). Each request
 *   is queued on its mailbox's lane and issued in lane order, on the same
 *   stub (calls on one stub are delivered in order). Calls are not waited
 *   for: a long-poll FETCH held in the Mailbox must not hold up a SEND that
 *   would answer it.
 * - Admission: a request that must pass a quota check first (a SEND: the
 *   publish rate and storage; a CREATE: the mailbox count) waits for it
 *   inside the lane, so it keeps its place; the connection's later requests
 *   to that mailbox are issued after it. A refused request is not issued
 *   and answers `{ refused }`.
 * - Coalescing: consecutive SENDs to one mailbox issued together (e.g. the
 *   32 PUBs of one NATS WebSocket message from a pipelining client) go to
 *   the Mailbox as ONE `sendMany` RPC instead of one RPC each. Each caller
 *   still gets its own result, in order; nothing is delayed beyond the
 *   current microtask round, and durability is unchanged (the Mailbox
 *   answers only after the commit holding the SENDs).
 *
 * Use one {@link MailboxLanes} per connection (NatsSession). The HTTP
 * transport has one request per invocation: {@link DIRECT} issues at once.
 */
import type { Mailbox } from "../mailbox/Mailbox";
import { unpackSendResult, type PackedSendResult, type SendResult } from "../mailbox/rpc";
import type { Mq9SendOptions } from "../../wire/mq9";
import { ADMITTED, type Refusal } from "../tenants/gate";
import { Lanes } from "../shared/lanes";

/** A request refused before it was issued (by a tenant quota). */
export interface Refused {
  refused: Refusal;
}

/** A Mailbox and the key of its lane. */
export interface LaneTarget {
  /** `tenant/address`: one lane per mailbox. */
  key: string;
  stub: DurableObjectStub<Mailbox>;
}

/** How a transport issues mq9 requests to Mailboxes. */
export interface MailboxCalls {
  /**
   * A SEND to `address`, once `admission` (null = admitted; absent = none)
   * admits it. Resolves with its result or the refusal; rejects when the
   * RPC itself failed (platform error).
   */
  send(t: LaneTarget, address: string, opts: Mq9SendOptions, payload: Uint8Array, admission?: Promise<Refusal | null>): Promise<SendResult | Refused>;
  /**
   * Any other request to the mailbox: `call` issues its RPC on `t.stub` and
   * returns the reply, once `admission` admits it. Rejects when `call`
   * throws or the RPC fails.
   */
  call<R>(t: LaneTarget, call: () => Promise<R>, admission?: Promise<Refusal | null>): Promise<R | Refused>;
}

interface Item {
  t: LaneTarget;
  /** A SEND (coalesced with its neighbours), or null for another request. */
  send: { address: string; opts: Mq9SendOptions; payload: Uint8Array } | null;
  call: (() => Promise<unknown>) | null;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

/** One connection's requests to Mailboxes, in order, same-mailbox SENDs coalesced (see the module comment). */
export class MailboxLanes implements MailboxCalls {
  private readonly lanes = new Lanes<string, Item, Refusal>({
    issue: (_key, batch) => issue(batch),
    refused: (item, refused) => item.resolve({ refused }),
  }, {
    maxInFlight: Infinity,
    kind: (item) => (item.send ? "send" : null),
  });

  send(t: LaneTarget, address: string, opts: Mq9SendOptions, payload: Uint8Array, admission?: Promise<Refusal | null>): Promise<SendResult | Refused> {
    return this.queue<SendResult>(t, { address, opts, payload }, null, admission);
  }

  call<R>(t: LaneTarget, call: () => Promise<R>, admission?: Promise<Refusal | null>): Promise<R | Refused> {
    return this.queue<R>(t, null, call, admission);
  }

  private queue<R>(t: LaneTarget, send: Item["send"], call: Item["call"], admission: Promise<Refusal | null> | undefined): Promise<R | Refused> {
    // admitted at once (the usual case): no admission to wait for (one promise reaction and microtask less per SEND)
    const wait = admission === ADMITTED ? undefined : admission;
    return new Promise<R | Refused>((resolve, reject) => {
      this.lanes.submit(t.key, { t, send, call, resolve: resolve as (v: unknown) => void, reject }, wait);
      if (!wait) this.flushSoon();
    });
  }

  private scheduled = false;

  /** Issues what is queued at the end of this microtask round (requests of one run share calls). */
  private flushSoon(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.lanes.flush();
    });
  }
}

/** Issues one call of a lane: a single request, or consecutive SENDs as one `send` / `sendMany`. */
function issue(batch: Item[]): Promise<void> {
  const first = batch[0]!;
  let call: Promise<unknown[]>;
  try {
    if (first.call) call = first.call().then((r) => [r]);
    else if (batch.length === 1) call = Promise.resolve(first.t.stub.send(first.send!.address, first.send!.opts, first.send!.payload)).then((r) => [r]);
    else {
      const rpc = first.t.stub.sendMany(first.send!.address, batch.map((i) => i.send!.opts), batch.map((i) => i.send!.payload));
      call = Promise.resolve(rpc).then((rs) => (rs as PackedSendResult[]).map(unpackSendResult));
    }
  } catch (e) {
    call = Promise.reject(e);
  }
  return call.then(
    (results) => batch.forEach((item, i) => item.resolve(results[i])),
    (e: unknown) => batch.forEach((item) => item.reject(e)),
  );
}

/** The HTTP transport's calls: issued at once (one request per invocation: nothing to order or coalesce). */
export const DIRECT: MailboxCalls = {
  async send(t, address, opts, payload, admission) {
    const refused = admission && (await admission);
    return refused ? { refused } : t.stub.send(address, opts, payload);
  },
  async call(t, call, admission) {
    const refused = admission && (await admission);
    return refused ? { refused } : call();
  },
};
