/**
 * The base of the WebSocket session objects (MortarSession, NatsSession):
 * one Durable Object per client connection (`newUniqueId()`), using the
 * WebSocket Hibernation API (DESIGN.md §3). The platform entry points live
 * here — `fetch` (the upgrade), `webSocketMessage`, `webSocketClose`,
 * `webSocketError`, `alarm` — and the subclass implements the protocol in
 * a few `on…` hooks, as cloudflare/partykit's `partyserver` Server does.
 *
 * What the base owns, so no protocol writes it again:
 * - **accept with hibernation** (`ctx.acceptWebSocket`), one connection per
 *   object (a second upgrade gets 409), 426 for anything but an upgrade;
 * - **the attachment**: `{ base, session }`. The base's part (tenant side,
 *   deadlines) and the subclass's part (`saveState`) are namespaced, so a
 *   subclass cannot clobber what the base needs after hibernation;
 * - **the tenant side** (objects/tenants/connection-auth.ts): authentication
 *   with a connection lease (`authenticate`), the snapshot across
 *   hibernation, the token re-check every TENANT_REVALIDATE_MS (a refusal
 *   calls `onRevoked`), the lease given back at the end;
 * - **deadlines** (deadlines.ts): durable ones in ONE storage alarm,
 *   resident ones on an in-memory timer that keeps the object resident;
 *   an expired one calls `onTimeout(kind)`. A durable deadline may have a
 *   slack (`deadlineSlack`): once it has moved later, the alarm looks at it
 *   again only when that is due anyway, so deadlines that every frame moves
 *   (the keepalive) cost one alarm per check interval, not one per timeout;
 * - **telemetry** (objects/usage/connection.ts): counted in memory, reported
 *   from the storage alarm (deadline `telemetry`) — no timer keeps the
 *   object in memory; messages the subclass calls `quiet` (keep-alives)
 *   and their answers are not counted and do not pull the token re-check in;
 * - **output**: `send` cuts everything into WebSocket messages of at most
 *   MAX_WS_MESSAGE_BYTES (1 MiB, what Workers accept per received message;
 *   `ws` clients refuse far larger ones);
 * - **close and the end of the connection**: either side closing, or the
 *   socket failing, ends the connection once: the protocol shuts down
 *   (`onEnd`: consumer groups left, held requests released), the lease is
 *   given back, the final telemetry report goes out (connection-seconds,
 *   gauges withdrawn; objects/usage/connection.ts), then the object's
 *   storage is deleted — or, when the report could not be delivered, the
 *   alarm retries it and deletes the storage after that. An object that
 *   restarts without its connection (crash, eviction) reports and cleans up
 *   from its next alarm;
 * - **bytes counted** both ways (`mortarmq_bytes_received_total`,
 *   `mortarmq_bytes_sent_total` by protocol).
 *
 * Lifecycle of the subclass: `onUpgrade` (may refuse the upgrade) →
 * accepted → `onOpen` (fresh connection) — or, after hibernation or a
 * restart with the socket still there, `onResume` with the subclass's saved
 * state on the first event — then `onMessage` per WebSocket message
 * (handled one after another: a message whose handling awaits delays the
 * next), `onTimeout`, `onRevoked`, and `onEnd` once.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { MAX_WS_MESSAGE_BYTES, chunkBytes } from "../../wire/bytes";
import type { AuthResult } from "../tenants/rpc";
import { ConnectionAuth, type ConnectionAuthSnapshot } from "../tenants/connection-auth";
import type { ConnectionProtocol } from "../tenants/rpc";
import { ConnectionTelemetry } from "../usage/connection";
import { series } from "../usage/catalog";
import { Tally } from "../usage/tally";
import type { Permit } from "../tenants/permissions";
import { telemetryFlushMs } from "../usage/config";
import { IDLE_RECHECK_FACTOR, revalidateMs } from "../tenants/config";
import { echoCloseCode } from "./close";
import { Deadlines, type DeadlineMode, type DeadlinesSnapshot } from "./deadlines";
import { AlarmScheduler } from "../shared/scheduler";

export { MAX_WS_MESSAGE_BYTES };

/** While a connection is open the alarm is armed at most this far ahead, ms, so a connection that vanished without a close event is cleaned up. */
export const SWEEP_MS = 60 * 60 * 1000;

/** Keeps the object in memory while `stayResident(true)`, ms between no-op ticks. */
const PIN_INTERVAL_MS = 20_000;

/** The deadline kind of the token re-check (the base's own). */
const RECHECK = "tenant-recheck";
/** The deadline kind of the telemetry report (the base's own). */
const TELEMETRY = "telemetry";



/** What the base keeps in the socket attachment. */
interface BaseAttachment {
  auth: ConnectionAuthSnapshot | null;
  deadlines: DeadlinesSnapshot;
}

/** The whole attachment: the base's part and the subclass's, namespaced. */
interface Attachment<S> {
  base: BaseAttachment;
  session: S | null;
}

const te = new TextEncoder();

/**
 * A WebSocket session object for `protocol`; `S`: the subclass's state kept
 * in the attachment (small, structured-cloneable).
 */
export abstract class SocketSession<S = null> extends DurableObject<Env> {
  /** The connection's tenant side: authentication, lease, quotas (use `authenticate` to authenticate). */
  protected readonly auth: ConnectionAuth;
  /** The connection's telemetry (connections, connection-seconds; the subclass's counts through `drainCounts`). */
  protected readonly telemetry: ConnectionTelemetry;
  /** This object's id (hex): where other objects call back. */
  protected readonly sessionId: string;

  private socket: WebSocket | null = null;
  /** The first event after construction looked for a live socket (`resume`). */
  private resumed = false;
  private ending: Promise<void> | null = null;
  private storageGone = false;
  private readonly deadlines = new Deadlines();
  /** Time the storage alarm is armed for as far as this instance knows (Infinity = none). */
  private armedAt = Infinity;
  /** `armedAt` is known (false after a rebuild until the stored alarm was read). */
  private armedKnown = false;
  private arming: Promise<void> | null = null;
  /** The storage alarm (shared/scheduler.ts): one part, the session's sweep, run on every alarm (a rebuilt session learns its deadlines there). */
  private readonly scheduler: AlarmScheduler;
  private residentTimer: ReturnType<typeof setTimeout> | null = null;
  private residentAt = Infinity;
  private pin: ReturnType<typeof setInterval> | null = null;
  /** Inbound messages in order: set while one is being handled asynchronously. */
  private inbound: Promise<void> | null = null;
  /** JSON of the subclass state last written, and the auth snapshot last written. */
  private savedState = "null";
  private savedAuth: ConnectionAuthSnapshot | null = null;
  private state: S | null = null;
  private bytesIn = 0;
  private bytesOut = 0;
  private readonly bytesInSeries: string;
  private readonly bytesOutSeries: string;

  constructor(ctx: DurableObjectState, env: Env, protocol: ConnectionProtocol) {
    super(ctx, env);
    this.sessionId = ctx.id.toString();
    this.scheduler = new AlarmScheduler(ctx.storage, { owner: "session" }).part("sweep", {
      due: () => (this.armedAt === Infinity ? null : this.armedAt),
      everyAlarm: true,
      run: () => this.sweep(),
    });
    this.auth = new ConnectionAuth(env, protocol, this.sessionId);
    this.bytesInSeries = series("mortarmq_bytes_received_total", { protocol });
    this.bytesOutSeries = series("mortarmq_bytes_sent_total", { protocol });
    this.telemetry = new ConnectionTelemetry({
      storage: ctx.storage, env, reporter: this.sessionId, protocol,
      drain: (add) => {
        if (this.bytesIn) add(this.bytesInSeries, this.bytesIn);
        if (this.bytesOut) add(this.bytesOutSeries, this.bytesOut);
        this.bytesIn = this.bytesOut = 0;
        this.denials.drain(add);
        this.drainCounts(add);
      },
      levels: () => this.levels(),
      schedule: (at) => this.deadline(TELEMETRY, at),
    });
  }

  // ------------------------------------------------------------ hooks

  /** Before the upgrade is accepted: a Response refuses it (e.g. 401 for a bad bearer token). */
  protected onUpgrade(_request: Request): Response | undefined | Promise<Response | undefined> {
    return undefined;
  }

  /** A fresh connection was accepted: build the protocol state, greet, set deadlines. */
  protected abstract onOpen(): void | Promise<void>;

  /**
   * The object was rebuilt (hibernation, restart) while its socket is still
   * open: rebuild the protocol state from `state` (what `saveState` last
   * stored; null if nothing). Runs on the first event.
   */
  protected abstract onResume(state: S | null): void;

  /** One WebSocket message (text messages arrive UTF-8 encoded, `text` set). */
  protected abstract onMessage(bytes: Uint8Array, text: boolean): void | Promise<void>;

  /** Deadline `kind` (set with `deadline`) expired. */
  protected abstract onTimeout(kind: string): void | Promise<void>;

  /**
   * The object was rebuilt while resident deadline `kind` was pending: the
   * in-memory state it guarded is gone (e.g. a partial frame's bytes).
   */
  protected abstract onLost(kind: string): void;

  /** The token re-check refused the connection (`message`: revoked token, deleted tenant): close it. */
  protected abstract onRevoked(message: string): void;

  /** The connection is over (either side): shut the protocol down; the base then gives the lease back and reports. */
  protected onEnd(): void | Promise<void> {}

  /** Scope refusals of this connection (mortarmq_permission_denied_total), reported with the telemetry. */
  private readonly denials = new Tally();
  private readonly countDenied = (s: string): void => {
    this.denials.add(s);
    this.telemetry.touch();
  };

  /**
   * The connection's current token scopes as a Permit (objects/tenants/permissions.ts),
   * or undefined when the token has none (full tenant access) or is not checked yet.
   * Each re-check may change them.
   */
  protected scopedPermit(): Permit | undefined {
    const s = this.auth.snapshot();
    return s?.scopes ? { tenant: s.tenant, tokenId: s.tokenId, scopes: s.scopes, count: this.countDenied } : undefined;
  }

  /**
   * The answer to a bare keep-alive message (`bytes`, `text` as received),
   * when the protocol can give it without its state: sent as it is, with
   * nothing counted, no telemetry and no re-check pulled in — as the
   * runtime's WebSocket auto-response would (issue #26 §2 (f)). Null: the
   * message is handled as any other.
   */
  protected keepaliveAnswer(_bytes: Uint8Array, _text: boolean): Uint8Array | null {
    return null;
  }

  /**
   * Whether a received message only keeps the connection (and its
   * members) alive — e.g. MortarMQ HEARTBEATs: it is handled as any other
   * (`onMessage`), but neither it nor its answers (`send(…, true)`) are
   * counted in telemetry, and it does not pull the idle token re-check in:
   * a connection that only heartbeats is idle (issue #26 §2 (f)).
   */
  protected quiet(_bytes: Uint8Array, _text: boolean): boolean {
    return false;
  }

  /**
   * How late the alarm may run durable deadline `kind`, ms (default 0:
   * on time). Once a deadline with slack has moved later than the alarm
   * armed for it, the alarm comes back at most this long after it is due,
   * together with whatever else is due by then (deadlines.ts `latest`).
   */
  protected deadlineSlack(_kind: string): number {
    return 0;
  }

  /**
   * How early a run of the alarm (or of a resident timer) may take durable
   * deadline `kind` along, ms (default 0: never before it is due): for a
   * deadline that running early does no harm, so it rides an alarm that
   * fires anyway instead of one of its own.
   */
  protected deadlineEarly(_kind: string): number {
    return 0;
  }

  /** Moves the subclass's counts (frames, requests) into `add(series, n)` for a telemetry report. */
  protected drainCounts(_add: (series: string, n: number) => void): void {}

  /** Gauges besides the open connection, read at report time. */
  protected levels(): Record<string, number> {
    return {};
  }

  // ------------------------------------------------------------ services for the subclass

  /**
   * Authenticates `token` (ConnectionAuth.connect: connection quota, tenant
   * fixed for the connection's life). On success the connection counts as
   * opened for telemetry and its token re-check is scheduled.
   */
  protected async authenticate(token: string | undefined): Promise<AuthResult> {
    const a = await this.auth.connect(token);
    if (a.ok) {
      if (!this.telemetry.started) this.telemetry.start(a.tenant, true);
      this.deadline(RECHECK, this.auth.nextCheckAt);
    }
    return a;
  }

  /**
   * Writes `bytes` (or the parts, in order) to the client, in messages of at
   * most MAX_WS_MESSAGE_BYTES; `quiet`: answers to `quiet` messages only,
   * not counted.
   */
  protected send(bytes: Uint8Array | Uint8Array[], quiet = false): void {
    const ws = this.socket;
    if (!ws) return;
    if (!quiet) this.telemetry.touch();
    try {
      for (const m of chunkBytes(Array.isArray(bytes) ? bytes : [bytes], MAX_WS_MESSAGE_BYTES)) {
        ws.send(m);
        if (!quiet) this.bytesOut += m.length;
      }
    } catch {
      void this.end(); // the client is gone
    }
  }

  /** Writes `bytes` as one message, counting nothing (keepaliveAnswer). */
  private sendRaw(bytes: Uint8Array): void {
    try {
      this.socket?.send(bytes);
    } catch {
      void this.end(); // the client is gone
    }
  }

  /** Closes the connection from this side (`code`, `reason`) and ends it. */
  protected close(code: number, reason: string): void {
    try {
      this.socket?.close(code, reason);
    } catch {
      /* already closed */
    }
    void this.end();
  }

  /**
   * Sets deadline `kind` to `at` (unix ms; null clears it). Durable:
   * survives hibernation, fired by the storage alarm; resident: guards
   * memory-only state, fired by an in-memory timer that keeps the object
   * resident (deadlines.ts).
   */
  protected deadline(kind: string, at: number | null, mode: DeadlineMode = "durable"): void {
    if (this.ending) return;
    if (at === null) {
      if (!this.deadlines.has(kind)) return;
      this.deadlines.clear(kind);
    } else {
      const before = this.deadlines.get(kind);
      this.deadlines.set(kind, at, mode);
      // A new or earlier durable deadline pulls the alarm in to it unless the alarm comes within its slack anyway;
      // one moving later needs nothing (the alarm already comes within the slack of its earlier time).
      const latest = at + this.deadlineSlack(kind);
      if (mode === "durable" && (before === undefined || at < before) && latest < this.armedAt) this.arm(at, latest);
    }
    this.scheduleResident();
    this.persist();
  }

  /** The connection ended and the object's storage was deleted: write nothing more. */
  protected get storageDeleted(): boolean {
    return this.storageGone;
  }

  /** Whether deadline `kind` is set. */
  protected hasDeadline(kind: string): boolean {
    return this.deadlines.has(kind);
  }

  /** Stores the subclass's part of the attachment (written only when it changed). */
  protected saveState(state: S): void {
    this.state = state;
    this.persist();
  }

  /** Keeps the object in memory while `on` (in-memory state no attachment can hold, e.g. open subscriptions). */
  protected stayResident(on: boolean): void {
    if (on && !this.pin && !this.ending) this.pin = setInterval(() => {}, PIN_INTERVAL_MS);
    if (!on && this.pin) {
      clearInterval(this.pin);
      this.pin = null;
    }
  }

  /**
   * Rebuilds the protocol state on the first event after construction
   * (entry points call it; so must RPC methods that reach the protocol).
   * True while a connection is open.
   */
  protected resume(): boolean {
    if (!this.resumed) {
      this.resumed = true;
      const ws = this.ctx.getWebSockets()[0];
      if (ws) this.restore(ws);
    }
    return this.socket !== null && this.ending === null;
  }

  /**
   * Ends the connection without the protocol (its state is lost: the
   * subclass cleaned up what it could): closes every socket with `code`.
   */
  protected abandon(code: number, reason: string): void {
    this.resumed = true;
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.close(code, reason);
      } catch {
        /* already closed */
      }
    }
  }

  // ------------------------------------------------------------ platform entry points

  /** Accepts the WebSocket upgrade forwarded by the Worker's route. */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    if (this.resume() || this.ending) return new Response("session already has a connection", { status: 409 });
    const refused = await this.onUpgrade(request);
    if (refused) return refused;
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server);
    this.socket = server;
    await this.onOpen();
    this.persist();
    if (!this.ending && this.armedAt === Infinity) this.arm(Date.now() + SWEEP_MS);
    await this.arming;
    return new Response(null, { status: 101, webSocket: client });
  }

  override webSocketMessage(ws: WebSocket, message: ArrayBuffer | string): void | Promise<void> {
    if (!this.resume()) return;
    this.socket = ws; // the event's socket is the connection's (after a rebuild, getWebSockets() found it)
    const text = typeof message === "string";
    const bytes = text ? te.encode(message) : new Uint8Array(message);
    // no named closure here: the bundle (esbuild keepNames) would define its `name` on every message
    if (this.inbound) return (this.inbound = this.chain(this.inbound.then(() => this.handleMessage(bytes, text))));
    const r = this.handleMessage(bytes, text);
    if (r) return (this.inbound = this.chain(r));
  }

  /** One inbound message, in order (webSocketMessage chains them). */
  private handleMessage(bytes: Uint8Array, text: boolean): void | Promise<void> {
    if (this.ending) return;
    const pong = this.keepaliveAnswer(bytes, text);
    if (pong) return this.sendRaw(pong);
    if (!this.quiet(bytes, text)) {
      this.bytesIn += bytes.length;
      this.telemetry.touch();
      this.activeRecheck();
    }
    try {
      const r = this.onMessage(bytes, text);
      if (r) return r.then(() => this.persist(), (e) => this.crash(e));
      this.persist();
    } catch (e) {
      this.crash(e);
    }
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.resume();
    const echo = echoCloseCode(code);
    if (echo !== null) {
      try {
        ws.close(echo, reason);
      } catch {
        /* already closed */
      }
    }
    await this.end();
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.resume();
    try {
      ws.close(1011, "websocket error");
    } catch {
      /* already closed */
    }
    await this.end();
  }

  /**
   * The one alarm: expired durable deadlines (and the token re-check), then
   * re-armed for the next; after the connection ended (or when the object
   * restarted without it), the final report and storage deletion.
   */
  override async alarm(): Promise<void> {
    await this.scheduler.alarm();
  }

  /** The alarm's one part (see alarm()). */
  private async sweep(): Promise<void> {
    this.armedAt = Infinity;
    this.armedKnown = true; // the alarm fired: none is armed until this run re-arms

    const live = this.resume();
    if (!live) {
      if (this.ending) await this.ending;
      await this.cleanUp();
      return;
    }
    await this.runExpired(Date.now());
    if (this.ending) return;
    const next = Math.min(this.deadlines.latest((k) => this.deadlineSlack(k)), Date.now() + SWEEP_MS);
    if (next < this.armedAt) this.arm(next);
    await this.arming;
  }

  // ------------------------------------------------------------ internals

  /** The socket is still open after a rebuild: restore the base's part, then let the subclass rebuild. */
  private restore(ws: WebSocket): void {
    this.socket = ws;
    const a = ws.deserializeAttachment() as Attachment<S> | null;
    const base = a?.base;
    const lost = this.deadlines.restore(base?.deadlines, [RECHECK]);
    // the session's state first: whatever below writes the attachment (a deadline set by the telemetry's
    // resume, when it finds counts stored before the hibernation) must write it back, not null
    this.state = a?.session ?? null;
    this.savedState = JSON.stringify(this.state);
    if (base?.auth) {
      this.auth.restore(base.auth);
      this.savedAuth = base.auth;
    }
    if (base?.auth && !this.deadlines.has(RECHECK)) this.deadlines.set(RECHECK, this.auth.nextCheckAt);
    this.onResume(this.state);
    if (base?.auth) this.telemetry.start(base.auth.tenant, false);
    for (const kind of lost) if (!this.ending) this.onLost(kind);
    this.persist();
  }

  /** Runs the hooks of every expired deadline (the re-check here). */
  private async runExpired(now: number): Promise<void> {
    for (const kind of this.deadlines.expired(now, (k) => this.deadlineEarly(k))) {
      if (this.ending || !this.deadlines.has(kind)) continue;
      this.deadlines.clear(kind);
      if (kind === RECHECK) {
        const r = await this.auth.revalidate(now);
        if (!r.ok) this.onRevoked(r.message);
        else this.deadline(RECHECK, this.idleCheckAt());
      } else if (kind === TELEMETRY) {
        await this.telemetry.flush(); // a failed report asks for its retry (a new deadline)
      } else {
        await this.onTimeout(kind);
      }
    }
    this.scheduleResident();
    this.persist();
  }

  /**
   * The next re-check while nothing arrives (issue #26 §2 (f)):
   * IDLE_RECHECK_FACTOR × TENANT_REVALIDATE_MS after the last, so an idle
   * connection costs one alarm and one TenantDirectory request per 2
   * minutes; the first message after TENANT_REVALIDATE_MS pulls it in
   * (activeRecheck), so a connection in use keeps the usual bound, and a
   * revoked one that stays silent stays open up to 4 × (docs/tenants.md).
   */
  private idleCheckAt(): number {
    return this.auth.nextCheckAt + (IDLE_RECHECK_FACTOR - 1) * revalidateMs(this.env);
  }

  /**
   * A message arrived: the re-check of an idle connection moves in to its
   * usual time (TENANT_REVALIDATE_MS after the last one; now when that has
   * passed). Once per re-check at most: afterwards the deadline is there.
   */
  private activeRecheck(): void {
    const at = this.deadlines.get(RECHECK);
    const due = this.auth.nextCheckAt;
    if (at !== undefined && due < at) this.deadline(RECHECK, Math.max(due, Date.now()));
  }

  /**
   * Arms the storage alarm for `at` unless it is armed for `latest` or
   * earlier already (a deadline's slack; not awaited by callers on hot
   * paths; fetch and alarm await `arming`). After a rebuild the stored alarm
   * is read first: a rebuilt session recomputing its deadlines (restored
   * with 1 s of slack, so they look earlier) neither moves the alarm later
   * nor pulls it in when it comes within the slack anyway.
   */
  private arm(at: number, latest = at): void {
    if (this.storageGone) return;
    if (this.armedKnown) {
      if (latest >= this.armedAt) return;
      this.armedAt = at;
      this.arming = this.scheduler.rearm().catch(() => {});
      return;
    }
    const before = this.arming;
    this.arming = (async () => {
      await before;
      if (!this.armedKnown) {
        const stored = await this.scheduler.armed();
        if (!this.armedKnown) {
          this.armedKnown = true;
          this.armedAt = Math.min(this.armedAt, stored ?? Infinity);
        }
      }
      if (latest >= this.armedAt || this.storageGone) return;
      this.armedAt = at;
      await this.scheduler.rearm();
    })().catch(() => {});
  }

  /** The in-memory timer for the earliest resident deadline. */
  private scheduleResident(): void {
    const at = this.deadlines.next("resident");
    if (at === this.residentAt) return;
    if (this.residentTimer !== null) clearTimeout(this.residentTimer);
    this.residentTimer = null;
    this.residentAt = at;
    if (at === Infinity) return;
    this.residentTimer = setTimeout(() => {
      this.residentTimer = null;
      this.residentAt = Infinity;
      this.runExpired(Date.now()).then(() => this.scheduleResident(), (e) => this.crash(e));
    }, Math.max(0, at - Date.now()));
  }

  /** Writes the attachment when something in it changed (see deadlines.ts for the deadlines' part). */
  private persist(): void {
    const ws = this.socket;
    if (!ws || this.ending) return;
    const auth = this.auth.snapshot();
    const state = this.state === null ? "null" : JSON.stringify(this.state);
    if (!this.deadlines.dirty && auth === this.savedAuth && state === this.savedState) return;
    const a: Attachment<S> = { base: { auth, deadlines: this.deadlines.snapshot() }, session: this.state };
    try {
      ws.serializeAttachment(a);
      this.savedAuth = auth;
      this.savedState = state;
    } catch {
      /* socket gone */
    }
  }

  /** Keeps `p` as the tail of the inbound chain until it settles. */
  private chain(p: Promise<void>): Promise<void> {
    const tail: Promise<void> = p.catch((e) => this.crash(e)).finally(() => {
      if (this.inbound === tail) this.inbound = null;
    });
    return tail;
  }

  /** An unexpected exception while handling a message: close this connection only. */
  private crash(err: unknown): void {
    console.error(`${this.constructor.name}: closing connection after internal error`, err);
    this.close(1011, "internal error");
  }

  /** Ends the connection once (see the class comment). */
  private end(): Promise<void> {
    this.ending ??= (async () => {
      this.deadlines.clearAll();
      this.scheduleResident();
      this.stayResident(false);
      const protocol = (async () => this.onEnd())().catch((e) => console.error(`${this.constructor.name}: shutdown failed`, e));
      await Promise.all([protocol, this.auth.release()]);
      await this.cleanUp();
    })();
    return this.ending;
  }

  /**
   * The final telemetry report, then the storage goes; if the report could
   * not be delivered, the alarm retries (and the storage goes after that).
   */
  private async cleanUp(): Promise<void> {
    if (this.storageGone) return;
    if (await this.telemetry.finish()) {
      this.storageGone = true;
      await this.scheduler.stop();
      await this.ctx.storage.deleteAll();
    } else {
      this.arm(Date.now() + telemetryFlushMs(this.env));
      await this.arming;
    }
  }
}
