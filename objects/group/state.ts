/**
 * Consumer group state machine (spec §2 SUB/HEARTBEAT/NOTICE/CONTROL_ACK;
 * docs/protocol.md "Read path"), pure: no storage, no clock, no I/O. The
 * ConsumerGroup object feeds it events, persists the rows it reports as
 * changed, and executes the effects it returns, in order.
 *
 * Epochs:
 * - membership_epoch: a group-wide counter bumped on every join; a member
 *   keeps the value it joined with. A request carrying another value (or a
 *   removed member_id) is STALE_MEMBERSHIP_EPOCH.
 * - assignment_epoch: a group-wide counter bumped by every rebalance step
 *   that sends NOTICEs. Each member's own assignment_epoch is the one of the
 *   last NOTICE delivered to it (or of its join); a HEARTBEAT carrying an
 *   older value (or one the group never issued) is STALE_ASSIGNMENT_EPOCH.
 * - ownership_epoch: per partition, bumped each time the partition gets a
 *   new owner (or loses one). The Partition object is fenced with the new
 *   epoch (effect "fence") BEFORE the new owner hears of it (effect
 *   "notice" ASSIGN), so at most one owner's epoch is accepted at a time.
 *
 * Rebalancing is revoke-before-assign: a partition whose owner is live but
 * should move gets NOTICE REVOKE; only after that owner's CONTROL_ACK (or
 * the revocation timeout) is it fenced to the new owner and announced with
 * NOTICE ASSIGN. A removed member's partitions move at once (the fence
 * stops it, whatever it still believes).
 *
 * A reset (consumer-group management, docs/groups.md) takes the same path:
 * an owned partition is REVOKEd first, and the position change travels with
 * the fence that follows — a new ownership epoch — so the old owner's
 * in-flight ACKs are stale once the new position is in force. A pause is a
 * group-wide setting fanned out to every partition ("pause" effects).
 */
import { ErrorCode } from "../../wire/mortar/errors";
import { NoticeKind } from "../../wire/mortar/constants";
import { targetAssignment } from "./assignment";

/** Where a member's NOTICEs go: its session object and subscription on it. */
export interface SessionRef {
  /** MortarSession Durable Object id (hex). */
  sessionId: string;
  subscriptionId: number;
}

export interface Member {
  id: number;
  session: SessionRef;
  membershipEpoch: number;
  /** Assignment epoch of the last NOTICE delivered to this member (or of its join). */
  assignmentEpoch: number;
  /** Order of joining (sticky assignment tie-break). */
  joinSeq: number;
  /** Last valid HEARTBEAT, lease renewal (or join), ms. Not persisted: reset to the load time after a restart. */
  lastSeen: number;
  /**
   * How long the member stays without a HEARTBEAT or renewal, ms; null =
   * the group's session timeout. A MortarSession that enforces the session
   * timeout itself (it sees every HEARTBEAT frame) joins with a long lease
   * and renews it rarely: the lease is the backstop for a session object
   * that disappeared (docs/protocol.md "Group liveness").
   */
  leaseMs: number | null;
}

export interface PartitionOwnership {
  /** Current owner (also while a REVOKE is pending), null when unowned. */
  owner: number | null;
  ownershipEpoch: number;
  /** False when the partition lost its owner and the Partition was not yet told (needs a new epoch). */
  fenced: boolean;
  /** A pending REVOKE: its notice and the time it is forced. */
  revoke: { noticeId: number; deadline: number } | null;
  /** A reset waiting for the partition's next fence: the sequence its position moves to. */
  reset: number | null;
}

/** A NOTICE sent to a member, kept until its CONTROL_ACK. */
export interface Notice {
  id: number;
  memberId: number;
  kind: number; // NoticeKind
  partition: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  ownershipEpoch: number;
}

/** What the group object must do, in order. */
export type Effect =
  /**
   * Tell the Partition its owner for this group is now `owner` under `epoch` (null = none), and with
   * `reset` that the group's position there becomes that sequence. Must succeed before later effects.
   */
  | { kind: "fence"; partition: number; epoch: number; owner: { memberId: number; session: SessionRef } | null; reset?: number }
  /** Tell the Partition the group is paused until `until` (unix ms) or resumed (null). Idempotent. */
  | { kind: "pause"; partition: number; until: number | null }
  /** Deliver a NOTICE to the member's session. */
  | { kind: "notice"; notice: Notice; session: SessionRef }
  /** Tell a session its member was removed by the group (session timeout). Best effort. */
  | { kind: "removed"; memberId: number; session: SessionRef };

/** Timers of the group, ms. */
export interface GroupTimers {
  sessionTimeoutMs: number;
  revocationTimeoutMs: number;
}

/** Counters for the metrics issue. */
export interface GroupCounters {
  rebalances: number;
  forcedRevocations: number;
  expiredMembers: number;
}

/** Why a member is removed. */
export type RemoveReason = "leave" | "closed" | "expired" | "gone";

/** Rows changed since the last takeChanges() (for persistence). */
export interface GroupChanges {
  members: Member[];
  removedMembers: number[];
  partitions: number[];
  notices: Notice[];
  removedNotices: number[];
}

/** Persistent counters of the group. */
export interface GroupMeta {
  memberSeq: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  noticeSeq: number;
}

export class GroupState {
  readonly members = new Map<number, Member>();
  readonly partitions: PartitionOwnership[];
  readonly notices = new Map<number, Notice>();
  meta: GroupMeta = { memberSeq: 0, membershipEpoch: 0, assignmentEpoch: 0, noticeSeq: 0 };
  counters: GroupCounters = { rebalances: 0, forcedRevocations: 0, expiredMembers: 0 };
  /** Deliveries are paused until then (unix ms); null = not paused. */
  pausedUntil: number | null = null;
  private changedMembers = new Set<number>();
  private removedMembers = new Set<number>();
  private changedPartitions = new Set<number>();
  private changedNotices = new Set<number>();
  private removedNotices = new Set<number>();

  constructor(readonly partitionCount: number, readonly timers: GroupTimers) {
    this.partitions = Array.from({ length: partitionCount }, () => ({ owner: null, ownershipEpoch: 0, fenced: true, revoke: null, reset: null }));
  }

  // ------------------------------------------------------------ events

  /**
   * A SUB: adds a member and rebalances. Returns the member (epochs as of
   * after the rebalance). `leaseMs`: the member's lease (Member.leaseMs;
   * absent = the session timeout).
   */
  join(session: SessionRef, now: number, leaseMs: number | null = null): { member: Member; effects: Effect[] } {
    const m: Member = {
      id: ++this.meta.memberSeq,
      session,
      membershipEpoch: ++this.meta.membershipEpoch,
      assignmentEpoch: 0,
      joinSeq: this.meta.memberSeq,
      lastSeen: now,
      leaseMs,
    };
    this.members.set(m.id, m);
    const effects = this.rebalance(now);
    m.assignmentEpoch = this.meta.assignmentEpoch;
    this.changedMembers.add(m.id);
    return { member: m, effects };
  }

  /**
   * HEARTBEAT (leave = state LEAVE). Errors (no state change):
   * STALE_MEMBERSHIP_EPOCH for an unknown member or another membership
   * epoch; STALE_ASSIGNMENT_EPOCH for an assignment epoch older than the
   * member's or newer than the group's.
   */
  heartbeat(memberId: number, membershipEpoch: number, assignmentEpoch: number, leave: boolean, now: number): { code: number; effects: Effect[] } {
    const m = this.members.get(memberId);
    if (!m || m.membershipEpoch !== membershipEpoch) return { code: ErrorCode.STALE_MEMBERSHIP_EPOCH, effects: [] };
    if (assignmentEpoch < m.assignmentEpoch || assignmentEpoch > this.meta.assignmentEpoch) {
      return { code: ErrorCode.STALE_ASSIGNMENT_EPOCH, effects: [] };
    }
    if (leave) return { code: 0, effects: this.remove(memberId, "leave", now) };
    m.lastSeen = now;
    return { code: 0, effects: [] };
  }

  /**
   * The member's session renews its lease (it enforces the session timeout
   * itself): 0, or STALE_MEMBERSHIP_EPOCH for an unknown member or another
   * membership epoch (no state change).
   */
  renew(memberId: number, membershipEpoch: number, now: number): number {
    const m = this.members.get(memberId);
    if (!m || m.membershipEpoch !== membershipEpoch) return ErrorCode.STALE_MEMBERSHIP_EPOCH;
    m.lastSeen = now;
    return 0;
  }

  /**
   * CONTROL_ACK of notice `noticeId` by `memberId`: the notice must exist,
   * belong to that member and match kind and epochs, else UNKNOWN_NOTICE
   * (no state change). Confirming a REVOKE completes the revocation and
   * assigns the partition onwards. `result` (OK/STALE/ERROR) does not
   * change that: a member that answers at all has stopped using it.
   */
  controlAck(memberId: number, n: Omit<Notice, "memberId" | "partition">, now: number): { code: number; effects: Effect[] } {
    const notice = this.notices.get(n.id);
    if (!notice || notice.memberId !== memberId || notice.kind !== n.kind || notice.membershipEpoch !== n.membershipEpoch
      || notice.assignmentEpoch !== n.assignmentEpoch || notice.ownershipEpoch !== n.ownershipEpoch) {
      return { code: ErrorCode.UNKNOWN_NOTICE, effects: [] };
    }
    this.dropNotice(notice.id);
    const part = this.partitions[notice.partition]!;
    if (notice.kind === NoticeKind.REVOKE && part.revoke?.noticeId === notice.id) {
      this.releasePartition(notice.partition);
      return { code: 0, effects: this.rebalance(now) };
    }
    return { code: 0, effects: [] };
  }

  /** The member's connection closed, it left, or its session no longer knows it. Idempotent. */
  remove(memberId: number, reason: RemoveReason, now: number): Effect[] {
    const m = this.members.get(memberId);
    if (!m) return [];
    this.members.delete(memberId);
    this.changedMembers.delete(memberId);
    this.removedMembers.add(memberId);
    for (const n of [...this.notices.values()]) if (n.memberId === memberId) this.dropNotice(n.id);
    this.partitions.forEach((part, p) => {
      if (part.owner === memberId) this.releasePartition(p);
    });
    const effects: Effect[] = reason === "expired" ? [{ kind: "removed", memberId, session: m.session }] : [];
    if (reason === "expired") this.counters.expiredMembers++;
    return effects.concat(this.rebalance(now));
  }

  /** Timers: removes members past the session timeout, forces REVOKEs past the revocation timeout. */
  tick(now: number): Effect[] {
    const effects: Effect[] = [];
    for (const m of [...this.members.values()]) {
      if (now - m.lastSeen >= this.timeoutOf(m)) for (const e of this.remove(m.id, "expired", now)) effects.push(e);
    }
    let forced = false;
    this.partitions.forEach((part, p) => {
      if (part.revoke && part.revoke.deadline <= now) {
        this.dropNotice(part.revoke.noticeId);
        this.releasePartition(p);
        this.counters.forcedRevocations++;
        forced = true;
      }
    });
    if (forced) for (const e of this.rebalance(now)) effects.push(e);
    return effects;
  }

  /**
   * Reset: each partition of `positions` (partition → next sequence) moves
   * there with its next fence. An owned partition is REVOKEd first (one
   * assignment epoch for all of them; a REVOKE already pending is reused);
   * an unowned one is fenced now, to its target owner or to nobody. Either
   * way the fence carries a new ownership epoch, so no ACK made under the
   * old one can settle anything at the new position. A second reset of a
   * partition before the first was applied replaces it.
   */
  reset(positions: ReadonlyMap<number, number>, now: number): Effect[] {
    const effects: Effect[] = [];
    let bumped = false;
    for (const [p, seq] of positions) {
      const part = this.partitions[p];
      if (!part) continue;
      part.reset = seq;
      this.changedPartitions.add(p);
      if (part.owner === null) {
        part.fenced = false; // rebalance fences it (with the reset) to its target or to nobody
        continue;
      }
      if (part.revoke) continue; // applied when the pending REVOKE completes
      if (!bumped) {
        bumped = true;
        this.meta.assignmentEpoch++;
      }
      const e = this.notice(this.members.get(part.owner)!, NoticeKind.REVOKE, p, part.ownershipEpoch);
      part.revoke = { noticeId: e.notice.id, deadline: now + this.timers.revocationTimeoutMs };
      effects.push(e);
    }
    return effects.concat(this.rebalance(now));
  }

  /**
   * Pauses deliveries until `until` (unix ms) or resumes them (null): one
   * "pause" effect per partition. Membership, heartbeats and assignment are
   * untouched (JetStream's consumer pause).
   */
  pause(until: number | null): Effect[] {
    this.pausedUntil = until;
    return this.partitions.map((_, partition) => ({ kind: "pause", partition, until }));
  }

  /** A NOTICE reached the member's session: the member's assignment epoch catches up. */
  noticeDelivered(n: Notice): void {
    const m = this.members.get(n.memberId);
    if (m && n.assignmentEpoch > m.assignmentEpoch) {
      m.assignmentEpoch = n.assignmentEpoch;
      this.changedMembers.add(m.id);
    }
  }

  /** Earliest time tick() has work: a member's session timeout or a revocation deadline (ms), or null. */
  nextDeadline(): number | null {
    let t: number | null = null;
    for (const m of this.members.values()) t = min(t, m.lastSeen + this.timeoutOf(m));
    for (const part of this.partitions) if (part.revoke) t = min(t, part.revoke.deadline);
    return t;
  }

  /** Rows changed since the last call (and forgets them). */
  takeChanges(): GroupChanges {
    const out: GroupChanges = {
      members: [...this.changedMembers].map((id) => this.members.get(id)!).filter(Boolean),
      removedMembers: [...this.removedMembers],
      partitions: [...this.changedPartitions],
      notices: [...this.changedNotices].map((id) => this.notices.get(id)!).filter(Boolean),
      removedNotices: [...this.removedNotices],
    };
    this.changedMembers.clear();
    this.removedMembers.clear();
    this.changedPartitions.clear();
    this.changedNotices.clear();
    this.removedNotices.clear();
    return out;
  }

  // ------------------------------------------------------------ internals

  /** How long member `m` lives without a HEARTBEAT or renewal, ms: its lease, else the session timeout. */
  private timeoutOf(m: Member): number {
    return m.leaseMs ?? this.timers.sessionTimeoutMs;
  }

  /**
   * Moves every partition towards the target assignment, one safe step:
   * unowned → fence + ASSIGN; owned by a live member that should not own it
   * → REVOKE (unless one is pending); lost its owner with nobody to take it
   * → fence to "no owner". Bumps the assignment epoch once when it sends
   * NOTICEs.
   */
  private rebalance(now: number): Effect[] {
    const live = [...this.members.values()].sort((a, b) => a.joinSeq - b.joinSeq).map((m) => m.id);
    const target = targetAssignment(this.partitionCount, live, this.partitions.map((p) => p.owner));
    const effects: Effect[] = [];
    let bumped = false;
    const bump = () => {
      if (!bumped) {
        bumped = true;
        this.meta.assignmentEpoch++;
        this.counters.rebalances++;
      }
    };
    this.partitions.forEach((part, p) => {
      if (part.revoke) return;
      const t = target[p] ?? null;
      if (part.owner === t) {
        if (t === null && !part.fenced) {
          part.ownershipEpoch++;
          part.fenced = true;
          this.changedPartitions.add(p);
          effects.push(this.fence(p, null));
        }
        return;
      }
      bump();
      this.changedPartitions.add(p);
      if (part.owner === null) {
        const m = this.members.get(t!)!;
        part.ownershipEpoch++;
        part.owner = m.id;
        part.fenced = true;
        effects.push(this.fence(p, { memberId: m.id, session: m.session }));
        effects.push(this.notice(m, NoticeKind.ASSIGN, p, part.ownershipEpoch));
      } else {
        const m = this.members.get(part.owner)!;
        const e = this.notice(m, NoticeKind.REVOKE, p, part.ownershipEpoch);
        part.revoke = { noticeId: e.notice.id, deadline: now + this.timers.revocationTimeoutMs };
        effects.push(e);
      }
    });
    return effects;
  }

  /** The fence of partition `p` under its (new) epoch, carrying and clearing a pending reset. */
  private fence(p: number, owner: { memberId: number; session: SessionRef } | null): Effect {
    const part = this.partitions[p]!;
    const e: Effect = { kind: "fence", partition: p, epoch: part.ownershipEpoch, owner };
    if (part.reset !== null) {
      e.reset = part.reset;
      part.reset = null;
    }
    return e;
  }

  private notice(m: Member, kind: number, partition: number, ownershipEpoch: number): Effect & { kind: "notice" } {
    // An unconfirmed older ASSIGN for the same member and partition is superseded (bounds the table).
    for (const old of this.notices.values()) {
      if (old.memberId === m.id && old.partition === partition && old.kind === NoticeKind.ASSIGN) this.dropNotice(old.id);
    }
    const n: Notice = {
      id: ++this.meta.noticeSeq, memberId: m.id, kind, partition,
      membershipEpoch: m.membershipEpoch, assignmentEpoch: this.meta.assignmentEpoch, ownershipEpoch,
    };
    this.notices.set(n.id, n);
    this.changedNotices.add(n.id);
    return { kind: "notice", notice: n, session: m.session };
  }

  /** The partition has no owner any more; it needs a new epoch before anyone uses it. */
  private releasePartition(p: number): void {
    const part = this.partitions[p]!;
    part.owner = null;
    part.fenced = false;
    part.revoke = null;
    this.changedPartitions.add(p);
  }

  private dropNotice(id: number): void {
    if (!this.notices.delete(id)) return;
    this.changedNotices.delete(id);
    this.removedNotices.add(id);
  }
}

function min(a: number | null, b: number): number {
  return a === null || b < a ? b : a;
}
