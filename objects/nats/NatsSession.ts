/**
 * NatsSession: one NATS client connection over WebSocket (`GET /nats`), one
 * object per connection (`newUniqueId`), using the WebSocket Hibernation API.
 *
 * Each WebSocket message: decode (wire/nats parser) → NatsConnection state
 * machine → persist subscription changes → send, then run the mq9 requests
 * it produced concurrently; each reply is delivered as MSG to the
 * connection's subscriptions matching the reply subject when it completes.
 *
 * What survives hibernation: the connection state (CONNECT options, tenant)
 * in the WebSocket attachment, subscriptions in SQLite. A partially received
 * operation (split control line or payload) is held in memory only; while
 * one is buffered a timer is pending, which keeps the object resident (an
 * object with a pending timer is not hibernated), and the operation must
 * complete within PARTIAL_OP_TIMEOUT_MS or the connection is closed with
 * `-ERR 'Stale Connection'`. The attachment records that a partial
 * operation is buffered, so if the object were ever rebuilt anyway it
 * closes the connection the same way instead of misreading the stream.
 * See docs/nats.md.
 */
import { DurableObject } from "cloudflare:workers";
import { bearerToken, type AuthResult } from "../tenants/auth";
import { ConnectionAuth, type ConnectionAuthSnapshot } from "../tenants/connection-auth";
import type { Env } from "../env";
import { errorReply, handleMq9Request, replyJson, type Mq9Reply } from "../mq9/dispatch";
import { SendCoalescer } from "../mq9/sendbatch";
import { MailboxStubs } from "../mq9/stubs";
import { VERSION } from "../../wire/version";
import {
  NatsConnection,
  initialState,
  newOutbox,
  type ConnectAuth,
  type ConnectionState,
  type Outbox,
  type PendingConnect,
  type ServedRequest,
} from "../../wire/nats/connection";
import { chunkBytes, encodeInfo, type ServerInfo } from "../../wire/nats/encoder";
import { DEFAULT_MAX_PAYLOAD, NatsErr, fatal } from "../../wire/nats/errors";
import { NatsParser } from "../../wire/nats/parser";
import { SubscriptionStore } from "./store";
import { ConnectionTelemetry } from "../usage/connection";
import { series } from "../usage/catalog";
import { telemetryFlushMs } from "../usage/stub";
import { Tally } from "../usage/tally";
import { mq9RequestSeries } from "../mq9/request-metrics";

const BYTES_IN = series("mortarmq_bytes_received_total", { protocol: "nats" });
const BYTES_OUT = series("mortarmq_bytes_sent_total", { protocol: "nats" });

/** A partial operation must complete within this many ms. */
export const PARTIAL_OP_TIMEOUT_MS = 30_000;
/** Without a valid CONNECT within this many ms (auth required), the connection is closed. */
export const AUTH_TIMEOUT_MS = 5_000;
/**
 * Largest WebSocket message the session sends, bytes. Replies completing
 * together share messages up to this size; a larger reply is cut (the
 * stream may be cut anywhere). Without a cap, one round of large FETCH or
 * QUERY replies became one message of hundreds of MiB, which clients such
 * as `ws` (nats.ws in Node, the TCP bridge: 100 MiB default) refuse by
 * dropping the connection.
 */
export const MAX_SEND_MESSAGE_BYTES = 1024 * 1024;
/** Interval of the storage garbage-collection alarm, ms (only armed once subscriptions were stored). */
export const GC_INTERVAL_MS = 60 * 60 * 1000;

/** What the WebSocket attachment holds (small; survives hibernation). */
interface Attachment {
  state: ConnectionState;
  /** A partial operation was buffered when this was written. */
  partial: boolean;
  /** Tenant side (token id, lease, last check, quotas): objects/tenants/connection-auth.ts. */
  auth?: ConnectionAuthSnapshot | null;
}

const te = new TextEncoder();

export class NatsSession extends DurableObject<Env> {
  private conn: NatsConnection | null = null;
  private parser: NatsParser | null = null;
  private readonly store: SubscriptionStore;
  /** Inbound messages are handled one after another (CONNECT may await token checks). */
  private chain: Promise<void> = Promise.resolve();
  private partialTimer: ReturnType<typeof setTimeout> | null = null;
  private authTimer: ReturnType<typeof setTimeout> | null = null;
  private partialFlag = false;
  /** JSON of the attachment last stored on the WebSocket. */
  private savedAttachment = "";
  /**
   * Bytes waiting to be sent, drained by a zero-delay timer: every reply
   * that completes before it fires — including mq9 replies arriving as
   * separate RPC completions in the same event-loop round, e.g. one
   * Mailbox group commit answering 30 SENDs — shares one WebSocket
   * message. Each message costs a hop through every process between the
   * client and this object, so this is what lets a pipelining client
   * (nats.js with many requests in flight) batch its next requests too.
   */
  private outQueue: Uint8Array[] = [];
  /** Aborted when the connection closes: its held long-poll FETCHes are released in their Mailboxes at once. */
  private readonly closing = new AbortController();
  /** Same-mailbox SENDs of one inbound message go to the Mailbox as one RPC. */
  private readonly sends = new SendCoalescer();
  /** Mailbox stubs reused across this connection's requests. */
  private readonly stubs: MailboxStubs;
  /** Bytes and mq9 requests of this connection, reported by `telemetry` (docs/operations.md). */
  private readonly tally = new Tally();
  private readonly telemetry: ConnectionTelemetry;
  private finished = false;
  /** Token re-check, connection lease and quotas of this connection (docs/tenants.md). */
  private readonly auth: ConnectionAuth;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.auth = new ConnectionAuth(env, "nats", ctx.id.toString());
    this.store = new SubscriptionStore(ctx.storage);
    this.stubs = new MailboxStubs(env);
    this.telemetry = new ConnectionTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), protocol: "nats",
      drain: (add) => this.tally.drain(add),
    });
  }

  /**
   * Accepts the WebSocket upgrade forwarded by `GET /nats` and sends INFO.
   * An `Authorization: Bearer` token on the upgrade (the bridge's --token)
   * authenticates the connection up front: 401 if invalid.
   */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected Upgrade: websocket", { status: 426 });
    }
    let tenant: string | undefined;
    let refusal: string | undefined;
    const bearer = bearerToken(request.headers.get("Authorization"));
    const auth = await this.auth.connect(bearer); // without a bearer: ok only when the broker runs open
    if (auth.ok) tenant = auth.tenant;
    else if (auth.reason === "connections" || auth.reason === "unavailable") refusal = connectError(auth);
    else if (bearer !== undefined) return new Response(auth.reason === "revoked" ? "token revoked" : "invalid token", { status: 401 });
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    this.conn = new NatsConnection({ maxPayload: DEFAULT_MAX_PAYLOAD }, initialState(tenant));
    this.parser = new NatsParser({ maxPayload: DEFAULT_MAX_PAYLOAD });
    this.saveAttachment(server);
    const info = encodeInfo(this.info(tenant === undefined));
    server.send(info);
    this.tally.add(BYTES_OUT, info.length);
    if (refusal !== undefined) {
      const box = newOutbox();
      this.conn.fail(fatal(refusal), box);
      this.flush(server, box);
    } else if (tenant === undefined) {
      this.authTimer = setTimeout(() => this.onAuthTimeout(server), AUTH_TIMEOUT_MS);
    } else {
      await this.startTelemetry(tenant);
    }
    return new Response(null, { status: 101, webSocket: client });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    this.chain = this.chain.then(() => this.onMessage(ws, message)).catch((err) => this.crash(ws, err));
    return this.chain;
  }

  override async webSocketClose(ws: WebSocket): Promise<void> {
    await this.shutdown(ws, 1000, "closed by client");
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.shutdown(ws, 1011, "websocket error");
  }

  /**
   * Storage garbage collection: once no WebSocket is left (the object lost
   * its connection without a close, or a final telemetry report failed),
   * reports what is left and drops stored subscriptions.
   */
  override async alarm(): Promise<void> {
    const ws = this.ctx.getWebSockets()[0];
    if (ws) {
      const now = Date.now();
      const { conn } = this.load(ws);
      if (!conn.state.closed && now >= this.auth.nextCheckAt) {
        const r = await this.auth.revalidate(now);
        if (!r.ok) {
          const box = newOutbox();
          conn.fail(fatal(NatsErr.AuthViolation), box);
          this.flush(ws, box);
          return;
        }
        this.saveAttachment(ws);
      }
      await this.ctx.storage.setAlarm(Math.min(now + GC_INTERVAL_MS, this.auth.nextCheckAt));
    } else if (await this.telemetry.finish()) {
      await this.store.clear();
      await this.ctx.storage.deleteAlarm();
    } else {
      await this.ctx.storage.setAlarm(Date.now() + telemetryFlushMs(this.env));
    }
  }

  /**
   * The connection authenticated: count it, and keep an alarm — for the
   * token re-check (TENANT_REVALIDATE_MS) and so a lost connection is still
   * reported.
   */
  private async startTelemetry(tenant: string): Promise<void> {
    this.telemetry.start(tenant, true);
    await this.armAlarm(Date.now() + GC_INTERVAL_MS);
  }

  /** Arms the alarm for the earlier of `at` and the token re-check, unless it is armed earlier already. */
  private async armAlarm(at: number): Promise<void> {
    const due = Math.min(at, this.auth.nextCheckAt);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || due < current) await this.ctx.storage.setAlarm(due);
  }

  private info(authRequired: boolean): ServerInfo {
    const info: ServerInfo = {
      server_id: this.ctx.id.toString(),
      server_name: "mortarmq-edge",
      version: VERSION,
      proto: 1,
      headers: true,
      max_payload: DEFAULT_MAX_PAYLOAD,
    };
    if (authRequired) info.auth_required = true;
    return info;
  }

  /** Rebuilds in-memory state after hibernation (attachment + stored subscriptions). */
  private load(ws: WebSocket): { conn: NatsConnection; parser: NatsParser } {
    if (!this.conn || !this.parser) {
      const att = ws.deserializeAttachment() as Attachment | null;
      this.conn = new NatsConnection({ maxPayload: DEFAULT_MAX_PAYLOAD }, att?.state ?? initialState(), this.store.load());
      this.parser = new NatsParser({ maxPayload: DEFAULT_MAX_PAYLOAD });
      this.partialFlag = att?.partial ?? false;
      if (att?.auth) this.auth.restore(att.auth);
      if (att?.state.tenant !== undefined) this.telemetry.start(att.state.tenant, false);
      if (this.partialFlag) {
        // The bytes of a partial operation were lost: never guess at the stream.
        const box = newOutbox();
        this.conn.fail(fatal(NatsErr.StaleConnection), box);
        this.flush(ws, box);
      }
    }
    return { conn: this.conn, parser: this.parser };
  }

  private async onMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const { conn, parser } = this.load(ws);
    if (conn.state.closed) return;
    this.tally.add(BYTES_IN, typeof message === "string" ? te.encode(message).length : message.byteLength);
    this.telemetry.touch();
    const res = parser.push(typeof message === "string" ? te.encode(message) : new Uint8Array(message));
    const box = newOutbox();
    for (const op of res.ops) {
      const pending = conn.handle(op, box);
      if (pending) conn.completeConnect(pending, await this.authenticate(conn, pending), box);
      if (box.close) break;
    }
    if (res.error) conn.fail(res.error, box);
    if (conn.state.connected && this.authTimer !== null) {
      clearTimeout(this.authTimer);
      this.authTimer = null;
    }
    if (conn.state.tenant !== undefined && !this.telemetry.started) await this.startTelemetry(conn.state.tenant);
    this.trackPartial(ws, parser, res.ops.length > 0);
    this.flush(ws, box);
  }

  /** Checks CONNECT credentials: a token is always verified; none = the tenant from the upgrade, if any. */
  private async authenticate(conn: NatsConnection, p: PendingConnect): Promise<ConnectAuth> {
    if (p.token === undefined && conn.state.tenant !== undefined) return { ok: true, tenant: conn.state.tenant };
    const auth = await this.auth.connect(p.token);
    return auth.ok ? { ok: true, tenant: auth.tenant } : { ok: false, error: connectError(auth) };
  }

  /** Arms the partial-operation deadline for each new partial operation; disarms it when none is buffered. */
  private trackPartial(ws: WebSocket, parser: NatsParser, completedOps: boolean): void {
    const partial = parser.partial && !parser.failed;
    if (!partial) {
      clearTimeout(this.partialTimer);
      this.partialTimer = null;
    } else if (this.partialTimer === null || completedOps) {
      clearTimeout(this.partialTimer);
      this.partialTimer = setTimeout(() => this.onStale(ws), PARTIAL_OP_TIMEOUT_MS);
    }
    if (partial !== this.partialFlag) {
      this.partialFlag = partial;
      this.saveAttachment(ws);
    }
  }

  /** Persists subscription changes and state, sends the outbox, starts its requests, closes if asked. */
  private flush(ws: WebSocket, box: Outbox): void {
    const conn = this.conn!;
    if (this.store.apply(conn.subs.takeChanges())) void this.armAlarm(Date.now() + GC_INTERVAL_MS);
    this.saveAttachment(ws);
    if (box.out.length > 0) {
      if (this.outQueue.length === 0) setTimeout(() => this.drain(ws), 0);
      this.outQueue.push(...box.out);
    }
    for (const req of box.requests) void this.run(ws, conn, req);
    if (box.close) {
      this.drain(ws);
      void this.shutdown(ws, 1008, "NATS protocol error");
    }
  }

  /** Sends everything queued, in WebSocket messages of at most MAX_SEND_MESSAGE_BYTES. */
  private drain(ws: WebSocket): void {
    if (this.outQueue.length === 0) return;
    const parts = this.outQueue;
    this.outQueue = [];
    this.telemetry.touch();
    try {
      for (const bytes of chunkBytes(parts, MAX_SEND_MESSAGE_BYTES)) {
        ws.send(bytes);
        this.tally.add(BYTES_OUT, bytes.length);
      }
    } catch {
      /* the client is gone; webSocketClose cleans up */
    }
  }

  /** Runs one mq9 request and delivers its JSON reply to the reply subject. */
  private async run(ws: WebSocket, conn: NatsConnection, req: ServedRequest): Promise<void> {
    let reply: Mq9Reply;
    try {
      reply = await handleMq9Request(
        this.env,
        req.tenant,
        { subject: req.subject, headers: req.headers, payload: req.payload },
        { signal: this.closing.signal, sends: this.sends, stubs: this.stubs, quota: this.auth.mq9Quota() },
      );
    } catch (err) {
      reply = errorReply(err); // never expected (handleMq9Request answers every failure itself)
    }
    conn.requestDone(req);
    this.tally.add(mq9RequestSeries(req.subject, reply, "nats"));
    this.telemetry.touch();
    if (!req.reply || conn !== this.conn || conn.state.closed) return;
    const box = newOutbox();
    conn.deliver(req.reply, undefined, undefined, te.encode(replyJson(reply)), box);
    this.flush(ws, box);
  }

  private onAuthTimeout(ws: WebSocket): void {
    this.authTimer = null;
    const { conn } = this.load(ws);
    if (conn.state.connected || conn.state.closed) return;
    const box = newOutbox();
    conn.fail(fatal(NatsErr.AuthTimeout), box);
    this.flush(ws, box);
  }

  private onStale(ws: WebSocket): void {
    this.partialTimer = null;
    const { conn, parser } = this.load(ws);
    if (!parser.partial || conn.state.closed) return;
    const box = newOutbox();
    conn.fail(fatal(NatsErr.StaleConnection), box);
    this.flush(ws, box);
  }

  /** An unexpected exception while handling a message: close this connection only. */
  private crash(ws: WebSocket, err: unknown): void {
    console.error("NatsSession: closing connection after internal error", err);
    void this.shutdown(ws, 1011, "internal error");
  }

  /** Persists the attachment when it differs from what was last stored (flush runs for every reply). */
  private saveAttachment(ws: WebSocket): void {
    if (!this.conn) return;
    const att: Attachment = { state: this.conn.state, partial: this.partialFlag, auth: this.auth.snapshot() };
    const text = JSON.stringify(att);
    if (text === this.savedAttachment) return;
    try {
      ws.serializeAttachment(att);
      this.savedAttachment = text;
    } catch {
      /* closed socket */
    }
  }

  /**
   * Closes the WebSocket (if still open), releases held long-poll FETCHes,
   * stops timers and deletes this connection's storage.
   */
  private async shutdown(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.closing.abort();
    clearTimeout(this.partialTimer);
    clearTimeout(this.authTimer);
    this.partialTimer = this.authTimer = null;
    if (this.conn) this.conn.state.closed = true;
    try {
      ws.close(code, reason);
    } catch {
      /* already closed */
    }
    if (this.finished) return;
    this.finished = true;
    await this.auth.release();
    if (await this.telemetry.finish()) {
      await this.store.clear();
      await this.ctx.storage.deleteAlarm();
    } else {
      await this.ctx.storage.setAlarm(Date.now() + telemetryFlushMs(this.env)); // the alarm retries the final report
    }
  }
}

/** The `-ERR` text for a refused authentication. */
function connectError(auth: Extract<AuthResult, { ok: false }>): string {
  if (auth.reason === "connections") return NatsErr.MaxConnections;
  if (auth.reason === "unavailable") return NatsErr.AuthUnavailable;
  return NatsErr.AuthViolation;
}
