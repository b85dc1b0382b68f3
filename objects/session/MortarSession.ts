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
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";
import { ErrorCode, MortarError } from "../../wire/mortar/errors";
import { KEEPALIVE_CLOSE_MS } from "../../wire/mortar/constants";
import { CloseCode, Connection } from "./connection";
import { expired, nextDeadline, type TimerState } from "./timers";

/** Largest WebSocket message sent, bytes (Workers limit received messages to 1 MiB; the stream may split anywhere). */
const MAX_WS_MESSAGE = 1024 * 1024;

/** Attachment refresh granularity for the last-frame time, ms. */
const ATTACH_EVERY_MS = 1_000;

/** What survives hibernation (structured-cloned into the socket). */
interface Attachment {
  tenant: string | null;
  lastFrameAt: number;
  partialSince: number | null;
}

export class MortarSession extends DurableObject<Env> {
  private ws: WebSocket | null = null;
  private conn: Connection | null = null;
  private timers: TimerState = { lastFrameAt: Date.now(), partialSince: null };
  private attached: Attachment | null = null;
  private armedAt = 0;
  private lostPartial = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const ws = ctx.getWebSockets()[0];
    if (ws) {
      // Woken from hibernation: restore what the attachment kept.
      const a = ws.deserializeAttachment() as Attachment | null;
      this.ws = ws;
      this.conn = this.newConnection(a?.tenant ?? null);
      if (a) {
        this.attached = a;
        this.timers = { lastFrameAt: a.lastFrameAt + ATTACH_EVERY_MS, partialSince: a.partialSince };
        this.lostPartial = a.partialSince !== null;
      }
      this.armedAt = Number.MAX_SAFE_INTEGER; // unknown: let the next partial frame pull the alarm in

    }
  }

  private newConnection(tenant: string | null): Connection {
    return new Connection({
      env: this.env,
      send: (bytes) => {
        try {
          for (let o = 0; o < bytes.length; o += MAX_WS_MESSAGE) this.ws?.send(bytes.subarray(o, o + MAX_WS_MESSAGE));
        } catch {
          this.conn?.closedByPeer();
        }
      },
      close: (code, reason) => {
        try {
          this.ws?.close(code, reason);
        } catch {
          /* already closed */
        }
        void this.ctx.storage.deleteAlarm();
      },
      connected: () => this.attach(Date.now(), true),
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
    this.timers = { lastFrameAt: now, partialSince: null };
    this.attach(now, true);
    await this.arm(now + KEEPALIVE_CLOSE_MS);
    return new Response(null, { status: 101, webSocket: client });
  }

  override webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): void {
    const conn = this.conn;
    if (!conn || conn.isClosed) return;
    this.ws = ws;
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
      const due = nextDeadline(this.timers);
      if (due < this.armedAt) void this.arm(due);
    }
    this.attach(now, false);
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.conn?.closedByPeer();
    try {
      ws.close(code === 1005 ? 1000 : code, reason);
    } catch {
      /* already closed */
    }
    void this.ctx.storage.deleteAlarm();
  }

  override webSocketError(): void {
    this.conn?.closedByPeer();
    void this.ctx.storage.deleteAlarm();
  }

  /** Keepalive / half-frame check (the one alarm of this object). */
  override async alarm(): Promise<void> {
    this.armedAt = 0;
    const conn = this.conn;
    if (!conn || conn.isClosed) return;
    const now = Date.now();
    const why = expired(this.timers, now);
    if (why === "half-frame") {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "a partial frame stayed buffered for 10 s"));
    } else if (why === "keepalive") {
      conn.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "no complete frame for 45 s"), CloseCode.NORMAL);
    } else {
      await this.arm(nextDeadline(this.timers));
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
    const next: Attachment = { tenant, lastFrameAt: this.timers.lastFrameAt, partialSince };
    try {
      this.ws?.serializeAttachment(next);
      this.attached = next;
    } catch {
      /* socket gone */
    }
  }
}
