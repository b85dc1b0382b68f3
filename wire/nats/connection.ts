/**
 * The server side of one NATS client connection as a pure state machine:
 * it takes parsed client operations and fills an {@link Outbox} with the
 * bytes to send, the mq9 requests to run and whether to close. It knows
 * nothing about WebSockets, storage or tokens; the NatsSession Durable
 * Object drives it (decode → this → persist → send).
 *
 * Semantics follow nats-server for one connection in isolation: messages a
 * connection publishes reach its own matching subscriptions (unless CONNECT
 * said `echo: false`); subjects served by the broker (`$mq9.AI.…`) go to
 * the mq9 handler; nothing crosses to other connections. See docs/nats.md.
 */
import { connectToken, parseConnect, type ConnectOptions } from "./connect";
import { encodeErr, encodeHmsg, encodeMsg, msgText, utf8Length, OK, PONG } from "./encoder";
import { NatsErr, NatsProtocolError, fatal, subscribeViolation } from "./errors";
import { encodeHeaderBlock, parseHeaderBlock, toMq9Headers } from "./headers";
import type { ClientOp } from "./parser";
import { isValidPublishSubject, isValidSubject } from "./subject";
import { MAX_SUBSCRIPTIONS, SubscriptionTable, type Subscription } from "./subscriptions";

const te = new TextEncoder();

/** Subject prefix the broker answers itself (mq9). */
export const MQ9_SUBJECT_PREFIX = "$mq9.AI.";

/** Default cap on mq9 requests in flight per connection. */
export const MAX_PENDING_REQUESTS = 4096;
/** Default cap on header+payload bytes of mq9 requests in flight per connection. */
export const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** Default cap on message bytes one batch of operations may produce (fan-out to many own subscriptions). */
export const MAX_OUTBOX_BYTES = 8 * 1024 * 1024;

export interface ConnectionConfig {
  /** max_payload announced in INFO, bytes. */
  maxPayload: number;
  maxPendingRequests?: number;
  maxPendingBytes?: number;
  maxSubscriptions?: number;
  /** Largest total of MSG/HMSG bytes one outbox may collect; beyond it: Slow Consumer. */
  maxOutboxBytes?: number;
  /** Subjects the broker serves; default: those starting with `$mq9.AI.`. */
  isServed?: (subject: string) => boolean;
  /**
   * May this connection subscribe to `subject` (valid; `queue` for a queue
   * subscription)? False → `-ERR 'Permissions Violation for Subscription to
   * "<subject>"'`, nothing subscribed, the connection stays open (as
   * nats-server). Default: every subject. The NatsSession asks the token's
   * scopes (wire/admin/subscribe-scope.ts).
   */
  maySubscribe?: (subject: string, queue: string | undefined) => boolean;
}

/**
 * Per-connection state that must survive hibernation (small; kept in the
 * WebSocket attachment). Before CONNECT the nats-server defaults apply
 * (verbose, pedantic and echo on).
 */
export interface ConnectionState {
  /** CONNECT accepted. */
  connected: boolean;
  /** Authenticated tenant; undefined = CONNECT with a valid token still required. */
  tenant?: string;
  verbose: boolean;
  pedantic: boolean;
  echo: boolean;
  headers: boolean;
  noResponders: boolean;
  /** A fatal error was sent; everything else is ignored. */
  closed: boolean;
}

/** A message to a served subject, to be run by the mq9 handler. */
export interface ServedRequest {
  tenant: string;
  subject: string;
  reply?: string;
  /** Lower-cased header names (see toMq9Headers). */
  headers: Map<string, string>;
  payload: Uint8Array;
  /** Bytes counted against the pending limit; pass back to {@link NatsConnection.requestDone}. */
  size: number;
}

/**
 * What handling produced: what to send (in order), requests to run, close
 * after sending. A string in `out` is the text of whole operations (a MSG
 * with a text payload), sent UTF-8 encoded: `encodeOut` turns the parts
 * into bytes, encoding each run of strings once.
 */
export interface Outbox {
  out: (Uint8Array | string)[];
  requests: ServedRequest[];
  close: boolean;
  /** MSG/HMSG bytes collected so far (bounded by maxOutboxBytes). */
  msgBytes: number;
}

/** A CONNECT whose credentials the caller must check, then pass to {@link NatsConnection.completeConnect}. */
export interface PendingConnect {
  opts: ConnectOptions;
  /** auth_token, or pass; undefined when none given. */
  token?: string;
}

/** Authentication outcome for {@link NatsConnection.completeConnect}. */
export type ConnectAuth = { ok: true; tenant: string } | { ok: false; error?: string };

/** Creates an empty outbox. */
export function newOutbox(): Outbox {
  return { out: [], requests: [], close: false, msgBytes: 0 };
}

/** Initial state: `tenant` is set when the connection is already authenticated (open broker or bridge token). */
export function initialState(tenant?: string): ConnectionState {
  return { connected: false, tenant, verbose: true, pedantic: true, echo: true, headers: false, noResponders: false, closed: false };
}

/** One client connection. */
export class NatsConnection {
  readonly subs: SubscriptionTable;
  readonly state: ConnectionState;
  private readonly maxPendingRequests: number;
  private readonly maxPendingBytes: number;
  private readonly maxOutboxBytes: number;
  private readonly isServed: (subject: string) => boolean;
  private pendingCount = 0;
  private pendingBytes = 0;

  constructor(
    readonly config: ConnectionConfig,
    state: ConnectionState = initialState(),
    subs: Iterable<Subscription> = [],
  ) {
    this.state = { ...state };
    this.subs = new SubscriptionTable(subs, config.maxSubscriptions ?? MAX_SUBSCRIPTIONS);
    this.maxPendingRequests = config.maxPendingRequests ?? MAX_PENDING_REQUESTS;
    this.maxPendingBytes = config.maxPendingBytes ?? MAX_PENDING_BYTES;
    this.maxOutboxBytes = config.maxOutboxBytes ?? MAX_OUTBOX_BYTES;
    this.isServed = config.isServed ?? ((s) => s.startsWith(MQ9_SUBJECT_PREFIX));
  }

  /** mq9 requests handed out and not yet {@link requestDone}: count and bytes. */
  get pending(): { count: number; bytes: number } {
    return { count: this.pendingCount, bytes: this.pendingBytes };
  }

  /**
   * Handles one operation. Returns a {@link PendingConnect} for CONNECT: the
   * caller checks the token and calls {@link completeConnect} before
   * handling the next operation.
   */
  handle(op: ClientOp, box: Outbox): PendingConnect | undefined {
    if (this.state.closed) return;
    if (op.op !== "CONNECT" && this.state.tenant === undefined) return void this.fail(fatal(NatsErr.AuthViolation), box);
    switch (op.op) {
      case "CONNECT": {
        const opts = parseConnect(op.json);
        if (opts instanceof NatsProtocolError) return void this.fail(opts, box);
        return { opts, token: connectToken(opts) };
      }
      case "PING":
        box.out.push(PONG);
        return;
      case "PONG":
        return;
      case "SUB":
        this.onSub(op.subject, op.sid, op.queue, box);
        return;
      case "UNSUB":
        this.subs.unsub(op.sid, op.max);
        if (this.state.verbose) box.out.push(OK);
        return;
      case "PUB":
        this.onPub(op.subject, op.reply, undefined, op.payload, box);
        return;
      case "HPUB":
        if (!this.state.headers) this.fail(fatal(NatsErr.HeadersNotSupported), box);
        else this.onPub(op.subject, op.reply, op.header, op.payload, box);
        return;
    }
  }

  /** Finishes a CONNECT after its credentials were checked. */
  completeConnect(p: PendingConnect, auth: ConnectAuth, box: Outbox): void {
    if (this.state.closed) return;
    if (!auth.ok) return this.fail(fatal(auth.error ?? NatsErr.AuthViolation), box);
    const o = p.opts;
    const headers = o.headers ?? this.state.headers;
    const noResponders = o.no_responders ?? this.state.noResponders;
    if (noResponders && !headers) return this.fail(fatal(NatsErr.NoRespondersRequiresHeaders), box);
    Object.assign(this.state, {
      connected: true,
      tenant: auth.tenant,
      verbose: o.verbose ?? this.state.verbose,
      pedantic: o.pedantic ?? this.state.pedantic,
      echo: o.echo ?? this.state.echo,
      headers,
      noResponders,
    });
    if (this.state.verbose) box.out.push(OK);
  }

  /** Sends `-ERR` for `err`; a fatal error also marks the connection closed. */
  fail(err: NatsProtocolError, box: Outbox): void {
    if (this.state.closed) return;
    box.out.push(encodeErr(err.text));
    if (err.fatal) {
      this.state.closed = true;
      box.close = true;
    }
  }

  /** Releases the pending-limit share of a finished request. */
  requestDone(req: ServedRequest): void {
    this.pendingCount = Math.max(0, this.pendingCount - 1);
    this.pendingBytes = Math.max(0, this.pendingBytes - req.size);
  }

  /**
   * Delivers a message on `subject` to this connection's matching
   * subscriptions (MSG, or HMSG when there is a header block and the client
   * accepts headers). Returns how many subscriptions got it. A fan-out
   * beyond maxOutboxBytes closes the connection with Slow Consumer.
   * A string `payload` (an mq9 JSON reply) is sent UTF-8 encoded; as a MSG
   * it goes into the outbox as text (encoded with its neighbours, once).
   */
  deliver(subject: string, reply: string | undefined, header: Uint8Array | undefined, payload: Uint8Array | string, box: Outbox): number {
    if (this.state.closed) return 0;
    const targets = this.subs.route(subject);
    if (targets.length === 0) return 0;
    // an empty header block (HPUB #hdr 0) is no header: nats-server delivers such a message as MSG
    const withHeader = header !== undefined && header.length > 0 && this.state.headers;
    const text = typeof payload === "string" && !withHeader ? payload : null;
    const bytes = text === null ? (typeof payload === "string" ? te.encode(payload) : payload) : null;
    const size = text !== null ? utf8Length(text) : bytes!.length;
    const each = size + (withHeader ? header.length : 0);
    for (const t of targets) {
      box.msgBytes += each;
      if (box.msgBytes > this.maxOutboxBytes) {
        this.fail(fatal(NatsErr.SlowConsumer), box);
        return targets.length;
      }
      if (text !== null) box.out.push(msgText(subject, t.sid, reply, text, size));
      else box.out.push(withHeader ? encodeHmsg(subject, t.sid, reply, header, bytes!) : encodeMsg(subject, t.sid, reply, bytes!));
    }
    return targets.length;
  }

  private onSub(subject: string, sid: string, queue: string | undefined, box: Outbox): void {
    if (!isValidSubject(subject) || (queue !== undefined && !isValidPublishSubject(queue))) {
      return void box.out.push(encodeErr(NatsErr.InvalidSubject));
    }
    if (this.config.maySubscribe && !this.config.maySubscribe(subject, queue)) return void box.out.push(encodeErr(subscribeViolation(subject, queue)));
    if (this.subs.add(sid, subject, queue) === "limit") return void box.out.push(encodeErr(NatsErr.MaxSubscriptions));
    if (this.state.verbose) box.out.push(OK);
  }

  private onPub(subject: string, reply: string | undefined, header: Uint8Array | undefined, payload: Uint8Array, box: Outbox): void {
    if (!isValidPublishSubject(subject)) return void box.out.push(encodeErr(NatsErr.InvalidPublishSubject));
    const block = header && header.length > 0 ? parseHeaderBlock(header) : null;
    if (header && header.length > 0 && !block) return void box.out.push(encodeErr(NatsErr.BadHeader));
    if (this.state.verbose) box.out.push(OK);
    let delivered = this.state.echo ? this.deliver(subject, reply, header, payload, box) > 0 : false;
    if (this.isServed(subject)) {
      const size = (header?.length ?? 0) + payload.length;
      if (this.pendingCount + 1 > this.maxPendingRequests || this.pendingBytes + size > this.maxPendingBytes) {
        return this.fail(fatal(NatsErr.SlowConsumer), box);
      }
      this.pendingCount++;
      this.pendingBytes += size;
      // copy: a view would keep the whole received WebSocket message alive while the request runs
      box.requests.push({ tenant: this.state.tenant!, subject, reply, headers: toMq9Headers(block), payload: payload.slice(), size });
      delivered = true;
    }
    if (!delivered && reply && this.state.noResponders && this.state.headers) {
      const noResponders = encodeHeaderBlock({ status: 503, headers: [["Nats-Subject", subject]] });
      this.deliver(reply, undefined, noResponders, new Uint8Array(0), box);
    }
  }
}
