/**
 * MortarSession Durable Object: one per client connection (`newUniqueId()`),
 * terminating the WebSocket of `GET /v0/mortar` with the Hibernation API
 * (DESIGN.md §3). Binary messages carry the MortarMQ byte stream; message
 * boundaries are not frame boundaries. Protocol logic is in Connection;
 * this class is glue: socket events in, bytes out, and the timers.
 *
 * Timers (timers.ts): the last-frame time and the partial-frame start live
 * in memory; ONE storage alarm is armed for the earliest deadline and checks
 * them when it fires, so frames never write to storage. A partial frame
 * pulls the alarm in when it would otherwise fire too late.
 *
 * Hibernation: the tenant, the last-frame time (refreshed at most once per
 * second) and the partial-frame start are kept in the socket attachment.
 * If the object wakes with a partial frame recorded but the decoder's bytes
 * gone, the stream cannot continue: the next message gets
 * CONNECTION_TIMEOUT and the connection closes.
 *
 * Read path: subscriptions (credit, owned partitions, pending PULLs) live in
 * memory, so while any is open a no-op interval keeps the object from
 * hibernating. Each open subscription's group membership is also written to
 * the `subs` table; if the object ever restarts with rows there (its memory
 * was lost), it makes those members leave their groups and closes the
 * socket (1011) so the client reconnects and subscribes again. Groups and
 * partitions call back through the RPC methods below (groupNotice, wake,
 * hasMember, groupRemoved).
 *
 * When the connection ends (either side closed, or the socket failed) and
 * its subscriptions were shut down (members left their groups), the
 * session deletes all its storage (the `subs` table, the alarm), so a
 * finished connection leaves no SQLite file behind. A group that still
 * asks about a member later reaches an empty object and gets "no such
 * member".
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { ErrorCode, MortarError } from "../../wire/mortar/errors";
import { CloseCode, Connection } from "./connection";
import { connectTimeoutMs, expired, nextDeadline, type TimerState } from "./timers";
import type { NoticeDelivery } from "../group/rpc";
import type { Subscription } from "./subscription";
import { groupStub } from "../group/stub";
import { withDeadline } from "./faults";
import { WireCounters } from "./wire-counters";
import { ConnectionTelemetry } from "../usage/connection";
import { series } from "../usage/catalog";
import { telemetryFlushMs } from "../usage/stub";
import { ConnectionAuth, type ConnectionAuthSnapshot } from "../tenants/connection-auth";

const WAITING_PULLS = series("mortarmq_long_polls_waiting", { kind: "mortar_pull" });

/** Largest WebSocket message sent, bytes (Workers limit received messages to 1 MiB; the stream may split anywhere). */
const MAX_WS_MESSAGE = 1024 * 1024;

/** Attachment refresh granularity for the last-frame time, ms. */
const ATTACH_EVERY_MS = 1_000;

/** Keeps the object in memory while subscriptions are open, ms. */
const PIN_INTERVAL_MS = 20_000;

interface SubRow extends Record<string, SqlStorageValue> {
  sub_id: number; tenant: string; incarnation: number; topic_id: number; grp: string; member_id: number; membership_epoch: number;
}

/** What survives hibernation (structured-cloned into the socket). */
interface Attachment {
  tenant: string | null;
  lastFrameAt: number;
  partialSince: number | null;
  /** The CONNECT deadline while not connected (timers.ts), ms since the epoch. */
  connectBy?: number | null;
  /** Tenant side (token id, lease, last check, quotas): objects/tenants/connection-auth.ts. */
  auth?: ConnectionAuthSnapshot | null;
}

export class MortarSession extends DurableObject<Env> {
  private ws: WebSocket | null = null;
  private conn: Connection | null = null;
  private timers: TimerState = { lastFrameAt: Date.now(), partialSince: null, connectBy: null };
  private attached: Attachment | null = null;
  private armedAt = 0;
  private lostPartial = false;
  private pin: ReturnType<typeof setInterval> | null = null;
  /** Storage was deleted at the end of the connection: write nothing more. */
  private storageGone = false;
  /** Frames and bytes of this connection, reported by `telemetry` (docs/operations.md). */
  private readonly wire = new WireCounters();
  private readonly telemetry: ConnectionTelemetry;
  /** The final telemetry report, once started (true when delivered). */
  private finishing: Promise<boolean> | null = null;
  /** `ConnectionIO.ended` was called: storage may go once the final report is out. */
  private ended = false;
  /** Token re-check, connection lease and quotas of this connection (docs/tenants.md). */
  private readonly auth: ConnectionAuth;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.auth = new ConnectionAuth(env, "mortar", ctx.id.toString());
    this.telemetry = new ConnectionTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), protocol: "mortar",
      drain: (add) => this.wire.drain(add),
      levels: () => ({ [WAITING_PULLS]: this.conn?.consumer.waitingPulls() ?? 0 }),
    });
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS subs(sub_id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, incarnation INTEGER NOT NULL,
      topic_id INTEGER NOT NULL, grp TEXT NOT NULL, member_id INTEGER NOT NULL, membership_epoch INTEGER NOT NULL)`);
    const lost = ctx.storage.sql.exec<SubRow>("SELECT * FROM subs").toArray();
    if (lost.length > 0) {
      // Restarted with subscriptions recorded: their state is gone. Members leave; the client must reconnect.
      ctx.storage.sql.exec("DELETE FROM subs");
      for (const ws of ctx.getWebSockets()) {
        try {
          ws.close(1011, "session state lost; reconnect and subscribe again");
        } catch {
          /* already closed */
        }
      }
      void Promise.all(lost.map((r) =>
        withDeadline(groupStub(env, r.tenant, r.incarnation, r.topic_id, r.grp).leave(r.member_id, r.membership_epoch)).catch(() => {})));
      return;
    }
    const ws = ctx.getWebSockets()[0];
    if (ws) {
      // Woken from hibernation: restore what the attachment kept.
      const a = ws.deserializeAttachment() as Attachment | null;
      this.ws = ws;
      if (a?.auth) this.auth.restore(a.auth);
      this.conn = this.newConnection(a?.tenant ?? null);
      if (a?.tenant) this.telemetry.start(a.tenant, false);
      if (a) {
        this.attached = a;
        this.timers = { lastFrameAt: a.lastFrameAt + ATTACH_EVERY_MS, partialSince: a.partialSince, connectBy: a.tenant ? null : (a.connectBy ?? null) };
        this.lostPartial = a.partialSince !== null;
      }
      this.armedAt = Number.MAX_SAFE_INTEGER; // unknown: let the next partial frame pull the alarm in

    }
  }

  private newConnection(tenant: string | null): Connection {
    return new Connection({
      env: this.env,
      auth: this.auth,
      sessionId: this.ctx.id.toString(),
      subscriptions: (subs) => this.subscriptions(subs),
      send: (bytes) => {
        this.wire.sent(bytes);
        this.telemetry.touch();
        try {
          for (let o = 0; o < bytes.length; o += MAX_WS_MESSAGE) this.ws?.send(bytes.subarray(o, o + MAX_WS_MESSAGE));
        } catch {
          void this.conn?.closedByPeer();
        }
      },
      close: (code, reason) => {
        try {
          this.ws?.close(code, reason);
        } catch {
          /* already closed */
        }
        void this.ctx.storage.deleteAlarm();
        void this.finish();
      },
      ended: () => void this.endConnection(),
      connected: (tenant) => {
        this.timers.connectBy = null;
        this.attach(Date.now(), true);
        this.telemetry.start(tenant, true);
        const due = this.deadline();
        if (due < this.armedAt) void this.arm(due);
      },
      frameIn: (op) => this.wire.frameIn(op),
    }, tenant);
  }

  /** Accepts the WebSocket upgrade forwarded by `GET /v0/mortar`. */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    if (this.ws) return new Response("session already has a connection", { status: 409 });
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server);
    this.ws = server;
    this.conn = this.newConnection(null);
    const now = Date.now();
    this.timers = { lastFrameAt: now, partialSince: null, connectBy: now + connectTimeoutMs(this.env) };
    this.attach(now, true);
    await this.arm(nextDeadline(this.timers));
    return new Response(null, { status: 101, webSocket: client });
  }

  override webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): void {
    const conn = this.conn;
    if (!conn || conn.isClosed) return;
    this.ws = ws;
    this.wire.received(typeof message === "string" ? message.length : message.byteLength);
    this.telemetry.touch();
    if (typeof message === "string") {
      conn.fail(new MortarError(ErrorCode.MALFORMED_PAYLOAD, "text WebSocket messages are not allowed: send the byte stream as binary messages"));
      return;
    }
    if (this.lostPartial) {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "a partial frame was lost while the session was idle"));
      return;
    }
    const now = Date.now();
    const completed = conn.receive(new Uint8Array(message));
    if (completed > 0) this.timers.lastFrameAt = now;
    if (!conn.decoder.hasPartialFrame) {
      this.timers.partialSince = null;
    } else if (completed > 0 || this.timers.partialSince === null) {
      this.timers.partialSince = now;
      const due = this.deadline();
      if (due < this.armedAt) void this.arm(due);
    }
    this.attach(now, false);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 ? 1000 : code, reason);
    } catch {
      /* already closed */
    }
    void this.ctx.storage.deleteAlarm();
    await this.conn?.closedByPeer();
    await this.finish();
  }

  override async webSocketError(): Promise<void> {
    void this.ctx.storage.deleteAlarm();
    await this.conn?.closedByPeer();
    await this.finish();
  }

  /**
   * The connection ended: the final telemetry report (connection-seconds,
   * gauges withdrawn). If the aggregator cannot be reached the alarm retries.
   */
  private finish(): Promise<boolean> {
    this.finishing ??= (async () => {
      const reported = await this.telemetry.finish();
      if (!reported && !this.storageGone) await this.ctx.storage.setAlarm(Date.now() + telemetryFlushMs(this.env));
      return reported;
    })();
    return this.finishing;
  }

  /**
   * The connection is over and its members left: send the final telemetry
   * report, then drop the session's storage. When the report cannot be
   * delivered the storage (its outbox) stays and the alarm retries; the
   * storage goes after that retry succeeds.
   */
  private async endConnection(): Promise<void> {
    this.ended = true;
    await this.auth.release();
    if (await this.finish()) await this.deleteStorage();
  }

  // ------------------------------------------------------------ read-path RPC (ConsumerGroup, Partition)

  /** A NOTICE for one of this connection's members. False when it does not hold that member (the group then removes it). */
  groupNotice(n: NoticeDelivery): boolean {
    return this.conn?.consumer.notice(n) ?? false;
  }

  /** A Partition has records for `partition` of subscription `subscriptionId`. False when the subscription is gone. */
  wake(subscriptionId: number, partition: number): boolean {
    return this.conn?.consumer.wake(subscriptionId, partition) ?? false;
  }

  /**
   * A Partition's deliveries (`seqs[i]`, `deliveryIds[i]`) to
   * `subscriptionId` passed their work deadline: their credit returns.
   * False when the subscription is gone.
   */
  expired(subscriptionId: number, partition: number, seqs: number[], deliveryIds: number[]): boolean {
    return this.conn?.consumer.expired(subscriptionId, partition, seqs, deliveryIds) ?? false;
  }

  /** Whether this session still holds `memberId` on `subscriptionId`. */
  hasMember(subscriptionId: number, memberId: number): boolean {
    return this.conn?.consumer.hasMember(subscriptionId, memberId) ?? false;
  }

  /** The group removed the member (session timeout). */
  groupRemoved(subscriptionId: number, memberId: number): void {
    this.conn?.consumer.removed(subscriptionId, memberId);
  }

  /** The connection is over: drop every row and the alarm (see the class comment). */
  private async deleteStorage(): Promise<void> {
    if (this.storageGone) return;
    this.storageGone = true;
    if (this.pin) {
      clearInterval(this.pin);
      this.pin = null;
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** Records the open subscriptions (for cleanup after a lost state) and keeps the object in memory while there are any. */
  private subscriptions(subs: ReadonlyMap<number, Subscription>): void {
    if (this.storageGone) return;
    const tenant = this.conn?.tenant ?? "";
    this.ctx.storage.transactionSync(() => {
      this.ctx.storage.sql.exec("DELETE FROM subs");
      for (const s of subs.values()) {
        if (s.memberId === 0) continue;
        this.ctx.storage.sql.exec("INSERT INTO subs VALUES (?,?,?,?,?,?,?)",
          s.id, tenant, s.topic.incarnation, s.topic.topicId, s.group, s.memberId, s.membershipEpoch);
      }
    });
    if (subs.size > 0 && !this.pin) this.pin = setInterval(() => {}, PIN_INTERVAL_MS);
    if (subs.size === 0 && this.pin) {
      clearInterval(this.pin);
      this.pin = null;
    }
  }

  /**
   * Request bytes this connection holds (Connection.memory) — the
   * backpressure bound is observable (docs/protocol.md "Backpressure bounds").
   */
  memory(): ReturnType<Connection["memory"]> | null {
    return this.conn?.memory() ?? null;
  }

  /** The earliest of the protocol timers and the tenant re-check. */
  private deadline(): number {
    return Math.min(nextDeadline(this.timers), this.auth.nextCheckAt);
  }

  /** Keepalive / half-frame check and the token re-check (the one alarm of this object). */
  override async alarm(): Promise<void> {
    this.armedAt = 0;
    const conn = this.conn;
    if (!conn || conn.isClosed) {
      // No connection (closed, or the object restarted without it): report what is left.
      if (!(await this.telemetry.finish())) await this.ctx.storage.setAlarm(Date.now() + telemetryFlushMs(this.env));
      else if (this.ended) await this.deleteStorage();
      return;
    }
    const now = Date.now();
    const why = expired(this.timers, now);
    if (why === "connect") {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, `no CONNECT within ${connectTimeoutMs(this.env) / 1000} s of opening the connection`), CloseCode.POLICY);
    } else if (why === "half-frame") {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "a partial frame stayed buffered for 10 s"));
    } else if (why === "keepalive") {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "no complete frame for 45 s"), CloseCode.NORMAL);
    } else {
      if (now >= this.auth.nextCheckAt) {
        const r = await this.auth.revalidate(now);
        if (!r.ok) {
          conn.fail(new MortarError(ErrorCode.AUTH_FAILED, `${r.message}: the connection is closed`), CloseCode.POLICY);
          return;
        }
        this.attach(Date.now(), true);
      }
      await this.arm(this.deadline());
    }
  }

  private async arm(at: number): Promise<void> {
    this.armedAt = at;
    await this.ctx.storage.setAlarm(at);
  }

  /** Refreshes the hibernation attachment when something in it changed (last-frame time: at most once per second). */
  private attach(now: number, force: boolean): void {
    const a = this.attached;
    const tenant = this.conn?.tenant ?? null;
    const partialSince = this.timers.partialSince;
    if (!force && a && a.tenant === tenant && a.partialSince === partialSince && now - a.lastFrameAt < ATTACH_EVERY_MS) return;
    const next: Attachment = { tenant, lastFrameAt: this.timers.lastFrameAt, partialSince, connectBy: this.timers.connectBy, auth: this.auth.snapshot() };
    try {
      this.ws?.serializeAttachment(next);
      this.attached = next;
    } catch {
      /* socket gone */
    }
  }
}
