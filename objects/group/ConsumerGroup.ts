/**
 * ConsumerGroup Durable Object: one per (tenant, topic incarnation,
 * topic_id, group name) — see groupStub(). Members, epochs, partition
 * ownership and NOTICE/CONTROL_ACK state (DESIGN.md §3; spec §2 SUB,
 * HEARTBEAT, NOTICE, CONTROL_ACK; docs/protocol.md "Read path").
 *
 * Every call: event → GroupState (pure) → one transactionSync writing the
 * changed rows AND the effects it produced into the outbox → reply. The
 * outbox is drained by one loop at a time, strictly in order: "fence"
 * effects call Partition.assign (must succeed before anything behind it —
 * that is what keeps an ASSIGN behind the fence of the old owner), "notice"
 * effects call MortarSession.groupNotice on the member's session. A session
 * that no longer knows the member answers false and the member is removed.
 *
 * One alarm (schedule table): "timers" (session timeouts, revocation
 * timeouts), "outbox" (retry after a failed effect), "probe" (after a
 * restart, ask each member's session whether it still exists).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { ErrorCode } from "../../wire/mortar/errors";
import { Schedule } from "../shared/schedule";
import { rememberedName } from "../shared/object-name";
import { parseGroupName, type GroupIdentity } from "../shared/names";
import { readConfig } from "../shared/read-config";
import { partitionStub } from "../partition/stub";
import { sessionStub } from "../session/stub";
import { withDeadline } from "../session/faults";
import { GroupState, type Effect } from "./state";
import { GroupStore } from "./store";
import type { ControlAckRequest, GroupInfo, JoinRequest, JoinResult } from "./rpc";

/** A notice effect that failed this many times in a row treats the member as gone. */
const MAX_NOTICE_FAILURES = 5;

export class ConsumerGroup extends DurableObject<Env> {
  private readonly store: GroupStore;
  private readonly schedule: Schedule;
  private readonly timers;
  private state: GroupState | null;
  private draining = false;
  private failures = 0;
  private timersDue: number | null = null;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    const cfg = readConfig(env);
    this.timers = { sessionTimeoutMs: cfg.sessionTimeoutMs, revocationTimeoutMs: cfg.revocationTimeoutMs };
    this.store = new GroupStore(ctx.storage.sql);
    this.schedule = new Schedule(ctx.storage);
    this.state = this.store.load(this.timers, Date.now());
    if (this.state && (this.state.members.size > 0 || this.store.pendingEffects() > 0)) {
      // Restarted with members: check their sessions still exist, and resume the outbox.
      void ctx.blockConcurrencyWhile(async () => {
        await this.schedule.set("probe", Date.now());
      });
    }
  }

  private get id(): GroupIdentity {
    return parseGroupName(this.name);
  }

  /**
   * SUB: adds a member for `session`. The first join fixes the group's
   * partition count and start policy. Partitions arrive later as NOTICE
   * ASSIGN (after any revocations).
   */
  async join(req: JoinRequest): Promise<JoinResult> {
    let g = this.state;
    if (!g) {
      g = this.state = new GroupState(req.partitionCount, this.timers);
      this.store.setMeta("partition_count", req.partitionCount);
      this.store.setMeta("start_policy", req.startPolicy);
    }
    const { member, effects } = g.join(req.session, Date.now());
    await this.commit(effects);
    return { memberId: member.id, membershipEpoch: member.membershipEpoch, assignmentEpoch: member.assignmentEpoch };
  }

  /**
   * HEARTBEAT: refreshes the member's session timeout, or with `leave`
   * removes it (its partitions move). Returns 0 or STALE_MEMBERSHIP_EPOCH /
   * STALE_ASSIGNMENT_EPOCH (nothing changed).
   */
  async heartbeat(memberId: number, membershipEpoch: number, assignmentEpoch: number, leave: boolean): Promise<number> {
    const g = this.state;
    if (!g) return ErrorCode.STALE_MEMBERSHIP_EPOCH;
    const r = g.heartbeat(memberId, membershipEpoch, assignmentEpoch, leave, Date.now());
    if (r.code === 0 && leave) await this.commit(r.effects);
    return r.code;
  }

  /** CONTROL_ACK: 0, or UNKNOWN_NOTICE (nothing changed). */
  async controlAck(req: ControlAckRequest): Promise<number> {
    const g = this.state;
    if (!g) return ErrorCode.UNKNOWN_NOTICE;
    const r = g.controlAck(req.memberId, {
      id: req.noticeId, kind: req.kind, membershipEpoch: req.membershipEpoch,
      assignmentEpoch: req.assignmentEpoch, ownershipEpoch: req.ownershipEpoch,
    }, Date.now());
    if (r.code === 0) await this.commit(r.effects);
    return r.code;
  }

  /** The member's connection closed: removes it when `membershipEpoch` matches. Idempotent. */
  async leave(memberId: number, membershipEpoch: number): Promise<void> {
    const g = this.state;
    const m = g?.members.get(memberId);
    if (!g || !m || m.membershipEpoch !== membershipEpoch) return;
    await this.commit(g.remove(memberId, "closed", Date.now()));
  }

  /** Membership, ownership and counters. */
  info(): GroupInfo {
    const g = this.state;
    const owned = (id: number) => (g?.partitions ?? []).flatMap((p, i) => (p.owner === id ? [i] : []));
    return {
      partitionCount: g?.partitionCount ?? 0,
      startPolicy: this.store.meta("start_policy"),
      membershipEpoch: g?.meta.membershipEpoch ?? 0,
      assignmentEpoch: g?.meta.assignmentEpoch ?? 0,
      members: [...(g?.members.values() ?? [])].map((m) => ({
        memberId: m.id, sessionId: m.session.sessionId, subscriptionId: m.session.subscriptionId,
        membershipEpoch: m.membershipEpoch, assignmentEpoch: m.assignmentEpoch, partitions: owned(m.id),
      })),
      partitions: (g?.partitions ?? []).map((p, i) => ({ partition: i, owner: p.owner, ownershipEpoch: p.ownershipEpoch, revoking: p.revoke !== null })),
      pendingEffects: this.store.pendingEffects(),
      rebalances: g?.counters.rebalances ?? 0,
      forcedRevocations: g?.counters.forcedRevocations ?? 0,
      expiredMembers: g?.counters.expiredMembers ?? 0,
    };
  }

  override async alarm(): Promise<void> {
    const now = Date.now();
    for (const job of this.schedule.due(now)) {
      this.schedule.clear(job);
      if (job === "timers") {
        this.timersDue = null;
        if (this.state) this.persist(this.state.tick(now));
      } else if (job === "probe") {
        await this.probe();
      }
    }
    this.armTimers();
    await this.schedule.rearm();
    await this.drain();
  }

  // ------------------------------------------------------------ internals

  /** Persists state changes + effects in one transaction, re-arms the timers, starts the outbox loop. */
  private async commit(effects: Effect[]): Promise<void> {
    this.persist(effects);
    if (this.armTimers()) await this.schedule.rearm();
    void this.drain();
  }

  private persist(effects: readonly Effect[]): void {
    const g = this.state!;
    this.ctx.storage.transactionSync(() => this.store.save(g, effects));
  }

  /** Moves the "timers" job earlier when the state needs it sooner; true when the schedule changed. */
  private armTimers(): boolean {
    const due = this.state?.nextDeadline() ?? null;
    if (due === null || (this.timersDue !== null && this.timersDue <= due)) return false;
    this.timersDue = due;
    this.schedule.put("timers", due);
    return true;
  }

  /** Runs queued effects in order until the outbox is empty or one must be retried later. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        const next = this.store.nextEffect();
        if (!next) break;
        if (!(await this.execute(next.effect))) {
          this.failures++;
          await this.schedule.set("outbox", Date.now() + Math.min(5_000, 50 * 2 ** this.failures));
          break;
        }
        this.failures = 0;
        this.store.done(next.id);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Executes one effect; false = failed, retry later. */
  private async execute(e: Effect): Promise<boolean> {
    const g = this.state!;
    const id = this.id;
    if (e.kind === "fence") {
      try {
        const owner = e.owner ? { ...e.owner.session, memberId: e.owner.memberId } : null;
        const stub = partitionStub(this.env, id.tenant, id.incarnation, id.topicId, e.partition);
        const r = await withDeadline(stub.assign(id.group, e.epoch, owner, this.store.meta("start_policy")));
        return r.ok || r.ownershipEpoch >= e.epoch;
      } catch {
        return false;
      }
    }
    if (e.kind === "removed") {
      void sessionStub(this.env, e.session.sessionId).groupRemoved(e.session.subscriptionId, e.memberId).catch(() => {});
      return true;
    }
    const n = e.notice;
    if (!g.members.has(n.memberId)) return true; // removed meanwhile: its notices are void
    let accepted: boolean;
    try {
      accepted = await withDeadline(sessionStub(this.env, e.session.sessionId).groupNotice({
        subscriptionId: e.session.subscriptionId, memberId: n.memberId, noticeId: n.id, kind: n.kind,
        membershipEpoch: n.membershipEpoch, assignmentEpoch: n.assignmentEpoch, ownershipEpoch: n.ownershipEpoch,
        topicId: id.topicId, partition: n.partition,
      }));
    } catch {
      if (this.failures + 1 < MAX_NOTICE_FAILURES) return false;
      accepted = false;
    }
    if (accepted) {
      g.noticeDelivered(n);
      this.persist([]);
    } else {
      this.persist(g.remove(n.memberId, "gone", Date.now()));
    }
    return true;
  }

  /** Removes members whose session no longer knows them (after a restart of this object). */
  private async probe(): Promise<void> {
    const g = this.state;
    if (!g) return;
    for (const m of [...g.members.values()]) {
      let alive = true;
      try {
        alive = await withDeadline(sessionStub(this.env, m.session.sessionId).hasMember(m.session.subscriptionId, m.id));
      } catch {
        /* unknown: keep it; the session timeout decides */
      }
      if (!alive && g.members.has(m.id)) this.persist(g.remove(m.id, "gone", Date.now()));
    }
  }
}
