/**
 * NatsSession: one NATS client connection over WebSocket (`GET /nats`), one
 * object per connection (`newUniqueId`). The WebSocket lifecycle (accept
 * with hibernation, attachment, tenant re-check, deadlines, 1 MiB output
 * messages, close, final telemetry report and storage cleanup) is the
 * base's (objects/session-base/SocketSession.ts); this class is the
 * protocol glue.
 *
 * Each WebSocket message: decode (wire/nats parser) → NatsConnection state
 * machine → persist subscription changes → send, then run the mq9 requests
 * it produced concurrently; each reply is delivered as MSG to the
 * connection's subscriptions matching the reply subject when it completes.
 *
 * Slow consumers (docs/nats.md): every drain counts its bytes in an
 * OutputFlow (wire/nats/flow.ts), which appends a PING after each
 * PING_AFTER_BYTES and learns from its PONG what the client has read. More
 * than NATS_MAX_PENDING_BYTES sent and not known read, or a PING
 * unanswered for NATS_WRITE_DEADLINE_MS (a resident deadline: the object
 * stays in memory while one is out), closes the connection with
 * `-ERR 'Slow Consumer'` — the runtime would otherwise buffer, without
 * bound, what a client that never reads was sent.
 *
 * What survives hibernation: the connection state (CONNECT options, tenant)
 * in the attachment, subscriptions in SQLite (store.ts). A partially
 * received operation (split control line or payload) is held in memory
 * only, guarded by a resident deadline: the object stays in memory while
 * one is buffered, and the operation must complete within
 * PARTIAL_OP_TIMEOUT_MS or the connection is closed with
 * `-ERR 'Stale Connection'`. If the object were rebuilt anyway while one
 * was buffered, it closes the connection the same way instead of
 * misreading the stream. See docs/nats.md.
 *
 * A client's PING that arrives as a whole TEXT WebSocket message
 * (`PING\r\n`) is answered `PONG\r\n` (a text message) by the runtime
 * (`setWebSocketAutoResponse`) without waking the object (issue #26 (f)):
 * such a client's keep-alive costs no request and lets it hibernate. The
 * runtime matches text messages only: a binary `PING\r\n` message (nats.ws,
 * the Go client, the bridge) wakes the session, which answers it at once
 * counting nothing, as the runtime would (`keepaliveAnswer`: no telemetry
 * report, no token re-check pulled in); PINGs inside a larger message are
 * handled as any operation; the client's PONGs to our flow-control PINGs
 * are never auto-answered. A text message `PING\r\n`
 * can only be data if an operation was split so that its next message is
 * exactly `PING\r\n` (a payload "PING"): the runtime then answered it and
 * it never reached the parser, so the session closes the connection with
 * `-ERR 'Stale Connection'` rather than misread the stream (detected from
 * the runtime's auto-response time, `autoAnsweredMidOperation`).
 */
import { bearerToken, type AuthResult } from "../tenants/auth";
import { permitSubscribe } from "../tenants/permissions";
import type { Env } from "../env";
import { handleMq9Request, type Mq9RequestContext } from "../mq9/dispatch";
import { errorReply, replyJson, type Mq9Reply } from "../mq9/reply";
import { MailboxLanes } from "../mq9/sendbatch";
import { MailboxStubs } from "../mq9/stubs";
import { LongPollBudget } from "../mq9/long-poll";
import { VERSION } from "../../wire/version";
import {
  NatsConnection,
  initialState,
  newOutbox,
  type ConnectAuth,
  type ConnectionConfig,
  type ConnectionState,
  type Outbox,
  type PendingConnect,
  type ServedRequest,
} from "../../wire/nats/connection";
import { PING, PONG, encodeInfo, encodeOut, type ServerInfo } from "../../wire/nats/encoder";
import { DEFAULT_MAX_PENDING_OUTPUT, DEFAULT_WRITE_DEADLINE_MS, OutputFlow } from "../../wire/nats/flow";
import { DEFAULT_MAX_PAYLOAD, NatsErr, fatal } from "../../wire/nats/errors";
import { clientAddress, newClientId, serverInfo } from "../../wire/nats/info";
import { NatsParser } from "../../wire/nats/parser";
import { SocketSession } from "../session-base/SocketSession";
import { SubscriptionStore } from "./store";
import { Tally } from "../usage/tally";
import { mq9RequestSeries } from "../mq9/request-metrics";

/** A partial operation must complete within this many ms. */
export const PARTIAL_OP_TIMEOUT_MS = 30_000;
/** Without a valid CONNECT within this many ms (auth required), the connection is closed. */
export const AUTH_TIMEOUT_MS = 5_000;

/** Long-poll FETCHes one connection waits for on parked sockets at once (the rest are held in their Mailboxes). */
export const NATS_LONG_POLL_SOCKETS = 4;

/** Deadline kinds of this protocol. */
const PARTIAL = "partial";
const AUTH = "auth";
/** A flow-control PING is out (OutputFlow): answered within the write deadline, or the client is a slow consumer. */
const WRITE = "write";

/**
 * mq9 requests of one connection running at once; the rest wait in order
 * (within the connection's in-flight limits, wire/nats/connection.ts), and
 * none starts while half the pending-output bound is unread: a client that
 * pipelines thousands of requests for large replies and reads nothing
 * makes the broker build at most this many replies before it is closed.
 */
export const MAX_RUNNING_REQUESTS = 256;
/** A client PING sent as one WebSocket message, and the runtime's answer to it (setWebSocketAutoResponse). */
export const AUTO_PING = "PING\r\n";
export const AUTO_PONG = "PONG\r\n";

/** A positive whole-number var, or `dflt`. */
function positiveVar(v: string | undefined, dflt: number): number {
  const n = v === undefined || v.trim() === "" ? NaN : Number(v);
  return Number.isSafeInteger(n) && n > 0 ? n : dflt;
}


export class NatsSession extends SocketSession<ConnectionState> {
  private conn: NatsConnection | null = null;
  private parser: NatsParser | null = null;
  private readonly store: SubscriptionStore;
  /** The upgrade's outcome for onOpen: its tenant (bearer token or open broker), or the `-ERR` refusing it; the client's address. */
  private upgrade: { tenant?: string; refusal?: string; clientIp?: string } = {};
  /**
   * Bytes waiting to be sent, drained by a zero-delay timer: every reply
   * that completes before it fires — including mq9 replies arriving as
   * separate RPC completions in the same event-loop round, e.g. one
   * Mailbox group commit answering 30 SENDs — shares one WebSocket
   * message. Each message costs a hop through every process between the
   * client and this object, so this is what lets a pipelining client
   * (nats.js with many requests in flight) batch its next requests too.
   * When the replies of a round leave no request of the connection
   * unanswered, nothing could join them: they are sent at once (replyBox),
   * without the timer (a Node-compat timer costs as much CPU as several requests).
   */
  private outQueue: (Uint8Array | string)[] = [];
  /** Bytes in outQueue (strings counted by length: near enough for the flow gate). */
  private queuedBytes = 0;
  /** Replies delivered in this microtask round, not yet flushed (replyBox). */
  private replies: Outbox | null = null;
  /** Aborted when the connection closes: its held long-poll FETCHes are released in their Mailboxes at once. */
  private readonly closing = new AbortController();
  /** The connection's requests to each mailbox, in order; same-mailbox SENDs of one inbound message as one RPC. */
  private readonly sends = new MailboxLanes();
  /**
   * Long-poll FETCHes this connection waits for on sockets parked at their
   * Mailboxes (objects/mq9/long-poll.ts: the Mailbox can be evicted); more
   * at once are held in the Mailbox's memory (each socket is one of the
   * connections an invocation may keep open).
   */
  private readonly longPolls = new LongPollBudget(NATS_LONG_POLL_SOCKETS);
  /** Mailbox stubs reused across this connection's requests. */
  private readonly stubs: MailboxStubs;
  /** What every mq9 request of this connection runs with (made on the first). */
  private mq9Context: Mq9RequestContext | null = null;
  /** mq9 requests of this connection, reported by `telemetry` (docs/operations.md). */
  private readonly tally = new Tally();
  /** Output sent and not yet known read by the client (flow-control PINGs). */
  private readonly flow: OutputFlow;
  /** How long a flow-control PING may stay unanswered, ms. */
  private readonly writeDeadlineMs: number;
  /** Arrival times (ms) of the WebSocket messages not handled yet, in order (autoAnsweredMidOperation). */
  private arrivals: number[] = [];
  /** Arrival time of the message handled last (ms; 0 after a rebuild). */
  private lastArrival = 0;
  /** The pending-output bound, bytes (NATS_MAX_PENDING_BYTES). */
  private readonly maxPending: number;
  /** Requests not started yet (MAX_RUNNING_REQUESTS, or too much output unread), in order. */
  private waiting: ServedRequest[] = [];
  /** Requests running now. */
  private running = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "nats");
    this.store = new SubscriptionStore(ctx.storage);
    this.stubs = new MailboxStubs(env);
    this.maxPending = positiveVar(env.NATS_MAX_PENDING_BYTES, DEFAULT_MAX_PENDING_OUTPUT);
    this.flow = new OutputFlow(this.maxPending);
    this.writeDeadlineMs = positiveVar(env.NATS_WRITE_DEADLINE_MS, DEFAULT_WRITE_DEADLINE_MS);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(AUTO_PING, AUTO_PONG));
  }

  /** Notes each message's arrival time before the base queues it (autoAnsweredMidOperation). */
  override webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): void | Promise<void> {
    this.arrivals.push(Date.now());
    return super.webSocketMessage(ws, message);
  }

  /**
   * True when the runtime auto-answered a `PING\r\n` message that arrived
   * after the previous message and before this one while an operation was
   * partly received: those bytes were the operation's, not a PING.
   * `arrivedAt`: this message's arrival (ms).
   */
  private autoAnsweredMidOperation(arrivedAt: number): boolean {
    const previous = this.lastArrival;
    this.lastArrival = arrivedAt;
    if (!this.parser?.partial || previous === 0) return false;
    const ws = this.ctx.getWebSockets()[0];
    const at = ws ? this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() : undefined;
    return at !== undefined && at > previous && at <= arrivedAt;
  }

  /**
   * An `Authorization: Bearer` token on the upgrade (the bridge's --token)
   * authenticates the connection up front: 401 if invalid. Without one the
   * connection authenticates with CONNECT (open broker: at once).
   */
  protected override async onUpgrade(request: Request): Promise<Response | undefined> {
    const bearer = bearerToken(request.headers.get("Authorization"));
    const auth = await this.authenticate(bearer); // without a bearer: ok only when the broker runs open
    const clientIp = clientAddress(request.headers, this.env.LOCAL_CLIENT_ADDRESS);
    if (auth.ok) this.upgrade = { tenant: auth.tenant, clientIp };
    else if (auth.reason === "connections" || auth.reason === "unavailable") this.upgrade = { refusal: connectError(auth), clientIp };
    else if (bearer !== undefined) return new Response(auth.reason === "revoked" || auth.reason === "expired" ? `token ${auth.reason}` : "invalid token", { status: 401 });
    else this.upgrade = { clientIp };
    return undefined;
  }

  /** Sends INFO; refuses at once when the upgrade was refused, else waits AUTH_TIMEOUT_MS for CONNECT if the tenant is unknown. */
  protected override onOpen(): void {
    const { tenant, refusal, clientIp } = this.upgrade;
    this.conn = new NatsConnection(this.connConfig, initialState(tenant));
    this.parser = new NatsParser({ maxPayload: DEFAULT_MAX_PAYLOAD });
    this.send(encodeInfo(this.info(tenant === undefined, clientIp)));
    this.saveState(this.conn.state);
    if (refusal !== undefined) {
      const box = newOutbox();
      this.conn.fail(fatal(refusal), box);
      this.flush(box);
    } else if (tenant === undefined) {
      this.deadline(AUTH, Date.now() + AUTH_TIMEOUT_MS);
    }
  }

  /** The connection's limits, and its SUB permission: the token's current scopes (objects/tenants/permissions.ts permitSubscribe). */
  private readonly connConfig: ConnectionConfig = {
    maxPayload: DEFAULT_MAX_PAYLOAD,
    maySubscribe: (subject) => {
      const p = this.scopedPermit();
      return p === undefined || permitSubscribe(p, subject) === null;
    },
  };

  /**
   * A client's keep-alive `PING\r\n` sent as a whole binary message
   * (nats.ws, the Go client, the bridge: the runtime's auto-response
   * matches text messages only) is answered `PONG\r\n` at once and counts
   * nothing, exactly like the auto-answered text PING: an idle client's
   * PING every 2 minutes then costs no telemetry report and does not pull
   * the token re-check in (issue #26 §2 (f)). Only between operations, on
   * a connected connection with no output queued (the PONG must not
   * overtake a reply).
   */
  protected override keepaliveAnswer(bytes: Uint8Array): Uint8Array | null {
    if (bytes.length !== PING.length || !bytes.every((b, i) => b === PING[i])) return null;
    const conn = this.conn;
    if (!conn || !conn.state.connected || conn.state.closed || !this.parser || this.parser.partial || this.outQueue.length > 0 || this.replies) return null;
    this.lastArrival = this.arrivals.shift() ?? Date.now();
    return PONG;
  }

  /** Rebuilds the connection after hibernation (attachment + stored subscriptions). */
  protected override onResume(state: ConnectionState | null): void {
    this.conn = new NatsConnection(this.connConfig, state ?? initialState(), this.store.load());
    this.parser = new NatsParser({ maxPayload: DEFAULT_MAX_PAYLOAD });
  }

  /** The bytes of a partial operation were lost: never guess at the stream. */
  protected override onLost(): void {
    this.fatal(NatsErr.StaleConnection);
  }

  protected override async onMessage(bytes: Uint8Array): Promise<void> {
    const conn = this.conn;
    const parser = this.parser;
    const arrivedAt = this.arrivals.shift() ?? Date.now();
    if (!conn || !parser || conn.state.closed) return;
    if (this.autoAnsweredMidOperation(arrivedAt)) {
      this.fatal(NatsErr.StaleConnection);
      return;
    }
    const res = parser.push(bytes);
    const box = newOutbox();
    for (const op of res.ops) {
      if (op.op === "PONG" && this.flow.pong()) {
        this.deadline(WRITE, null); // everything before our PING was read
        this.startWaiting(conn);
      }
      const pending = conn.handle(op, box);
      if (pending) conn.completeConnect(pending, await this.checkConnect(conn, pending), box);
      if (box.close) break;
    }
    if (res.error) conn.fail(res.error, box);
    if (conn.state.connected) this.deadline(AUTH, null);
    // a deadline per partial operation: armed for each new one, cleared when none is buffered
    if (!parser.partial || parser.failed) this.deadline(PARTIAL, null);
    else if (res.ops.length > 0 || !this.hasDeadline(PARTIAL)) this.deadline(PARTIAL, Date.now() + PARTIAL_OP_TIMEOUT_MS, "resident");
    this.flush(box);
  }

  protected override onTimeout(kind: string): void {
    const conn = this.conn;
    if (!conn || conn.state.closed) return;
    if (kind === AUTH && !conn.state.connected) this.fatal(NatsErr.AuthTimeout);
    else if (kind === WRITE && this.flow.awaiting) this.fatal(NatsErr.SlowConsumer);
    else if (kind === PARTIAL && this.parser?.partial) this.fatal(NatsErr.StaleConnection);
  }

  protected override onRevoked(): void {
    this.fatal(NatsErr.AuthViolation);
  }

  /** Releases held long-poll FETCHes; nothing more is read or answered. */
  protected override onEnd(): void {
    this.closing.abort();
    if (this.conn) this.conn.state.closed = true;
  }

  protected override drainCounts(add: (series: string, n: number) => void): void {
    this.tally.drain(add);
  }

  /** INFO for this connection; the client's address came from the upgrade request's headers (wire/nats/info.ts). */
  private info(authRequired: boolean, clientIp: string | undefined): ServerInfo {
    return serverInfo({ serverId: this.sessionId, version: VERSION, authRequired, clientId: newClientId(), clientIp });
  }

  /** Checks CONNECT credentials: a token is always verified; none = the tenant from the upgrade, if any. */
  private async checkConnect(conn: NatsConnection, p: PendingConnect): Promise<ConnectAuth> {
    if (p.token === undefined && conn.state.tenant !== undefined) return { ok: true, tenant: conn.state.tenant };
    const auth = await this.authenticate(p.token);
    return auth.ok ? { ok: true, tenant: auth.tenant } : { ok: false, error: connectError(auth) };
  }

  /** Sends a fatal `-ERR text` and closes. */
  private fatal(text: string): void {
    const conn = this.conn;
    if (!conn) return;
    const box = newOutbox();
    conn.fail(fatal(text), box);
    this.flush(box);
  }

  /**
   * Persists subscription changes and state, queues the outbox, starts its
   * requests, closes if asked. `now`: the caller drains the queue right
   * after, so no timer is armed for it.
   */
  private flush(box: Outbox, now = false): void {
    const conn = this.conn!;
    this.store.apply(conn.subs.takeChanges());
    this.saveState(conn.state);
    if (box.out.length > 0) {
      if (this.outQueue.length === 0 && !now) setTimeout(() => this.drain(), 0);
      for (const part of box.out) {
        this.outQueue.push(part); // no spread: one message can hold ~175,000 PINGs, past the call-argument limit
        this.queuedBytes += part.length;
      }
    }
    for (const req of box.requests) this.waiting.push(req);
    if (box.requests.length > 0) this.startWaiting(conn);
    if (box.close) {
      this.drain();
      this.close(1008, "NATS protocol error");
    }
  }

  /**
   * Sends everything queued (the base cuts it into WebSocket messages of at
   * most 1 MiB), with a flow-control PING when one is due; a client that
   * has more than NATS_MAX_PENDING_BYTES unread gets nothing more but
   * `-ERR 'Slow Consumer'`, and is closed.
   */
  private drain(): void {
    if (this.outQueue.length === 0) return;
    const parts = this.outQueue;
    this.outQueue = [];
    this.queuedBytes = 0;
    const out = encodeOut(parts);
    let bytes = 0;
    for (const b of out) bytes += b.length;
    const step = this.conn?.state.closed ? "send" : this.flow.queued(bytes); // a closing connection's last words go out
    if (step === "slow") return this.fatal(NatsErr.SlowConsumer);
    if (step === "send+ping") {
      out.push(PING);
      this.deadline(WRITE, Date.now() + this.writeDeadlineMs, "resident");
    }
    this.send(out);
    if (this.conn && this.waiting.length > 0) this.startWaiting(this.conn); // what waited on the queue may start
  }

  /**
   * Starts waiting requests while fewer than MAX_RUNNING_REQUESTS run and
   * less than half the pending-output bound is unread or about to be sent
   * (sent and unconfirmed, queued, and replies of this round not yet queued).
   */
  private startWaiting(conn: NatsConnection): void {
    const unread = () => this.flow.pending + this.queuedBytes + (this.replies?.msgBytes ?? 0);
    while (this.waiting.length > 0 && this.running < MAX_RUNNING_REQUESTS && unread() < this.maxPending / 2) {
      if (conn !== this.conn || conn.state.closed) {
        this.waiting = [];
        return;
      }
      const req = this.waiting.shift()!;
      this.running++;
      void this.run(conn, req).finally(() => {
        this.running--;
        this.startWaiting(conn);
      });
    }
  }

  /** Runs one mq9 request and delivers its JSON reply to the reply subject. */
  private async run(conn: NatsConnection, req: ServedRequest): Promise<void> {
    let reply: Mq9Reply;
    try {
      // permit: the connection's current scopes (each re-check may change them)
      const permitOf = () => this.scopedPermit();
      this.mq9Context ??= {
        signal: this.closing.signal, sends: this.sends, stubs: this.stubs, quota: this.auth.mq9Quota(), longPolls: this.longPolls,
        get permit() { return permitOf(); },
      };
      reply = await handleMq9Request(this.env, req.tenant, req, this.mq9Context);
    } catch (err) {
      reply = errorReply(err); // never expected (handleMq9Request answers every failure itself)
    }
    conn.requestDone(req);
    this.tally.add(mq9RequestSeries(req.subject, reply, "nats"));
    this.telemetry.touch();
    if (!req.reply || conn !== this.conn || conn.state.closed) return;
    conn.deliver(req.reply, undefined, undefined, replyJson(reply), this.replyBox(conn));
  }

  /**
   * The outbox of the replies completing in this microtask round (one
   * Mailbox group commit answers many SENDs at once), flushed once when the
   * round ends: one persist and one queueing for all of them instead of one
   * per reply.
   */
  private replyBox(conn: NatsConnection): Outbox {
    if (this.replies) return this.replies;
    const box = (this.replies = newOutbox());
    queueMicrotask(() => {
      this.replies = null;
      if (conn !== this.conn || conn.state.closed) return;
      // nothing else in flight (e.g. a pipelining client's whole window answered by one group commit):
      // no other reply can join this message, so it goes now, and no timer is armed for it
      const now = conn.pending.count === 0;
      this.flush(box, now);
      if (now) this.drain();
    });
    return box;
  }
}

/** The `-ERR` text for a refused authentication. */
function connectError(auth: Extract<AuthResult, { ok: false }>): string {
  if (auth.reason === "connections") return NatsErr.MaxConnections;
  if (auth.reason === "unavailable") return NatsErr.AuthUnavailable;
  return NatsErr.AuthViolation;
}
