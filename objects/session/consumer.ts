/**
 * The read path of one connection (spec §2 SUB, ACK, NACK, PULL, HEARTBEAT,
 * NOTICE, CONTROL_ACK, CREDIT; docs/protocol.md "Read path"): the
 * subscriptions, their credit, the calls to ConsumerGroup and Partition
 * objects, and the entry points those objects call back (notices, wakes).
 *
 * Stateless checks already ran (checkClientFrame). Here:
 * - subscription_id / CONTROL_ACK group_id not open → UNKNOWN_SUBSCRIPTION;
 * - member_id or membership_epoch not the subscription's (or the member was
 *   removed) → STALE_MEMBERSHIP_EPOCH; PULL assignment_epoch older than the
 *   last NOTICE forwarded, or ownership_epochs not the owned partitions'
 *   epochs in ascending partition order → STALE_ASSIGNMENT_EPOCH;
 * - the group decides HEARTBEAT and CONTROL_ACK, the Partition decides
 *   ACK/NACK (ownership epoch, owner, delivery).
 * A refused request changes nothing.
 */
import { AckFlags, HeartbeatState, NackReason, NoticeKind, Op, SubFlags, DEFAULT_PULL_MAX_BYTES, DEFAULT_PULL_MAX_MSGS, MAX_PULL_BYTES } from "../../wire/mortar/constants";
import { encodeFrame } from "../../wire/mortar/codec";
import { concatBytes } from "../../wire/nats/encoder";
import { ErrorCode } from "../../wire/mortar/errors";
import type { AckFrame, ControlAckFrame, CreditFrame, HeartbeatFrame, NackFrame, PullFrame, SubFrame } from "../../wire/mortar/frames";
import { encodeCreditResult, encodeSubResult, okFrame } from "../../wire/mortar/results";
import type { NoticeDelivery } from "../group/rpc";
import { SettleKind, type DeliverResult, type SettleResult } from "../partition/rpc";
import type { TopicInfo } from "../registry/rpc";
import { faultOf, withDeadline } from "./faults";
import { FetchLoop } from "./fetch-loop";
import type { MortarPort } from "./port";
import { SettleLanes, type SettleOp } from "./settle-lanes";
import { Subscription, type PendingPull } from "./subscription";
import { snapshotOf, subscriptionsOf, type ConsumerSnapshot } from "./snapshot";

/** Subscriptions open at once on one connection. */
export const MAX_SUBSCRIPTIONS = 1024;

/** What the read path needs from its Connection. */
export interface ConsumerIO {
  /** The connection's port: the ConsumerGroup and Partition calls (port.ts). */
  port: Pick<MortarPort, "join" | "heartbeat" | "controlAck" | "leave" | "renew" | "expire" | "deliver" | "settle" | "permit">;
  /** This session's object id (hex): where groups and partitions call back. */
  sessionId: string;
  /** Topic metadata (cached), or the error for an unknown / deleted topic_id. */
  topic(topicId: number): Promise<TopicInfo | { code: number; message: string }>;
  respond(slot: number, bytes: Uint8Array, onWritten?: () => void): void;
  respondErr(slot: number, code: number, requestOp: number, message: string): void;
  /** Writes bytes straight to the client (MSG/NOTICE pushes, outside the answer order). */
  push(bytes: Uint8Array): void;
  /** Writes the answers that are ready. */
  write(): void;
  /** True while the connection is open. */
  live(): boolean;
  /**
   * The subscriptions changed: opened or closed, or what a snapshot holds
   * (epochs, NOTICEs, owned partitions, credit), or what `busy` depends on
   * (a deliver call completed, the SUB's OK went out). The host stores the
   * snapshot and keeps the object in memory while `busy`.
   */
  changed(subs: ReadonlyMap<number, Subscription>): void;
  /**
   * Session-enforced group liveness (MortarSession; absent: every HEARTBEAT
   * goes to the group, which enforces the session timeout). With it, a
   * valid ACTIVE HEARTBEAT whose epochs are the subscription's is answered
   * here and costs the group nothing: the session keeps when the client last
   * heartbeated (Subscription.heardAt), removes a member silent for
   * `sessionTimeoutMs` (expireLapsed → the group's `expire`), and renews the
   * member's group lease of `leaseMs` every half lease (renewLeases): the
   * lease only backs up a session object that disappeared.
   */
  liveness?: Liveness;
  /** Current time, ms (tests inject it). */
  now?: () => number;
}

/** Session-enforced group liveness (ConsumerIO.liveness), ms. */
export interface Liveness {
  /** The group's session timeout: a member whose client sent no valid HEARTBEAT this long is removed. */
  sessionTimeoutMs: number;
  /** The member's lease at the group (JoinRequest.leaseMs), renewed every half lease. */
  leaseMs: number;
}

const big = (x: bigint) => (x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : -1);

export class Consumer {
  readonly subs = new Map<number, Subscription>();
  private nextId = 1;
  private closed = false;
  private readonly loop: FetchLoop;
  private readonly lanes: SettleLanes;

  constructor(private readonly io: ConsumerIO) {
    this.loop = new FetchLoop({
      deliver: (sub, p, req) => withDeadline(io.port.deliver(sub.topic, p, {
        group: sub.group, caller: { sessionId: io.sessionId, subscriptionId: sub.id }, ...req,
      })),
      push: (sub, frames) => this.push(sub, frames),
      answerPull: (sub, pull) => {
        const parts = [...pull.frames, encodeFrame(okFrame(Op.PULL))];
        this.io.respond(pull.slot, concatBytes(parts));
        this.io.write();
      },
      open: (sub) => !this.closed && this.subs.get(sub.id) === sub,
      settled: () => this.io.changed(this.subs),
    });
    this.lanes = new SettleLanes({
      settle: (subId, p, ops) => this.settle(subId, p, ops),
      respond: (slot, frame) => this.io.respond(slot, frame),
      answered: () => this.io.write(),
    });
  }

  /** Sends queued ACK/NACK batches (the Connection calls this when it flushes). */
  flush(): void {
    this.lanes.flush();
  }

  // ------------------------------------------------------------ requests

  /** SUB: joins the group; a barrier (later frames may name the new subscription_id). */
  async subscribe(f: SubFrame, slot: number, group: string): Promise<void> {
    if (this.subs.size >= MAX_SUBSCRIPTIONS) {
      this.io.respondErr(slot, ErrorCode.QUOTA_EXCEEDED, Op.SUB, `at most ${MAX_SUBSCRIPTIONS} subscriptions per connection`);
      return;
    }
    const topic = await this.io.topic(f.topicId);
    if ("code" in topic) {
      this.io.respondErr(slot, topic.code, Op.SUB, topic.message);
      return;
    }
    const refused = this.io.port.permit("mortar.consume", { name: topic.name, group });
    if (refused !== null) return this.io.respondErr(slot, ErrorCode.PERMISSION_DENIED, Op.SUB, refused);
    while (this.subs.has(this.nextId)) this.nextId = (this.nextId % 0xffff) + 1;
    const sub = new Subscription(this.nextId, group, topic, (f.flags & SubFlags.PULL_MODE) !== 0, f.creditCount, f.creditBytes);
    this.nextId = (this.nextId % 0xffff) + 1;
    this.subs.set(sub.id, sub); // registered before joining: the group's first NOTICEs may arrive before its answer
    try {
      const r = await withDeadline(this.io.port.join(topic, group, {
        session: { sessionId: this.io.sessionId, subscriptionId: sub.id }, partitionCount: topic.partitionCount, startPolicy: f.startPolicy,
        ...(this.io.liveness ? { leaseMs: this.io.liveness.leaseMs } : {}),
      }));
      if ("code" in r) { // refused by the group (the topic's group limit)
        this.subs.delete(sub.id);
        this.io.respondErr(slot, r.code, Op.SUB, r.message);
        return;
      }
      sub.memberId = r.memberId;
      sub.membershipEpoch = r.membershipEpoch;
      sub.groupHeardAt = sub.heardAt = this.now(); // the join counts as the member's first heartbeat
      sub.assignmentEpoch = Math.max(sub.assignmentEpoch, r.assignmentEpoch);
    } catch (e) {
      this.subs.delete(sub.id);
      const fault = faultOf(e);
      this.io.respondErr(slot, fault.code, Op.SUB, fault.message);
      return;
    }
    if (this.closed) {
      void this.leaveGroup(sub);
      return;
    }
    this.io.changed(this.subs);
    const result = encodeSubResult({ subscriptionId: sub.id, memberId: BigInt(sub.memberId), membershipEpoch: sub.membershipEpoch, assignmentEpoch: sub.assignmentEpoch });
    this.io.respond(slot, encodeFrame(okFrame(Op.SUB, result)), () => this.announce(sub));
  }

  /** ACK / NACK: returns credit now (when its ownership epoch is the delivery's), settles at the Partition (batched per partition). */
  settleRequest(f: AckFrame | NackFrame, slot: number): void {
    const sub = this.subs.get(f.subscriptionId);
    if (!sub) return this.io.respondErr(slot, ErrorCode.UNKNOWN_SUBSCRIPTION, f.op, `subscription ${f.subscriptionId} is not open on this connection`);
    if (f.topicId !== sub.topic.topicId) return this.io.respondErr(slot, ErrorCode.NOT_OWNER, f.op, `subscription ${sub.id} consumes topic_id ${sub.topic.topicId}, not ${f.topicId}`);
    const refused = this.io.port.permit("mortar.consume", { name: sub.topic.name, group: sub.group });
    if (refused !== null) return this.io.respondErr(slot, ErrorCode.PERMISSION_DENIED, f.op, refused);
    if (f.partition >= sub.topic.partitionCount) {
      return this.io.respondErr(slot, ErrorCode.PARTITION_OUT_OF_RANGE, f.op, `partition ${f.partition} is not below partition_count ${sub.topic.partitionCount}`);
    }
    const kind = f.op === Op.ACK
      ? ((f.flags & AckFlags.PROGRESS) !== 0 ? SettleKind.PROGRESS : SettleKind.ACK)
      : (f.reason === NackReason.RETRY ? SettleKind.RETRY : SettleKind.REJECT);
    const seq = big(f.seq), deliveryId = big(f.deliveryId), ownershipEpoch = big(f.ownershipEpoch);
    // Credit returns now, unless the request is one the Partition will fence (an epoch the delivery was not made under).
    if (kind !== SettleKind.PROGRESS && sub.credit.settled(f.partition, seq, deliveryId, ownershipEpoch)) this.loop.schedule(sub);
    this.lanes.submit(sub.id, f.partition, { kind, seq, deliveryId, ownershipEpoch, requestOp: f.op, slot });
  }

  /** PULL: checks the member's epochs, then waits for records (not a barrier). */
  pull(f: PullFrame, slot: number): void {
    const sub = this.subs.get(f.subscriptionId);
    if (!sub || !sub.pullMode) {
      return this.io.respondErr(slot, ErrorCode.UNKNOWN_SUBSCRIPTION, Op.PULL, `no pull-mode subscription ${f.subscriptionId} is open on this connection`);
    }
    const refused = this.io.port.permit("mortar.consume", { name: sub.topic.name, group: sub.group });
    if (refused !== null) return this.io.respondErr(slot, ErrorCode.PERMISSION_DENIED, Op.PULL, refused);
    if (this.staleMember(sub, f.memberId, f.membershipEpoch)) {
      return this.io.respondErr(slot, ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.PULL, `member ${f.memberId} (membership_epoch ${f.membershipEpoch}) is not this subscription's current member`);
    }
    const mine = sub.ownershipEpochs();
    if (f.assignmentEpoch < sub.assignmentEpoch || f.ownershipEpochs.length !== mine.length || f.ownershipEpochs.some((e, i) => big(e) !== mine[i])) {
      return this.io.respondErr(slot, ErrorCode.STALE_ASSIGNMENT_EPOCH, Op.PULL,
        `current assignment: assignment_epoch ${sub.assignmentEpoch}, ownership_epochs [${mine.join(", ")}] (ascending partition order)`);
    }
    const maxBytes = Math.min(f.maxBytes || DEFAULT_PULL_MAX_BYTES, MAX_PULL_BYTES);
    const pull: PendingPull = {
      slot, maxMsgs: f.maxMsgs || DEFAULT_PULL_MAX_MSGS, maxBytes, minBytes: f.minBytes, deadline: Date.now() + f.waitMs,
      frames: [], count: 0, bytes: 0, fetches: 0, reserved: { count: 0, bytes: 0 }, oversizeUsed: false, expired: false, timer: null,
    };
    this.loop.startPull(sub, pull, f.waitMs);
  }

  /**
   * HEARTBEAT. With session-enforced liveness (ConsumerIO.liveness) an
   * ACTIVE one with the subscription's epochs is answered here (the member
   * is alive as of now); one arriving after the session timeout passed
   * expires the member first (STALE_MEMBERSHIP_EPOCH). LEAVE, another
   * assignment epoch, or no liveness: the group decides; LEAVE also closes
   * the subscription here (a barrier).
   */
  async heartbeat(f: HeartbeatFrame, slot: number): Promise<void> {
    const sub = this.subs.get(f.subscriptionId);
    if (!sub) return this.io.respondErr(slot, ErrorCode.UNKNOWN_SUBSCRIPTION, Op.HEARTBEAT, `subscription ${f.subscriptionId} is not open on this connection`);
    const now = this.now();
    const live = this.io.liveness;
    if (live && this.lapsed(sub, now, live)) this.expireMember(sub);
    if (this.staleMember(sub, f.memberId, f.membershipEpoch)) {
      return this.io.respondErr(slot, ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT, `member ${f.memberId} (membership_epoch ${f.membershipEpoch}) is not in the group`);
    }
    const leave = f.state === HeartbeatState.LEAVE;
    if (!leave && live && f.assignmentEpoch === sub.assignmentEpoch) {
      sub.heardAt = now; // alive: no group request (the lease is renewed by renewLeases)
      return this.io.respond(slot, encodeFrame(okFrame(Op.HEARTBEAT)));
    }
    let code: number;
    try {
      code = await withDeadline(this.io.port.heartbeat(sub.topic, sub.group, sub.memberId, f.membershipEpoch, f.assignmentEpoch, leave));
    } catch (e) {
      const fault = faultOf(e);
      return this.io.respondErr(slot, fault.code, Op.HEARTBEAT, fault.message);
    }
    if (code === ErrorCode.STALE_MEMBERSHIP_EPOCH) {
      sub.removed = true;
      this.io.changed(this.subs);
    }
    if (code !== 0) {
      const why = code === ErrorCode.STALE_ASSIGNMENT_EPOCH ? `assignment_epoch ${f.assignmentEpoch} is not current; apply pending NOTICEs` : "the member is no longer in the group";
      return this.io.respondErr(slot, code, Op.HEARTBEAT, why);
    }
    sub.groupHeardAt = sub.heardAt = now;
    if (leave) this.close(sub);
    else this.io.changed(this.subs);
    this.io.respond(slot, encodeFrame(okFrame(Op.HEARTBEAT)));
  }

  /** CONTROL_ACK: the group checks the notice; a confirmed REVOKE releases the partition here. */
  async controlAck(f: ControlAckFrame, slot: number): Promise<void> {
    const sub = this.subs.get(f.groupId);
    if (!sub) return this.io.respondErr(slot, ErrorCode.UNKNOWN_SUBSCRIPTION, Op.CONTROL_ACK, `group_id (subscription) ${f.groupId} is not open on this connection`);
    let code: number;
    try {
      code = await withDeadline(this.io.port.controlAck(sub.topic, sub.group, {
        memberId: sub.memberId, noticeId: big(f.noticeId), kind: f.noticeKind, membershipEpoch: f.membershipEpoch,
        assignmentEpoch: f.assignmentEpoch, ownershipEpoch: big(f.ownershipEpoch), result: f.result,
      }));
    } catch (e) {
      const fault = faultOf(e);
      return this.io.respondErr(slot, fault.code, Op.CONTROL_ACK, fault.message);
    }
    const sent = sub.notices.get(big(f.noticeId));
    if (code !== 0) {
      // A REVOKE forwarded here, echoed exactly, that the group no longer knows: the group already ended that
      // revocation (forced after the revocation timeout). Release the partition here too, or the credit of its
      // deliveries (which the client dropped) would stay outstanding for good.
      if (code === ErrorCode.UNKNOWN_NOTICE && sent?.kind === NoticeKind.REVOKE && f.noticeKind === sent.kind
        && big(f.ownershipEpoch) === sent.ownershipEpoch && f.membershipEpoch === sent.membershipEpoch && f.assignmentEpoch === sent.assignmentEpoch) {
        sub.notices.delete(big(f.noticeId));
        sub.release(sent.partition, sent.ownershipEpoch);
        this.loop.schedule(sub);
        this.io.changed(this.subs);
      }
      return this.io.respondErr(slot, code, Op.CONTROL_ACK, `notice ${f.noticeId} is unknown, already confirmed, or its kind/epochs do not match`);
    }
    sub.notices.delete(big(f.noticeId));
    if (sent && sent.kind === NoticeKind.REVOKE) {
      sub.release(sent.partition, sent.ownershipEpoch);
      this.loop.schedule(sub);
    }
    this.io.changed(this.subs);
    this.io.respond(slot, encodeFrame(okFrame(Op.CONTROL_ACK)));
  }

  /** CREDIT SET/ADD (local: the session holds the window). */
  credit(f: CreditFrame, slot: number): void {
    const sub = this.subs.get(f.subscriptionId);
    if (!sub) return this.io.respondErr(slot, ErrorCode.UNKNOWN_SUBSCRIPTION, Op.CREDIT, `subscription ${f.subscriptionId} is not open on this connection`);
    if (sub.removed || f.membershipEpoch !== sub.membershipEpoch) {
      const why = sub.removed ? `member ${sub.memberId} is no longer in the group (session timeout or LEAVE); SUB again` : `membership_epoch ${f.membershipEpoch} is not the subscription's (${sub.membershipEpoch})`;
      return this.io.respondErr(slot, ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.CREDIT, why);
    }
    const epoch = big(f.ownershipEpoch);
    if (epoch !== 0 && ![...sub.owned.values()].some((o) => o.active && o.ownershipEpoch === epoch)) {
      return this.io.respondErr(slot, ErrorCode.STALE_OWNERSHIP_EPOCH, Op.CREDIT, `ownership_epoch ${epoch} is not held by this subscription (send 0 for no check)`);
    }
    const code = f.mode === 0 ? sub.credit.set(f.creditCount, f.creditBytes) : sub.credit.add(f.creditCount, f.creditBytes);
    if (code !== 0) return this.io.respondErr(slot, code, Op.CREDIT, "the credit window would exceed 65535 messages or 64 MiB");
    const c = sub.credit;
    this.io.respond(slot, encodeFrame(okFrame(Op.CREDIT, encodeCreditResult({
      grantedCount: c.count, grantedBytes: c.bytes, outstandingCount: Math.min(c.outstanding.count, 0xffff),
      outstandingBytes: Math.min(c.outstanding.bytes, 0xffff_ffff), creditEpoch: BigInt(c.epoch),
    }))));
    this.loop.schedule(sub);
    this.io.changed(this.subs);
  }

  // ------------------------------------------------------------ calls from other objects

  /** A NOTICE from the member's group; false when this session does not hold that member (it is then removed). */
  notice(n: NoticeDelivery): boolean {
    const sub = this.subs.get(n.subscriptionId);
    if (this.closed || !sub || sub.removed || (sub.memberId !== 0 && sub.memberId !== n.memberId) || n.topicId !== sub.topic.topicId) return false;
    if (n.kind === NoticeKind.ASSIGN) sub.assign(n.partition, n.ownershipEpoch);
    else sub.revoke(n.partition, n.ownershipEpoch);
    sub.assignmentEpoch = Math.max(sub.assignmentEpoch, n.assignmentEpoch);
    sub.sent(n.noticeId, { kind: n.kind, partition: n.partition, ownershipEpoch: n.ownershipEpoch, membershipEpoch: n.membershipEpoch, assignmentEpoch: n.assignmentEpoch });
    this.push(sub, encodeFrame({
      op: Op.NOTICE, noticeId: BigInt(n.noticeId), kind: n.kind, groupId: sub.id, membershipEpoch: n.membershipEpoch,
      assignmentEpoch: n.assignmentEpoch, ownershipEpoch: BigInt(n.ownershipEpoch), topicId: n.topicId, partition: n.partition,
      memberId: BigInt(n.memberId),
    }));
    this.loop.schedule(sub);
    return true;
  }

  /** A Partition has deliverable records for `partition`; false when the subscription is gone. */
  wake(subscriptionId: number, partition: number): boolean {
    const sub = this.subs.get(subscriptionId);
    if (this.closed || !sub) return false;
    this.loop.wake(sub, partition);
    return true;
  }

  /** Deliveries a Partition carried in its wake (FetchLoop.carried); false when the subscription is gone or took none. */
  carry(subscriptionId: number, partition: number, ownershipEpoch: number, r: DeliverResult): boolean {
    const sub = this.subs.get(subscriptionId);
    if (this.closed || !sub) return false;
    return this.loop.carried(sub, partition, ownershipEpoch, r);
  }

  /**
   * Deliveries of `partition` passed their work deadline at the Partition:
   * the ones still outstanding in the window give their credit back (the
   * Partition redelivers them, or dead-letters them after the last
   * attempt), and the partition is asked again. False when the
   * subscription is gone.
   */
  expired(subscriptionId: number, partition: number, seqs: number[], deliveryIds: number[]): boolean {
    const sub = this.subs.get(subscriptionId);
    if (this.closed || !sub) return false;
    for (let i = 0; i < seqs.length; i++) sub.credit.settled(partition, seqs[i]!, deliveryIds[i]!);
    this.loop.wake(sub, partition);
    return true;
  }

  /** Whether this session still holds `memberId` on `subscriptionId` (the group's probe after a restart). */
  hasMember(subscriptionId: number, memberId: number): boolean {
    const sub = this.subs.get(subscriptionId);
    return !this.closed && !!sub && !sub.removed && (sub.memberId === 0 || sub.memberId === memberId);
  }

  /** The group removed the member (session timeout): stop fetching; requests now get STALE_MEMBERSHIP_EPOCH. */
  removed(subscriptionId: number, memberId: number): void {
    const sub = this.subs.get(subscriptionId);
    if (!sub || sub.memberId !== memberId) return;
    sub.removed = true;
    this.loop.cancel(sub);
  }

  /** The connection closed: every member leaves its group (best effort; the session timeout covers failures). */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.loop.stop();
    const subs = [...this.subs.values()];
    this.subs.clear();
    this.io.changed(this.subs);
    await Promise.all(subs.map((s) => this.leaveGroup(s)));
  }

  /**
   * Whether in-memory state that no snapshot holds exists: deliveries
   * outstanding or reserved (credit), PULLs waiting, pushes held until a
   * SUB's OK, a SUB still joining, or (push mode) an active partition not
   * parked — one the loop is about to ask. While busy the host keeps the
   * object in memory; otherwise `snapshot()` is all the read path needs to
   * resume (every active push partition is then parked: its Partition
   * wakes the session).
   */
  busy(): boolean {
    for (const s of this.subs.values()) {
      if (s.credit.outstanding.count > 0 || s.credit.reserved.count > 0 || s.pulls.length > 0 || !s.announced || s.memberId === 0) return true;
      // push mode: a partition that is not parked is about to be asked (or blocked until credit returns)
      if (!s.pullMode && !s.removed) for (const o of s.owned.values()) if (o.active && !o.parked) return true;
    }
    return false;
  }

  /** What survives hibernation (snapshot.ts). */
  snapshot(): ConsumerSnapshot {
    return snapshotOf(this.closed ? [] : this.subs.values(), this.nextId);
  }

  /**
   * Rebuilds the subscriptions of a session the runtime evicted while idle
   * (a fresh Consumer, before any frame): partitions not parked are asked
   * again; parked ones wait for their Partition's wake.
   */
  restore(snap: ConsumerSnapshot): void {
    this.nextId = snap.nextId;
    const now = this.now();
    for (const sub of subscriptionsOf(snap)) {
      sub.heardAt = sub.groupHeardAt = now; // until restoreHeardAt says when (never expired for want of a record)
      this.subs.set(sub.id, sub);
      this.loop.schedule(sub);
    }
  }

  /**
   * When the session must next look at its members' liveness, ms (Infinity
   * = never): `expiry`, the earliest session timeout (expireLapsed);
   * `renewal`, the earliest half lease since the group last heard of a
   * member (renewLeases). Both Infinity without session-enforced liveness.
   */
  livenessDue(): { expiry: number; renewal: number } {
    const live = this.io.liveness;
    let expiry = Infinity, renewal = Infinity;
    if (!live || this.closed) return { expiry, renewal };
    for (const s of this.subs.values()) {
      if (s.removed || s.memberId === 0) continue;
      expiry = Math.min(expiry, s.heardAt + live.sessionTimeoutMs);
      renewal = Math.min(renewal, s.groupHeardAt + Math.floor(live.leaseMs / 2));
    }
    return { expiry, renewal };
  }

  /**
   * Removes every member whose client sent no valid HEARTBEAT for the
   * session timeout (the group is told: `expire`, best effort — its lease
   * removes the member if the call is lost). Returns how many.
   */
  expireLapsed(now = this.now()): number {
    const live = this.io.liveness;
    if (!live || this.closed) return 0;
    let n = 0;
    for (const s of this.subs.values()) {
      if (!this.lapsed(s, now, live)) continue;
      this.expireMember(s);
      n++;
    }
    return n;
  }

  /**
   * Renews the group lease of every member the group last heard of half a
   * lease ago or more — `earlyMs` less when the renewal rides an alarm run
   * for something else (MortarSession.deadlineEarly) — (one `renew` per
   * member). A member the group no
   * longer knows is removed here; a failed call is retried at the next
   * look (the lease has half its length left).
   */
  async renewLeases(now = this.now(), earlyMs = 0): Promise<void> {
    const live = this.io.liveness;
    if (!live || this.closed) return;
    const due = [...this.subs.values()].filter((s) => !s.removed && s.memberId !== 0 && now - s.groupHeardAt >= Math.floor(live.leaseMs / 2) - earlyMs);
    await Promise.all(due.map(async (s) => {
      let code: number;
      try {
        code = await withDeadline(this.io.port.renew(s.topic, s.group, s.memberId, s.membershipEpoch));
      } catch {
        return;
      }
      if (code === 0) s.groupHeardAt = now;
      else if (this.subs.get(s.id) === s) this.removed(s.id, s.memberId);
    }));
    this.io.changed(this.subs);
  }

  /**
   * When the client last heartbeated and the group last heard of each
   * joined member, ms, by subscription id (kept across hibernation in the
   * socket attachment, not in storage: it changes with every HEARTBEAT).
   */
  heardAt(): Record<number, [number, number]> {
    const out: Record<number, [number, number]> = {};
    for (const s of this.subs.values()) if (s.groupHeardAt > 0 && !s.removed) out[s.id] = [s.heardAt, s.groupHeardAt];
    return out;
  }

  /** Restores `heardAt()` after a rebuild (subscriptions not open are ignored; a bare number: an earlier version's group time, for both). */
  restoreHeardAt(heard: Record<number, [number, number] | number>): void {
    for (const [id, at] of Object.entries(heard)) {
      const s = this.subs.get(Number(id));
      if (!s) continue;
      if (typeof at === "number") s.heardAt = s.groupHeardAt = at;
      else if (Array.isArray(at) && typeof at[0] === "number" && typeof at[1] === "number") [s.heardAt, s.groupHeardAt] = at;
    }
  }

  /** PULL requests waiting for records right now (the long-poll gauge). */
  waitingPulls(): number {
    let n = 0;
    for (const s of this.subs.values()) n += s.pulls.length;
    return n;
  }

  // ------------------------------------------------------------ internals

  private now(): number {
    return this.io.now?.() ?? Date.now();
  }

  /** Whether `sub`'s member passed the session timeout without a HEARTBEAT at `now`. */
  private lapsed(sub: Subscription, now: number, live: Liveness): boolean {
    return !sub.removed && sub.memberId !== 0 && now - sub.heardAt >= live.sessionTimeoutMs;
  }

  /** The session timeout removed `sub`'s member: stop fetching, tell the group (best effort). */
  private expireMember(sub: Subscription): void {
    this.removed(sub.id, sub.memberId);
    void withDeadline(this.io.port.expire(sub.topic, sub.group, sub.memberId, sub.membershipEpoch)).catch(() => {});
    this.io.changed(this.subs);
  }

  private staleMember(sub: Subscription, memberId: bigint, membershipEpoch: number): boolean {
    return sub.removed || memberId !== BigInt(sub.memberId) || membershipEpoch !== sub.membershipEpoch;
  }

  /** Writes a push for `sub`, or holds it until the SUB's OK went out. */
  private push(sub: Subscription, bytes: Uint8Array): void {
    if (!this.io.live()) return;
    if (sub.announced) this.io.push(bytes);
    else sub.held.push(bytes);
  }

  private announce(sub: Subscription): void {
    sub.announced = true;
    for (const b of sub.held.splice(0)) this.io.push(b);
    this.io.changed(this.subs);
  }

  /** The subscription left its group (LEAVE answered OK): forget it locally. */
  private close(sub: Subscription): void {
    sub.removed = true;
    this.loop.cancel(sub);
    this.subs.delete(sub.id);
    this.io.changed(this.subs);
  }

  private async leaveGroup(sub: Subscription): Promise<void> {
    if (sub.memberId === 0 || sub.removed) return;
    try {
      await withDeadline(this.io.port.leave(sub.topic, sub.group, sub.memberId, sub.membershipEpoch));
    } catch {
      /* the group's session timeout removes it */
    }
  }

  private settle(subId: number, p: number, ops: readonly SettleOp[]): Promise<SettleResult> {
    const sub = this.subs.get(subId);
    if (!sub) return Promise.resolve({ codes: new Uint16Array(ops.length).fill(ErrorCode.UNKNOWN_SUBSCRIPTION) });
    return this.io.port.settle(sub.topic, p, {
      group: sub.group, caller: { sessionId: this.io.sessionId, subscriptionId: sub.id },
      kinds: Uint8Array.from(ops, (o) => o.kind), sequences: Float64Array.from(ops, (o) => o.seq),
      deliveryIds: Float64Array.from(ops, (o) => o.deliveryId), ownershipEpochs: Float64Array.from(ops, (o) => o.ownershipEpoch),
    });
  }
}
