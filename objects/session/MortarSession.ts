/**
 * MortarSession Durable Object: one per client connection (`newUniqueId()`),
 * terminating the WebSocket of `GET /v0/mortar` (DESIGN.md §3). Binary
 * messages carry the MortarMQ byte stream; message boundaries are not frame
 * boundaries.
 *
 * The WebSocket lifecycle (accept with hibernation, attachment, tenant
 * re-check, deadlines, 1 MiB output messages, close, final telemetry report
 * and storage cleanup) is the base's (objects/session-base/SocketSession.ts).
 * The protocol is the sans-IO Connection (connection.ts); this class feeds
 * it the stream and executes its port (port.ts): object calls through stubs
 * (stub-port.ts), the tenant side through the base.
 *
 * Timers (docs/protocol.md "Timers"): the keepalive (45 s without a complete
 * frame) is a durable deadline, the half-frame timeout (10 s with a partial
 * frame buffered) a resident one — the object stays in memory while a
 * partial frame is buffered, so its bytes are not lost to hibernation. A
 * session rebuilt anyway (evicted) with a partial frame recorded answers
 * CONNECTION_TIMEOUT and closes. The CONNECT deadline (10 s from opening,
 * MORTAR_CONNECT_TIMEOUT_MS, until a CONNECT succeeds; frames before it do
 * not move it) is resident too: a connection that never authenticates
 * costs no storage write for it.
 *
 * Read path (issue #26 §2 (f)): subscriptions live in memory, and a
 * snapshot of them (snapshot.ts: member ids and epochs, credit window,
 * owned partitions, NOTICEs awaiting CONTROL_ACK) is written to storage
 * (store.ts, one row) whenever it changes — after each client message,
 * each callback and each completed deliver call, only when its JSON
 * differs. The object is kept in memory only while the read path is busy
 * (Consumer.busy: deliveries outstanding, PULLs waiting, a SUB joining);
 * an idle subscribed member can be evicted by the runtime, and its next
 * event — a client frame, or a Partition's wake / a group's NOTICE, which
 * reach the session by id and so rebuild it — restores the Consumer from
 * the snapshot and carries on. Rebuilt without its socket, or with a
 * snapshot it cannot use (an earlier version's `subs` rows, malformed),
 * the members leave their groups and the socket (if any) closes 1011 so
 * the client reconnects and subscribes again. Groups and partitions call
 * back through the RPC methods below (groupNotice, wake, expired,
 * hasMember, groupRemoved).
 *
 * Group liveness (docs/protocol.md "Group liveness"): this session sees
 * every HEARTBEAT, so it enforces the group's session timeout itself —
 * HEARTBEATs with unchanged epochs are answered here (no group request),
 * when each member was last heard is kept in the socket attachment (no
 * row), deadline `members` removes a member silent for the session timeout
 * (the group's `expire`), and deadline `lease` renews each member's long
 * group lease (memberLeaseMs) every half lease — up to a quarter lease
 * early, riding the idle token re-check's alarm (deadlineEarly). HEARTBEAT messages and
 * their answers are `quiet`: not counted in telemetry, and a connection
 * that only heartbeats is idle for the token re-check. The keepalive and
 * `members` deadlines have a slack of twice their timeout, so an idle
 * member costs one alarm per idle re-check interval (2 min by default),
 * and a member that stops heartbeating is removed between one and three
 * session timeouts after its last HEARTBEAT (one when it never sent one
 * after the check before).
 */
import { permit, permitAny } from "../tenants/permissions";
import type { Env } from "../env";
import { ErrorCode, MortarError } from "../../wire/mortar/errors";
import { HALF_FRAME_TIMEOUT_MS, KEEPALIVE_CLOSE_MS } from "../../wire/mortar/constants";
import { connectTimeoutMs } from "./config";
import { SocketSession } from "../session-base/SocketSession";
import { CloseCode, Connection } from "./connection";
import type { NoticeDelivery } from "../group/rpc";
import type { DeliverResult } from "../partition/rpc";
import { groupStub } from "../group/stub";
import { withDeadline } from "./faults";
import type { MortarPort } from "./port";
import type { SessionCallbacks } from "./rpc";
import { SessionStore, membersOf, type MemberRow } from "./store";
import type { ConsumerSnapshot } from "./snapshot";
import { stubCalls } from "./stub-port";
import { WireCounters } from "./wire-counters";
import { series } from "../usage/catalog";
import { readConfig } from "../shared/read-config";
import { memberLeaseMs } from "./config";
import type { Liveness } from "./consumer";
import { heartbeatAnswersOnly, heartbeatsOnly } from "./keepalive-frames";

const WAITING_PULLS = series("mortarmq_long_polls_waiting", { kind: "mortar_pull" });

/** Deadline kinds of this protocol. */
const KEEPALIVE = "keepalive";
const PARTIAL = "partial";
const CONNECT = "connect";
/** The earliest session timeout of the members (Consumer.expireLapsed). */
const MEMBERS = "members";
/** The earliest lease renewal of the members (Consumer.renewLeases). */
const LEASE = "lease";

/** The session's part of the socket attachment: when each member was last heard by the session and by the group (Consumer.heardAt). */
interface AttachedState {
  heard: Record<number, [number, number] | number>;
}

export class MortarSession extends SocketSession<AttachedState> implements SessionCallbacks {
  private conn: Connection | null = null;
  private readonly store: SessionStore;
  /** Frames by op and errors by code of this connection, reported by `telemetry` (docs/operations.md). */
  private readonly wire = new WireCounters();
  private readonly port: MortarPort;
  /** The snapshot found at construction, restored by onResume (then null). */
  private restored: { tenant: string; snapshot: ConsumerSnapshot } | null = null;
  private checkpointing = false;
  /** Session-enforced group liveness (session timeout, member lease). */
  private readonly liveness: Liveness;
  /** The message being handled is `quiet` (HEARTBEATs only): its frames are not counted. */
  private quietIn = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "mortar");
    this.store = new SessionStore(ctx.storage);
    const sessionTimeoutMs = readConfig(env).sessionTimeoutMs;
    this.liveness = { sessionTimeoutMs, leaseMs: memberLeaseMs(sessionTimeoutMs) };
    this.port = {
      ...stubCalls(env, () => this.auth.tenant!),
      authenticate: async (token) => {
        const a = await this.authenticate(token);
        if (a.ok) this.deadline(CONNECT, null);
        return a;
      },
      admitPublish: (bytes) => this.auth.admitPublish(bytes),
      permit: (op, r, quiet) => {
        const p = this.scopedPermit();
        return p ? permit(p, op, r, quiet) : null;
      },
      permitAny: (ops, name) => {
        const p = this.scopedPermit();
        return p ? permitAny(p, ops, name) : null;
      },
      send: (bytes) => {
        const quiet = heartbeatAnswersOnly(bytes);
        if (!quiet) this.wire.sent(bytes);
        this.send(bytes, quiet);
      },
      close: (code, reason) => this.close(code, reason),
      subscriptions: () => this.checkpointSoon(),
      frameIn: (op) => {
        if (!this.quietIn) this.wire.frameIn(op);
      },
    };
    const stored = this.store.load();
    if (stored.kind === "snapshot" && ctx.getWebSockets().length > 0) this.restored = stored;
    else if (stored.kind === "snapshot") this.lose(membersOf(stored.tenant, stored.snapshot)); // the connection is gone
    else if (stored.kind === "lost") this.lose(stored.members);
  }

  /** State that cannot be resumed: the members leave their groups; a socket still open closes 1011 (the client reconnects). */
  private lose(members: MemberRow[]): void {
    this.store.clear();
    this.restored = null;
    this.abandon(1011, "session state lost; reconnect and subscribe again");
    void Promise.all(members.map((r) =>
      withDeadline(groupStub(this.env, r.tenant, r.incarnation, r.topicId, r.group).leave(r.memberId, r.membershipEpoch)).catch(() => {})));
  }

  /** Stores the read path's snapshot (when it changed) and keeps the object in memory while the read path is busy, soon (once per microtask). */
  private checkpointSoon(): void {
    if (this.checkpointing) return;
    this.checkpointing = true;
    queueMicrotask(() => {
      this.checkpointing = false;
      this.checkpoint();
    });
  }

  private checkpoint(): void {
    const conn = this.conn;
    if (!conn || conn.isClosed || this.storageDeleted) return this.stayResident(false);
    const busy = conn.consumer.busy();
    this.store.save(this.auth.tenant ?? "", conn.consumer.snapshot(), busy);
    this.saveState({ heard: conn.consumer.heardAt() });
    const due = conn.consumer.livenessDue();
    this.deadline(MEMBERS, Number.isFinite(due.expiry) ? due.expiry : null);
    this.deadline(LEASE, Number.isFinite(due.renewal) ? due.renewal : null);
    this.stayResident(busy);
  }

  // ------------------------------------------------------------ the protocol's hooks

  protected override onOpen(): void {
    this.conn = new Connection(this.port, { sessionId: this.sessionId, liveness: this.liveness });
    const now = Date.now();
    this.deadline(KEEPALIVE, now + KEEPALIVE_CLOSE_MS);
    this.deadline(CONNECT, now + connectTimeoutMs(this.env), "resident");
  }

  protected override onResume(state: AttachedState | null): void {
    this.conn = new Connection(this.port, { sessionId: this.sessionId, tenant: this.auth.tenant, liveness: this.liveness });
    const r = this.restored;
    this.restored = null;
    if (!r) return;
    if (r.tenant !== this.auth.tenant) { // not this connection's: unusable
      void this.conn.end();
      return this.lose(membersOf(r.tenant, r.snapshot));
    }
    this.conn.consumer.restore(r.snapshot);
    if (state?.heard) this.conn.consumer.restoreHeardAt(state.heard);
    this.checkpointSoon();
  }

  protected override onLost(kind: string): void {
    if (kind === CONNECT) this.conn?.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "the connection sent no CONNECT before the session was rebuilt"), CloseCode.POLICY);
    else this.conn?.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "a partial frame was lost while the session was idle"));
  }

  protected override onMessage(bytes: Uint8Array, text: boolean): void {
    const conn = this.conn;
    if (!conn || conn.isClosed) return;
    if (text) {
      conn.fail(new MortarError(ErrorCode.MALFORMED_PAYLOAD, "text WebSocket messages are not allowed: send the byte stream as binary messages"));
      return;
    }
    const now = Date.now();
    this.quietIn = this.isQuiet(bytes);
    let completed: number;
    try {
      completed = conn.receive(bytes);
    } finally {
      this.quietIn = false;
    }
    this.checkpointSoon();
    if (completed > 0) this.deadline(KEEPALIVE, now + KEEPALIVE_CLOSE_MS);
    if (!conn.decoder.hasPartialFrame) this.deadline(PARTIAL, null);
    else if (completed > 0 || !this.hasDeadline(PARTIAL)) this.deadline(PARTIAL, now + HALF_FRAME_TIMEOUT_MS, "resident");
  }

  /** HEARTBEAT ACTIVE frames only, and no partial frame buffered (SocketSession.quiet). */
  protected override quiet(bytes: Uint8Array, text: boolean): boolean {
    return !text && this.isQuiet(bytes);
  }

  private isQuiet(bytes: Uint8Array): boolean {
    return !!this.conn && !this.conn.decoder.hasPartialFrame && heartbeatsOnly(bytes);
  }

  /** Keepalive and member timeouts are checked at the alarm, up to twice their timeout late (see the class comment); a lease renewal up to a quarter lease late. */
  protected override deadlineSlack(kind: string): number {
    if (kind === KEEPALIVE) return 2 * KEEPALIVE_CLOSE_MS;
    if (kind === MEMBERS) return 2 * this.liveness.sessionTimeoutMs;
    if (kind === LEASE) return Math.floor(this.liveness.leaseMs / 4);
    return 0;
  }

  /**
   * A lease renewal rides an alarm that comes within a quarter lease before
   * it is due (the token re-check's, every 2 min when idle): renewing early
   * only moves the backstop later, and the next renewal is still due half a
   * lease after this one, so the lease never lapses (renewals ≤ 3/4 lease apart).
   */
  protected override deadlineEarly(kind: string): number {
    return kind === LEASE ? Math.floor(this.liveness.leaseMs / 4) : 0;
  }

  protected override async onTimeout(kind: string): Promise<void> {
    if (kind === MEMBERS) {
      this.conn?.consumer.expireLapsed(Date.now());
      return this.checkpoint();
    }
    if (kind === LEASE) {
      await this.conn?.consumer.renewLeases(Date.now(), this.deadlineEarly(LEASE));
      return this.checkpoint();
    }
    if (kind === CONNECT) this.conn?.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, `no CONNECT within ${connectTimeoutMs(this.env) / 1000} s of opening the connection`), CloseCode.POLICY);
    else if (kind === PARTIAL) this.conn?.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "a partial frame stayed buffered for 10 s"));
    else if (kind === KEEPALIVE) this.conn?.fail(new MortarError(ErrorCode.CONNECTION_TIMEOUT, "no complete frame for 45 s"), CloseCode.NORMAL);
  }

  protected override onRevoked(message: string): void {
    this.conn?.fail(new MortarError(ErrorCode.AUTH_FAILED, `${message}: the connection is closed`), CloseCode.POLICY);
  }

  protected override onEnd(): Promise<void> | void {
    return this.conn?.end();
  }

  protected override drainCounts(add: (series: string, n: number) => void): void {
    this.wire.drain(add);
  }

  protected override levels(): Record<string, number> {
    return { [WAITING_PULLS]: this.conn?.consumer.waitingPulls() ?? 0 };
  }

  /** The live connection, rebuilt after hibernation if need be; null once it ended. */
  private live(): Connection | null {
    if (!this.resume()) return null;
    this.checkpointSoon();
    return this.conn;
  }

  // ------------------------------------------------------------ read-path RPC (ConsumerGroup, Partition; rpc.ts)

  /** A NOTICE for one of this connection's members. False when it does not hold that member (the group then removes it). */
  groupNotice(n: NoticeDelivery): boolean {
    return this.live()?.consumer.notice(n) ?? false;
  }

  /** A Partition has records for `partition` of subscription `subscriptionId`. False when the subscription is gone. */
  wake(subscriptionId: number, partition: number): boolean {
    return this.live()?.consumer.wake(subscriptionId, partition) ?? false;
  }

  /** Deliveries a Partition carried in its wake (SessionCallbacks.carry): true when all were taken, false when none was. */
  carry(subscriptionId: number, partition: number, ownershipEpoch: number, r: DeliverResult): boolean {
    return this.live()?.consumer.carry(subscriptionId, partition, ownershipEpoch, r) ?? false;
  }

  /**
   * A Partition's deliveries (`seqs[i]`, `deliveryIds[i]`) to
   * `subscriptionId` passed their work deadline: their credit returns.
   * False when the subscription is gone.
   */
  expired(subscriptionId: number, partition: number, seqs: number[], deliveryIds: number[]): boolean {
    return this.live()?.consumer.expired(subscriptionId, partition, seqs, deliveryIds) ?? false;
  }

  /** Whether this session still holds `memberId` on `subscriptionId`. */
  hasMember(subscriptionId: number, memberId: number): boolean {
    return this.live()?.consumer.hasMember(subscriptionId, memberId) ?? false;
  }

  /** The group removed the member (session timeout). */
  groupRemoved(subscriptionId: number, memberId: number): void {
    this.live()?.consumer.removed(subscriptionId, memberId);
  }

  /**
   * Request bytes this connection holds (Connection.memory) — the
   * backpressure bound is observable (docs/protocol.md "Backpressure bounds").
   */
  memory(): ReturnType<Connection["memory"]> | null {
    return this.live()?.memory() ?? null;
  }
}
