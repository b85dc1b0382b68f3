/**
 * Mailbox Durable Object: one mq9 mailbox (one per tenant + mail_address,
 * named `objectName("mailbox", tenant, address)`). Implements MSG.SEND /
 * FETCH / ACK / QUERY / DELETE and PUSH.* of the mq9 spec with the
 * decisions of DESIGN.md §5 and docs/mq9.md. MAILBOX.CREATE writes only the
 * mailbox's row in the tenant's MailboxIndex; this object takes the row
 * over on the mailbox's first request (materialize.ts, docs/mq9.md
 * "Mailbox index").
 *
 * This file is the RPC glue: every call waits until the mailbox is here
 * (materialize.ts), runs behind the SEND commit in flight, catches up on
 * due schedule rows (expiry.ts) → decides with the pure modules
 * (send-path.ts, read-path.ts, cursor.ts, batch.ts, waiters.ts) → persists
 * in one `transactionSync` (all SQL in store.ts) → replies. The parts and
 * the state they share are core.ts; SENDs send-apply.ts, FETCH fetch.ts,
 * ACK/QUERY/DELETE/describe message-ops.ts, PUSH.* push-rpc.ts (deliveries
 * push/driver.ts). Delayed deliveries, message TTLs, the mailbox TTL,
 * long-poll deadlines and push share the object's one alarm
 * (shared/scheduler.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { FetchSpec, Mq9SendOptions, PushCreateSpec, PushInfo, QuerySpec } from "../../wire/mq9";
import { packSendResult, type MailboxResult, type MessagesResult, type PackedSendResult, type SendResult, type WaitRequest } from "./rpc";
import { MailboxCore, run } from "./core";
import { a2aReceiverOp, type A2aReceiverOp } from "./a2a-receiver-store";
import { Materializer } from "./materialize";
import { purgeMailbox } from "./expiry";
import { cancelHeld, fetchNow, probeFetch } from "./fetch";
import { answerResponse, park, parkedSocketEnded, waitRequestOf } from "./wait-sockets";
import { ack, deleteMessage, describe, query, type MailboxDescription } from "./message-ops";
import { createPush, deletePush, listPushes, storeDeadLetter } from "./push-rpc";
import type { DeadLetterCopy } from "./push/dead-letter";

export type { MailboxDescription } from "./message-ops";

/**
 * One mq9 mailbox. RPC methods (called by the mq9 service,
 * objects/mq9/dispatch.ts, through `mailboxStub`, stub.ts) return
 * `MailboxResult`s (rpc.ts) and never throw for mq9 errors. `address` is
 * passed on every call for the spec's error strings.
 */
export class Mailbox extends DurableObject<Env> {
  private readonly c: MailboxCore;
  private readonly here: Materializer;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.c = new MailboxCore(ctx, env);
    this.here = new Materializer(this.c);
    void ctx.blockConcurrencyWhile(() => this.c.load());
  }

  /** Runs `op` (returns the answer's fields or throws Mq9Error) once the mailbox is here, behind the SEND commit in flight. */
  private op<T extends object>(address: string, op: () => T): MailboxResult<T> | Promise<MailboxResult<T>> {
    return this.here.whenHere(address, () => this.c.sends.after(() => run(op)));
  }

  /**
   * MSG.SEND: stores `payload` (opaque bytes) with the header options.
   * Returns the new msg_id, or -1 for a delayed message (it gets its id
   * when due, keeping key, tags, priority and TTL). SENDs arriving while a
   * commit is in flight share the next one (shared/groupcommit.ts).
   */
  send(address: string, opts: Mq9SendOptions, payload: Uint8Array): SendResult | Promise<SendResult> {
    const wait = this.here.ready(address);
    if (wait === null) return this.c.sends.submit({ address, opts, payload }); // the hot path: no closure
    return wait.then((f) => f ?? this.c.sends.submit({ address, opts, payload }));
  }

  /**
   * Several MSG.SENDs to this mailbox in one call (a NATS connection
   * pipelining SENDs, see objects/mq9/sendbatch.ts): SEND i has `opts[i]`
   * and `payloads[i]` (two arrays, not one object per SEND: less to
   * (de)serialize). Applied in order in one turn, sharing one commit; one
   * result per SEND, as `send` would answer, packed (rpc.ts packSendResult).
   */
  sendMany(address: string, opts: readonly Mq9SendOptions[], payloads: readonly Uint8Array[]): PackedSendResult[] | Promise<PackedSendResult[]> {
    const submit = () => {
      const rs = this.c.sends.submitAll(payloads.map((payload, i) => ({ address, opts: opts[i]!, payload })));
      return Array.isArray(rs) ? rs.map(packSendResult) : rs.then((all) => all.map(packSendResult));
    };
    return this.here.whenHere(address, submit, (f) => payloads.map(() => packSendResult({ ...f })));
  }

  /**
   * MSG.FETCH: up to `numMsgs` messages in delivery order from the group's
   * floors (stateful) or from `deliver` (stateless). With nothing to
   * deliver and `maxWaitMs` > 0 the request is held and answered as soon as
   * a message becomes visible, or empty at the deadline. `waiterId` (unique
   * per request, chosen by the caller) lets {@link cancelFetch} release the
   * held request when its client goes away.
   */
  async fetchMessages(address: string, spec: FetchSpec, waiterId: string | null = null): Promise<MessagesResult> {
    return await this.here.whenHere(address, async () => await this.c.sends.after(() => fetchNow(this.c, address, spec, waiterId)));
  }

  /**
   * Releases the held long-poll FETCH `waiterId` (its HTTP client
   * disconnected or its NATS connection closed), freeing its slot of
   * MAX_PENDING_FETCHES at once instead of at its deadline. The held call
   * is answered empty; nobody reads it. Returns false when no such FETCH is
   * held (already answered). Must be called on the same stub as the FETCH,
   * after it: calls on one stub are delivered in order.
   */
  cancelFetch(waiterId: string): boolean | Promise<boolean> {
    // in order behind a FETCH that still waits for the commit in flight (fetchMessages)
    return this.c.sends.after(() => cancelHeld(this.c, waiterId));
  }

  /** Long-poll FETCHes held right now, in memory or parked on sockets (at most MAX_PENDING_FETCHES together); for diagnostics and tests. */
  heldFetches(): number {
    return this.c.waiters.size + this.c.parked();
  }

  /**
   * `GET /wait` (WebSocket upgrade, wait-sockets.ts): a long-poll FETCH's
   * probe. The first batch or an error as a JSON MessagesResult (200);
   * nothing to deliver before the request's deadline: 101, the socket parked
   * with hibernation until a message becomes visible (WAKE, then closed).
   * Anything else: 404.
   */
  override async fetch(request: Request): Promise<Response> {
    const w = waitRequestOf(request);
    if (!w) return new Response("not found", { status: 404 });
    return await this.here.whenHere(w.address, () => this.c.sends.after(() => this.probe(w)), (f) => answerResponse(f));
  }

  /** One probe (synchronous: no SEND lands between the empty read and the park). */
  private probe(w: WaitRequest): Response {
    const p = probeFetch(this.c, w.address, w.spec, w.floors, this.c.parked());
    if ("answer" in p) return answerResponse(p.answer);
    if (w.deadline <= Date.now()) return answerResponse({ ok: true, messages: [] });
    const parked = park(this.ctx, w.deadline, p.park.group === null ? p.park.floors : null);
    this.c.telemetry.held(this.c.waiters.size + this.c.parked());
    return parked;
  }

  /** Parked sockets never send (wait-sockets.ts). */
  override webSocketMessage(): void {}

  /** A parked caller left (its deadline, its client gone): the socket goes. */
  override webSocketClose(ws: WebSocket): void {
    parkedSocketEnded(ws);
  }

  override webSocketError(ws: WebSocket): void {
    parkedSocketEnded(ws);
  }

  /**
   * MSG.ACK: advances `group`'s floors per the rule in cursor.ts (never
   * backwards, never past an undelivered message of another lane).
   * Errors: `message not found` for a msg_id never assigned; unknown group;
   * a msg_id above the highest of its lane delivered to the group (409).
   */
  ack(address: string, group: string, msgId: number): MailboxResult | Promise<MailboxResult> {
    return this.op(address, () => ack(this.c, address, group, msgId));
  }

  /**
   * MSG.QUERY: visible messages matching every filter (AND), the newest
   * `limit` of them, returned in msg_id order. Moves no cursor.
   */
  query(address: string, spec: QuerySpec): MessagesResult | Promise<MessagesResult> {
    return this.op(address, () => query(this.c, address, spec));
  }

  /**
   * The mailbox's state for the console (`GET /v0/mailboxes/:address`,
   * docs/console.md): creation, TTL, the next msg_id, unexpired messages and
   * payload bytes per priority lane, delayed messages, and the first 100
   * consumer groups by name with their ack floor and highest delivered
   * msg_id per lane. Moves nothing. Error `mailbox X does not exist`.
   */
  describe(address: string): MailboxResult<{ detail: MailboxDescription }> | Promise<MailboxResult<{ detail: MailboxDescription }>> {
    return this.op(address, () => describe(this.c, address));
  }

  /** MSG.DELETE: removes one visible message. Error `message not found`. */
  deleteMessage(address: string, msgId: number): MailboxResult<{ deleted: true }> | Promise<MailboxResult<{ deleted: true }>> {
    return this.op(address, () => deleteMessage(this.c, address, msgId));
  }

  /**
   * Tenant purge (docs/tenants.md "Deleting a tenant"): after the SEND
   * commit in flight, drops the mailbox and every message (held FETCHes get
   * `mailbox X does not exist`), waits for a usage report in flight, and
   * deletes all of the object's storage and its alarm; nothing counted before
   * is reported. The object is usable again afterwards (a CREATE of the same
   * address starts empty). Idempotent.
   */
  async purge(): Promise<void> {
    await purgeMailbox(this.c);
  }

  /**
   * PUSH.CREATE (docs/push.md): a push subscription delivering consumer
   * group `spec.group` to `spec.url` (already checked against the
   * deployment's URL policy). Answers the push_id, and the secret when it
   * was generated, the mailbox's TTL (s, for its dead-letter mailbox), and
   * `reported`: the tenant's aggregator already counts
   * it (the telemetry is flushed before the answer; TenantDirectory.confirmPush).
   * Errors: mailbox missing, group_pushed, too_many_requests.
   */
  async createPush(address: string, spec: PushCreateSpec): Promise<MailboxResult<{ pushId: string; secret?: string; ttlSec: number; reported: boolean }>> {
    const f = await this.here.ready(address);
    if (f) return f;
    const r = await this.c.sends.after(() => run(() => createPush(this.c, address, spec)));
    return r.ok ? { ...r, reported: await this.c.telemetry.flush() } : r;
  }

  /** The mailbox's A2A receiver token: set, delete or check it (a2a-receiver-store.ts). Error: mailbox missing. */
  a2aReceiver(address: string, op: A2aReceiverOp): MailboxResult<{ valid: boolean }> | Promise<MailboxResult<{ valid: boolean }>> {
    return this.op(address, () => {
      this.c.catchUp();
      this.c.requireMailbox(address);
      return a2aReceiverOp(this.c.storage.sql, op);
    });
  }

  /** PUSH.LIST: the mailbox's push subscriptions with their counters (never the secret). */
  listPushes(address: string): MailboxResult<{ pushes: PushInfo[] }> | Promise<MailboxResult<{ pushes: PushInfo[] }>> {
    return this.op(address, () => listPushes(this.c, address));
  }

  /**
   * PUSH.DELETE: stops push subscription `pushId`; its group stays at its ack floors. Error `push subscription not found`.
   * `reported`: the tenant's aggregator has the new subscription count (TenantDirectory.pushesChanged frees the slot at once).
   */
  async deletePush(address: string, pushId: string): Promise<MailboxResult<{ reported: boolean }>> {
    const f = await this.here.ready(address);
    if (f) return f;
    const r = await this.c.sends.after(() => run(() => deletePush(this.c, address, pushId)));
    return r.ok ? { ...r, reported: await this.c.telemetry.flush() } : r;
  }

  /**
   * Stores a dead-letter copy in this mailbox (`address`, a `<source>.dlq`
   * mailbox), creating the mailbox with `ttlSec` when it does not exist
   * (its index row, outside the tenant's count: the PUSH.CREATE took the slot).
   * Called by the source Mailbox after a pushed message used its
   * max_attempts. Idempotent by `copy.ref`: a copy resent after a lost
   * answer is stored once (answers the stored msg_id).
   */
  deadLetter(address: string, ttlSec: number, copy: DeadLetterCopy): MailboxResult<{ msgId: number }> | Promise<MailboxResult<{ msgId: number }>> {
    const store = () => this.c.sends.after(() => run(() => storeDeadLetter(this.c, address, copy)));
    return this.here.whenHere(address, store, undefined, ttlSec);
  }

  /**
   * The one alarm (shared/scheduler.ts): due schedule rows, long-poll
   * deadlines, the telemetry flush, an index update retry, and push
   * deliveries — a live part: the run starts the attempts that are due and
   * stays open while any is in flight and LINGER_MS after (doing the other
   * work as it comes due), at most a minute; re-arms. Idempotent.
   */
  override async alarm(): Promise<void> {
    await this.c.scheduler.alarm();
  }
}
