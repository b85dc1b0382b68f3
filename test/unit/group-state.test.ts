import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ErrorCode, NoticeKind } from "../../wire/mortar";
import { targetAssignment } from "../../objects/group/assignment";
import { GroupState, type Effect, type Notice } from "../../objects/group/state";

const TIMERS = { sessionTimeoutMs: 45_000, revocationTimeoutMs: 10_000 };
const ref = (n: number) => ({ sessionId: `s${n}`, subscriptionId: n });

describe("targetAssignment", () => {
  it("balances and keeps current owners where it can", () => {
    expect(targetAssignment(4, [1, 2], [null, null, null, null])).toEqual([1, 1, 2, 2]);
    // a third member takes one partition from the member owning the most; others stay
    const t = targetAssignment(4, [1, 2, 3], [1, 1, 2, 2]);
    expect(t.filter((x) => x === 3)).toHaveLength(1);
    expect(t.filter((x, i) => x !== 3 && x !== [1, 1, 2, 2][i])).toEqual([]);
    expect(targetAssignment(3, [], [1, null, 2])).toEqual([null, null, null]);
    expect(targetAssignment(2, [5, 6, 7], [null, null])).toEqual([5, 6]);
  });

  it("is balanced, total and sticky for any input", () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 40 }), fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 12 }), fc.array(fc.option(fc.integer({ min: 1, max: 30 })), { maxLength: 40 }),
      (p, members, cur) => {
        const current = Array.from({ length: p }, (_, i) => cur[i] ?? null);
        const t = targetAssignment(p, members, current);
        expect(t).toHaveLength(p);
        if (members.length === 0) {
          expect(t.every((x) => x === null)).toBe(true);
          return;
        }
        const counts = members.map((m) => t.filter((x) => x === m).length);
        expect(t.every((x) => x !== null && members.includes(x))).toBe(true);
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        // sticky: a live owner that ends up with fewer than its old count lost only to reach its quota
        for (const m of members) {
          const had = current.filter((x) => x === m).length;
          const keeps = t.filter((x, i) => x === m && current[i] === m).length;
          expect(keeps).toBe(Math.min(had, t.filter((x) => x === m).length));
        }
      }));
  });
});

/**
 * A simulated world around the state machine: an executor that runs effects
 * one at a time in order (like the ConsumerGroup object), Partition fences,
 * and member sessions that remember what they were told. Removed members'
 * sessions stay alive ("zombies") and keep believing, the worst case.
 */
class World {
  g = new GroupState(4, TIMERS);
  now = 0;
  queue: Effect[] = [];
  fence = Array.from({ length: 4 }, () => ({ epoch: 0, owner: null as number | null }));
  /** member → partition → ownership epoch it believes it holds, and whether a REVOKE arrived. */
  belief = new Map<number, Map<number, { epoch: number; revoking: boolean }>>();
  inbox = new Map<number, Notice[]>();
  ids: number[] = [];
  /** Resets asked for per partition, not yet applied, with the partition's fenced epoch at that moment; the last applied one. */
  requested = new Map<number, { position: number; epoch: number }[]>();
  last = new Map<number, number>();
  applied = new Map<number, number>();
  /** Pause state each partition was told last. */
  paused = new Map<number, number | null>();

  reset(partitions: number[], position: number) {
    for (const p of partitions) {
      this.requested.set(p, [...(this.requested.get(p) ?? []), { position, epoch: this.fence[p]!.epoch }]);
      this.last.set(p, position);
    }
    this.push(this.g.reset(new Map(partitions.map((p) => [p, position])), this.now));
  }

  push(effects: Effect[]) {
    this.queue.push(...effects);
  }

  join() {
    const { member, effects } = this.g.join(ref(this.ids.length + 1), this.now);
    this.ids.push(member.id);
    this.belief.set(member.id, new Map());
    this.push(effects);
  }

  /** Runs the next effect; checks fences are monotonic and ASSIGN comes after its fence and after any revocation. */
  step() {
    const e = this.queue.shift();
    if (!e) return;
    if (e.kind === "fence") {
      expect(e.epoch).toBeGreaterThanOrEqual(this.fence[e.partition]!.epoch);
      if (e.reset !== undefined) {
        // the new position comes with an epoch nobody held when the reset was asked for: every older ACK is stale
        // (a later reset replaces one still waiting for its REVOKE; a fence already queued keeps the earlier one)
        const waiting = this.requested.get(e.partition) ?? [];
        const i = waiting.findIndex((r) => r.position === e.reset);
        expect(i).toBeGreaterThanOrEqual(0);
        expect(e.epoch).toBeGreaterThan(waiting[i]!.epoch);
        this.requested.set(e.partition, waiting.slice(i + 1));
        this.applied.set(e.partition, e.reset);
      }
      this.fence[e.partition] = { epoch: e.epoch, owner: e.owner?.memberId ?? null };
    } else if (e.kind === "pause") {
      this.paused.set(e.partition, e.until);
    } else if (e.kind === "notice") {
      const n = e.notice;
      const b = this.belief.get(n.memberId)!;
      if (n.kind === NoticeKind.ASSIGN) {
        expect(this.fence[n.partition]).toEqual({ epoch: n.ownershipEpoch, owner: n.memberId });
        // revoke-before-assign: no live member still holds it without having been asked to give it up
        for (const [m, bm] of this.belief) {
          const x = bm.get(n.partition);
          if (m !== n.memberId && this.g.members.has(m) && x && !x.revoking) throw new Error(`ASSIGN p${n.partition} to ${n.memberId} while ${m} holds it unrevoked`);
        }
        b.set(n.partition, { epoch: n.ownershipEpoch, revoking: false });
      } else {
        const x = b.get(n.partition);
        if (x) x.revoking = true;
      }
      this.g.noticeDelivered(n);
      if (!this.inbox.has(n.memberId)) this.inbox.set(n.memberId, []);
      this.inbox.get(n.memberId)!.push(n);
    }
  }

  /** The member confirms its oldest delivered notice. */
  ack(member: number) {
    const n = this.inbox.get(member)?.shift();
    if (!n) return;
    const r = this.g.controlAck(member, n, this.now);
    if (r.code === 0 && n.kind === NoticeKind.REVOKE) this.belief.get(member)!.delete(n.partition);
    this.push(r.effects);
  }

  /** Members accepting acks for p: their believed epoch is the partition's fenced epoch. */
  accepting(p: number): number[] {
    return [...this.belief].filter(([, b]) => b.get(p)?.epoch === this.fence[p]!.epoch && this.fence[p]!.epoch > 0).map(([m]) => m);
  }

  check() {
    for (let p = 0; p < 4; p++) expect(this.accepting(p).length).toBeLessThanOrEqual(1);
  }

  /** Runs everything to rest: effects, CONTROL_ACKs by live members, revocation timeouts. */
  settle() {
    for (let round = 0; round < 100; round++) {
      while (this.queue.length) {
        this.step();
        this.check();
      }
      for (const m of this.g.members.keys()) while (this.inbox.get(m)?.length) this.ack(m);
      if (!this.queue.length) {
        this.now += TIMERS.revocationTimeoutMs;
        for (const m of this.g.members.values()) m.lastSeen = this.now; // live members keep heartbeating
        this.push(this.g.tick(this.now));
        if (!this.queue.length) return;
      }
    }
    throw new Error("did not settle");
  }
}

const action = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ t: "join" as const }) },
  { weight: 2, arbitrary: fc.nat({ max: 9 }).map((i) => ({ t: "leave" as const, i })) },
  { weight: 2, arbitrary: fc.nat({ max: 9 }).map((i) => ({ t: "expire" as const, i })) },
  { weight: 8, arbitrary: fc.constant({ t: "step" as const }) },
  { weight: 5, arbitrary: fc.nat({ max: 9 }).map((i) => ({ t: "ack" as const, i })) },
  { weight: 1, arbitrary: fc.constant({ t: "timeout" as const }) },
  { weight: 2, arbitrary: fc.record({ parts: fc.subarray([0, 1, 2, 3], { minLength: 1 }), position: fc.integer({ min: 1, max: 1000 }) }).map((r) => ({ t: "reset" as const, ...r })) },
  { weight: 1, arbitrary: fc.option(fc.integer({ min: 1, max: 1e6 })).map((until) => ({ t: "pause" as const, until })) },
);

describe("GroupState", () => {
  it("never lets two members accept acks for one partition; at rest every partition has a live, balanced owner", () => {
    fc.assert(fc.property(fc.array(action, { maxLength: 80 }), (actions) => {
      const w = new World();
      for (const a of actions) {
        const pick = (i: number) => w.ids[i % Math.max(1, w.ids.length)];
        if (a.t === "join") w.join();
        else if (a.t === "leave" && w.ids.length) {
          const m = w.g.members.get(pick(a.i)!);
          if (m) w.push(w.g.heartbeat(m.id, m.membershipEpoch, w.g.meta.assignmentEpoch, true, w.now).effects);
        } else if (a.t === "expire" && w.ids.length) w.push(w.g.remove(pick(a.i)!, "expired", w.now));
        else if (a.t === "step") w.step();
        else if (a.t === "ack" && w.ids.length) w.ack(pick(a.i)!);
        else if (a.t === "timeout") {
          w.now += TIMERS.revocationTimeoutMs;
          for (const m of w.g.members.values()) m.lastSeen = w.now;
          w.push(w.g.tick(w.now));
        } else if (a.t === "reset") w.reset(a.parts, a.position);
        else if (a.t === "pause") w.push(w.g.pause(a.until));
        w.check();
      }
      w.settle();
      // every reset asked for is in force (the latest one per partition), none is left pending
      for (const [p, position] of w.last) expect([p, w.applied.get(p)]).toEqual([p, position]);
      expect(w.g.partitions.every((p) => p.reset === null)).toBe(true);
      for (let p = 0; p < 4; p++) expect(w.paused.get(p) ?? null).toBe(w.g.pausedUntil);
      const live = [...w.g.members.keys()];
      const owners = w.g.partitions.map((p) => p.owner);
      if (live.length === 0) {
        expect(owners.every((o) => o === null)).toBe(true);
        return;
      }
      for (let p = 0; p < 4; p++) {
        expect(live).toContain(owners[p]);
        expect(w.fence[p]).toEqual({ epoch: w.g.partitions[p]!.ownershipEpoch, owner: owners[p] });
        expect(w.accepting(p)).toEqual([owners[p]]);
      }
      const counts = live.map((m) => owners.filter((o) => o === m).length);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }), { numRuns: 300 });
  });

  it("two members get two partitions each; a third joins → REVOKE first, ASSIGN only after CONTROL_ACK", () => {
    const w = new World();
    w.join();
    w.join();
    w.settle();
    expect(w.g.partitions.map((p) => p.owner)).toEqual([1, 1, 2, 2]);
    const epochBefore = w.g.meta.assignmentEpoch;
    w.join();
    const revoke = w.queue.filter((e) => e.kind === "notice");
    expect(revoke).toHaveLength(1);
    // member 2 owns the most recently moved partitions (3 was assigned to it at epoch 2); it gives one up
    expect(revoke[0]).toMatchObject({ notice: { kind: NoticeKind.REVOKE, memberId: 2, partition: 3, ownershipEpoch: 2, assignmentEpoch: epochBefore + 1 } });
    while (w.queue.length) w.step();
    expect(w.queue).toEqual([]); // nothing for member 3 until member 2 confirms
    expect(w.accepting(3)).toEqual([2]);
    w.ack(2);
    expect(w.queue.map((e) => e.kind)).toEqual(["fence", "notice"]);
    expect(w.queue[1]).toMatchObject({ notice: { kind: NoticeKind.ASSIGN, memberId: 3, partition: 3, ownershipEpoch: 3 } });
    w.step();
    expect(w.accepting(3)).toEqual([]); // fenced: the old owner's epoch no longer counts, the new one has not heard yet
    w.step();
    expect(w.accepting(3)).toEqual([3]);
  });

  it("forces a revocation after the timeout", () => {
    const w = new World();
    w.join();
    w.settle();
    w.join();
    while (w.queue.length) w.step();
    const due = w.now + TIMERS.revocationTimeoutMs;
    expect(w.g.nextDeadline()).toBe(due);
    for (const m of w.g.members.values()) m.lastSeen = due;
    expect(w.g.tick(due - 1)).toEqual([]);
    const effects = w.g.tick(due);
    expect(effects.map((e) => e.kind)).toEqual(["fence", "notice", "fence", "notice"]);
    expect(w.g.counters.forcedRevocations).toBe(2);
  });

  it("fences stale heartbeats and control acks without changing state", () => {
    const g = new GroupState(2, TIMERS);
    const { member } = g.join(ref(1), 0);
    expect(g.heartbeat(member.id, member.membershipEpoch + 1, member.assignmentEpoch, false, 5).code).toBe(ErrorCode.STALE_MEMBERSHIP_EPOCH);
    expect(g.heartbeat(99, member.membershipEpoch, member.assignmentEpoch, true, 5).code).toBe(ErrorCode.STALE_MEMBERSHIP_EPOCH);
    expect(g.heartbeat(member.id, member.membershipEpoch, member.assignmentEpoch + 1, false, 5).code).toBe(ErrorCode.STALE_ASSIGNMENT_EPOCH);
    expect(g.members.get(member.id)!.lastSeen).toBe(0);
    const notice = [...g.notices.values()][0]!;
    expect(g.controlAck(member.id, { ...notice, kind: NoticeKind.REVOKE }, 5).code).toBe(ErrorCode.UNKNOWN_NOTICE);
    expect(g.controlAck(member.id, { ...notice, ownershipEpoch: 7 }, 5).code).toBe(ErrorCode.UNKNOWN_NOTICE);
    expect(g.controlAck(member.id, { ...notice, id: 1234 }, 5).code).toBe(ErrorCode.UNKNOWN_NOTICE);
    expect(g.notices.size).toBe(2);
    expect(g.controlAck(member.id, notice, 5).code).toBe(0);
    expect(g.controlAck(member.id, notice, 5).code).toBe(ErrorCode.UNKNOWN_NOTICE); // already confirmed
    expect(g.heartbeat(member.id, member.membershipEpoch, member.assignmentEpoch, false, 7).code).toBe(0);
    expect(g.members.get(member.id)!.lastSeen).toBe(7);
  });

  it("expires silent members and moves their partitions", () => {
    const g = new GroupState(2, TIMERS);
    const a = g.join(ref(1), 0).member;
    const b = g.join(ref(2), 0).member;
    g.heartbeat(b.id, b.membershipEpoch, b.assignmentEpoch, false, 40_000);
    const effects = g.tick(45_000);
    expect(effects[0]).toEqual({ kind: "removed", memberId: a.id, session: ref(1) });
    expect(g.members.has(a.id)).toBe(false);
    expect(effects.filter((e) => e.kind === "fence").every((e) => e.kind === "fence" && e.owner?.memberId === b.id)).toBe(true);
    expect(g.counters.expiredMembers).toBe(1);
  });
});

describe("GroupState reset and pause", () => {
  it("an owned partition is REVOKEd first; the fence after the CONTROL_ACK carries the position and a new epoch, then ASSIGN", () => {
    const w = new World();
    w.join();
    w.settle();
    const before = w.g.meta.assignmentEpoch;
    w.reset([1, 2], 7);
    expect(w.queue.map((e) => e.kind)).toEqual(["notice", "notice"]);
    expect(w.queue.map((e) => e.kind === "notice" && [e.notice.kind, e.notice.partition, e.notice.assignmentEpoch])).toEqual([
      [NoticeKind.REVOKE, 1, before + 1], [NoticeKind.REVOKE, 2, before + 1],
    ]);
    expect(w.g.partitions.map((p) => p.reset)).toEqual([null, 7, 7, null]);
    while (w.queue.length) w.step();
    expect(w.accepting(1)).toEqual([1]); // the old position's deliveries may still be settled until the fence
    w.ack(1);
    expect(w.queue).toMatchObject([{ kind: "fence", partition: 1, epoch: 2, reset: 7 }, { kind: "notice", notice: { kind: NoticeKind.ASSIGN, partition: 1, ownershipEpoch: 2 } }]);
    w.step();
    expect(w.accepting(1)).toEqual([]); // fenced: an ACK under epoch 1 is stale now
    w.settle();
    expect(w.applied).toEqual(new Map([[1, 7], [2, 7]]));
    expect(w.g.partitions.map((p) => [p.owner, p.ownershipEpoch, p.reset])).toEqual([[1, 1, null], [1, 2, null], [1, 2, null], [1, 1, null]]);
  });

  it("an unowned partition is fenced at once; a second reset before the first applied replaces it; an unconfirmed REVOKE is forced", () => {
    const g = new GroupState(2, TIMERS);
    expect(g.reset(new Map([[0, 5]]), 0)).toEqual([{ kind: "fence", partition: 0, epoch: 1, owner: null, reset: 5 }]);
    g.join(ref(1), 0);
    g.reset(new Map([[0, 9]]), 100);
    expect(g.reset(new Map([[0, 11]]), 200)).toEqual([]); // the REVOKE of the first reset is still pending
    expect(g.partitions[0]!.reset).toBe(11);
    for (const m of g.members.values()) m.lastSeen = 100 + TIMERS.revocationTimeoutMs;
    const forced = g.tick(100 + TIMERS.revocationTimeoutMs);
    expect(forced.filter((e) => e.kind === "fence")).toEqual([{ kind: "fence", partition: 0, epoch: 3, owner: { memberId: 1, session: ref(1) }, reset: 11 }]);
    expect(g.counters.forcedRevocations).toBe(1);
  });

  it("pause and resume reach every partition and change no membership or assignment", () => {
    const g = new GroupState(3, TIMERS);
    g.join(ref(1), 0);
    const epochs = [g.meta.assignmentEpoch, g.meta.membershipEpoch];
    expect(g.pause(5_000)).toEqual([0, 1, 2].map((partition) => ({ kind: "pause", partition, until: 5_000 })));
    expect(g.pausedUntil).toBe(5_000);
    expect(g.pause(null).every((e) => e.kind === "pause" && e.until === null)).toBe(true);
    expect([g.meta.assignmentEpoch, g.meta.membershipEpoch, g.members.size]).toEqual([...epochs, 1]);
  });
});
