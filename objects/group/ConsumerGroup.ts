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
 * restart with effects pending: resume the outbox), "delete" (finish a
 * group delete that failed half way). After a restart (a crash, or an
 * eviction while idle: HEARTBEATs reach the group only about once per half
 * session timeout, MortarSession answers the rest), members are probed
 * (MortarSession.hasMember) only when another member calls and only those
 * that did not call themselves since (`unverified`), so an idle group
 * rebuilt by its one member's HEARTBEAT costs nothing more.
 *
 * Management (docs/groups.md): describe, reset, pause/resume and delete
 * (refused while the group has members, unless forced: members are then
 * removed as by a session timeout). A delete is stored first (meta
 * `deleting`), then every partition drops the group's position, the
 * registry forgets it, and the object deletes its storage; a join that
 * arrives meanwhile waits for it and starts a fresh group. The group
 * registers with its tenant's TopicRegistry before its first join, so it
 * can be listed and found by a tenant purge.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { ErrorCode } from "../../wire/mortar/errors";
import { AlarmScheduler } from "../shared/scheduler";
import { rememberName, rememberedName } from "../shared/object-name";
import { parseGroupName, type GroupIdentity } from "../shared/names";
import { readConfig } from "../shared/read-config";
import { mapLimit, range } from "../shared/concurrency";
import { partitionStub } from "../partition/stub";
import { registryStub } from "../registry/stub";
import type { RegisterGroupResult } from "../registry/rpc";
import { sessionStub } from "../session/stub";
import { withDeadline } from "../session/faults";
import type { AdminResult } from "../tenants/rpc";
import type { ResetTarget } from "../../wire/admin/groups";
import { GroupState, type Effect } from "./state";
import { GroupStore } from "./store";
import { describeGroup } from "./describe";
import type { ControlAckRequest, GroupDescription, GroupInfo, JoinRefused, JoinRequest, JoinResult, ResetPlanEntry } from "./rpc";

/** A notice effect that failed this many times in a row treats the member as gone. */
const MAX_NOTICE_FAILURES = 5;
/** Partition calls in flight at once for describe, reset and delete. */
const FANOUT = 16;
/** Retry delay of a group delete that failed half way, ms. */
const DELETE_RETRY_MS = 1_000;
/** Counters a deleted group hands to the next group of its name (group_meta keys). */
const COUNTERS = ["member_seq", "membership_epoch", "assignment_epoch", "notice_seq"] as const;

export class ConsumerGroup extends DurableObject<Env> {
  private store: GroupStore;
  private readonly schedule: AlarmScheduler;
  private readonly timers;
  private state: GroupState | null;
  /** The outbox loop while it runs. */
  private draining: Promise<void> | null = null;
  /** A group delete in progress (it also runs from the alarm after a failure). */
  private deletion: Promise<void> | null = null;
  /** Storage deleted by a tenant purge: every call answers as for an empty group and writes nothing. */
  private purged = false;
  private failures = 0;
  private timersDue: number | null = null;
  /** The object's name, also when the runtime started it for its alarm (shared/object-name.ts). */
  private readonly name: string | null;
  /**
   * Members loaded at construction whose session has not shown them alive
   * since (their own HEARTBEAT, CONTROL_ACK or leave). Probed with
   * MortarSession.hasMember once another member calls, so that a session
   * lost in a crash does not hold partitions for a whole session timeout —
   * while a group merely evicted when idle costs no probe: its one
   * member's next call verifies it.
   */
  private unverified = new Set<number>();
  private probing: Promise<void> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.name = rememberedName(ctx);
    const cfg = readConfig(env);
    this.timers = { sessionTimeoutMs: cfg.sessionTimeoutMs, revocationTimeoutMs: cfg.revocationTimeoutMs };
    this.store = new GroupStore(ctx.storage.sql);
    this.schedule = new AlarmScheduler(ctx.storage, { owner: "ConsumerGroup", jobs: true })
      .job("delete", async () => {
        this.schedule.clear("delete");
        await this.completeDelete().catch(() => {}); // re-scheduled inside
      })
      .job("timers", (now) => {
        this.schedule.clear("timers");
        this.timersDue = null;
        if (this.state) this.persist(this.state.tick(now));
      })
      .job("probe", async () => {
        this.schedule.clear("probe");
        await this.probe();
      })
      .job("outbox", () => this.schedule.clear("outbox")); // the drain after the run retries it
    this.state = this.store.load(this.timers, Date.now());
    if (this.store.meta("deleting") === 1) {
      this.state = null; // a delete was under way: finish it
      void ctx.blockConcurrencyWhile(() => this.schedule.set("delete", Date.now()));
    } else if (this.state) {
      // Restarted with members (after a crash, or just evicted while idle): a member's own call shows it alive;
      // the others are probed when another member calls (probeUnverified), not on every rebuild.
      this.unverified = new Set(this.state.members.keys());
      if (this.store.pendingEffects() > 0) {
        // resume the outbox (and probe)
        void ctx.blockConcurrencyWhile(async () => {
          await this.schedule.set("probe", Date.now());
        });
      }
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
  async join(req: JoinRequest): Promise<JoinResult | JoinRefused> {
    if (this.purged) throw new Error("this consumer group's tenant was purged");
    for (;;) {
      if (this.store.meta("deleting") === 1) {
        await this.completeDelete(); // the join starts a fresh group
        continue;
      }
      if (this.store.meta("registered") === 1) break;
      // Before the group first stores anything (like a Partition): listed, and found by a tenant purge.
      const id = this.id;
      const registered = await withDeadline(registryStub(this.env, id.tenant).registerGroup(id.incarnation, id.topicId, id.group) as Promise<RegisterGroupResult>);
      if (typeof registered === "object") return { code: ErrorCode.QUOTA_EXCEEDED, message: registered.refused }; // nothing stored
      if (this.store.meta("deleting") === 1) continue; // deleted while registering
      rememberName(this.ctx, this.name);
      this.store.setMeta("registered", 1);
    }
    let g = this.state; // no await from here to the commit: a delete cannot slip in between
    if (!g) {
      g = this.state = new GroupState(req.partitionCount, this.timers);
      // a group re-created after a delete continues its predecessor's counters (completeDelete)
      g.meta = {
        memberSeq: this.store.meta("member_seq"), membershipEpoch: this.store.meta("membership_epoch"),
        assignmentEpoch: this.store.meta("assignment_epoch"), noticeSeq: this.store.meta("notice_seq"),
      };
      this.store.setMeta("partition_count", req.partitionCount);
      this.store.setMeta("start_policy", req.startPolicy);
    }
    const { member, effects } = g.join(req.session, Date.now(), req.leaseMs ?? null);
    await this.commit(effects);
    this.probeUnverified();
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
    if (r.code === 0) this.unverified.delete(memberId);
    if (r.code === 0 && leave) await this.commit(r.effects);
    this.probeUnverified();
    return r.code;
  }

  /**
   * The member's session renews its lease (JoinRequest.leaseMs): 0, or
   * STALE_MEMBERSHIP_EPOCH (the member is gone). Writes nothing.
   */
  async renew(memberId: number, membershipEpoch: number): Promise<number> {
    const g = this.state;
    if (!g) return ErrorCode.STALE_MEMBERSHIP_EPOCH;
    const code = g.renew(memberId, membershipEpoch, Date.now());
    if (code === 0) this.unverified.delete(memberId);
    this.probeUnverified();
    return code;
  }

  /**
   * The member's session saw no HEARTBEAT for the session timeout: the
   * member is removed as by the group's own timeout (counted in
   * expiredMembers; its partitions move). No-op when `membershipEpoch` is
   * not the member's. Idempotent.
   */
  async expire(memberId: number, membershipEpoch: number): Promise<void> {
    const g = this.state;
    const m = g?.members.get(memberId);
    if (!g || !m || m.membershipEpoch !== membershipEpoch) return;
    await this.commit(g.remove(memberId, "expired", Date.now()));
  }

  /** CONTROL_ACK: 0, or UNKNOWN_NOTICE (nothing changed). */
  async controlAck(req: ControlAckRequest): Promise<number> {
    const g = this.state;
    if (!g) return ErrorCode.UNKNOWN_NOTICE;
    const r = g.controlAck(req.memberId, {
      id: req.noticeId, kind: req.kind, membershipEpoch: req.membershipEpoch,
      assignmentEpoch: req.assignmentEpoch, ownershipEpoch: req.ownershipEpoch,
    }, Date.now());
    if (r.code === 0) this.unverified.delete(req.memberId);
    if (r.code === 0) await this.commit(r.effects);
    this.probeUnverified();
    return r.code;
  }

  /** The member's connection closed: removes it when `membershipEpoch` matches. Idempotent. */
  async leave(memberId: number, membershipEpoch: number): Promise<void> {
    const g = this.state;
    const m = g?.members.get(memberId);
    if (!g || !m || m.membershipEpoch !== membershipEpoch) return;
    await this.commit(g.remove(memberId, "closed", Date.now()));
  }

  /**
   * The group as `GET /v0/topics/:topic/groups/:group` shows it
   * (describe.ts): members, and per partition ownership, position, lag, in
   * flight, dead letters and a pending reset; paused-until. 404 when the
   * group does not exist.
   * @throws when a partition does not answer (the route answers 503)
   */
  async describe(): Promise<AdminResult<GroupDescription>> {
    const g = this.state;
    if (!g) return this.missing();
    const id = this.id;
    const statuses = await mapLimit(range(g.partitionCount), FANOUT, (p) =>
      withDeadline(partitionStub(this.env, id.tenant, id.incarnation, id.topicId, p).groupStatus(id.group)));
    return { ok: true, value: describeGroup(id, this.info(), statuses, Date.now()) };
  }

  /**
   * Resets the group's position on `partition` (null = every partition) to
   * `target`: each partition resolves where that is now, then the state
   * machine REVOKEs owned partitions and applies the position with the
   * fence that follows (state.ts `reset`). Answers where each partition
   * moves and whether it waits for its owner's CONTROL_ACK. 400 for a
   * partition out of range, 404 for an unknown group.
   * @throws when a partition does not answer (nothing changed)
   */
  async reset(target: ResetTarget, partition: number | null): Promise<AdminResult<ResetPlanEntry[]>> {
    const g = this.state;
    if (!g) return this.missing();
    if (partition !== null && (partition < 0 || partition >= g.partitionCount)) {
      return { ok: false, status: 400, error: `partition ${partition} is out of range: the topic has ${g.partitionCount} partitions` };
    }
    const id = this.id;
    const parts = partition === null ? range(g.partitionCount) : [partition];
    const positions = await mapLimit(parts, FANOUT, (p) =>
      withDeadline(partitionStub(this.env, id.tenant, id.incarnation, id.topicId, p).resolvePosition(target)));
    if (this.state !== g) return this.missing(); // deleted meanwhile
    const effects = g.reset(new Map(parts.map((p, i) => [p, positions[i]!])), Date.now());
    await this.commit(effects);
    return {
      ok: true,
      value: parts.map((p, i) => ({ partition: p, nextSequence: positions[i]!, pending: g.partitions[p]!.reset === positions[i] && g.partitions[p]!.revoke !== null })),
    };
  }

  /**
   * Pauses deliveries until `until` (unix ms, in the future) or resumes them
   * (null); members, heartbeats and assignment are unaffected. Stored, so it
   * survives restarts; every partition is told (outbox). 400 for a time not
   * in the future, 404 for an unknown group.
   */
  async pause(until: number | null, now = Date.now()): Promise<AdminResult<{ pausedUntil: number | null }>> {
    const g = this.state;
    if (!g) return this.missing();
    if (until !== null && until <= now) return { ok: false, status: 400, error: `until: ${new Date(until).toISOString()} is not in the future (resume instead)` };
    await this.commit(g.pause(until));
    return { ok: true, value: { pausedUntil: until } };
  }

  /**
   * Deletes the group: refused (409) while it has members unless `force`,
   * which removes them as a session timeout would (their sessions are told;
   * their next HEARTBEAT gets STALE_MEMBERSHIP_EPOCH). Every partition drops
   * the group's position and deliveries, the registry forgets it, and the
   * object deletes its storage. A later SUB with the same name starts a new
   * group (its start policy). 404 for an unknown group. Idempotent: a delete
   * that failed half way (thrown) is finished by the next call or the alarm.
   */
  async deleteGroup(force: boolean): Promise<AdminResult<{ removedMembers: number }>> {
    if (this.purged) return this.missing();
    const g = this.state;
    let removed = 0;
    if (g) {
      if (g.members.size > 0 && !force) {
        return { ok: false, status: 409, error: `consumer group "${this.id.group}" has ${g.members.size} member${g.members.size === 1 ? "" : "s"}: stop them first, or delete with force (they are removed as after a session timeout)` };
      }
      removed = g.members.size;
      this.store.setMeta("deleting", 1);
      this.state = null; // from now on: no member, no notice, no effect
      for (const m of g.members.values()) {
        void sessionStub(this.env, m.session.sessionId).groupRemoved(m.session.subscriptionId, m.id).catch(() => {});
      }
    } else if (this.store.meta("deleting") !== 1) {
      return this.missing();
    }
    await this.completeDelete();
    return { ok: true, value: { removedMembers: removed } };
  }

  /**
   * Tenant purge: deletes all of the object's storage and its alarm, after
   * the outbox loop stopped (no fence or notice leaves afterwards). From
   * then on it answers as an empty group and refuses joins. Its members'
   * sessions are told (as after a session timeout): they answer HEARTBEATs
   * themselves while the group heard from them recently, so their next one
   * gets STALE_MEMBERSHIP_EPOCH. Idempotent.
   */
  async purge(): Promise<void> {
    const members = [...(this.state?.members.values() ?? [])];
    this.purged = true;
    this.state = null;
    await Promise.all(members.map((m) =>
      withDeadline(sessionStub(this.env, m.session.sessionId).groupRemoved(m.session.subscriptionId, m.id)).catch(() => {})));
    await this.idle();
    await this.schedule.stop();
    await this.ctx.storage.deleteAll();
  }

  /** Membership, ownership and counters (all empty once purged: the tables are gone). */
  info(): GroupInfo {
    const g = this.state;
    if (this.purged) {
      return {
        partitionCount: 0, startPolicy: 0, membershipEpoch: 0, assignmentEpoch: 0, members: [], partitions: [], pausedUntil: null,
        pendingEffects: 0, rebalances: 0, forcedRevocations: 0, expiredMembers: 0,
      };
    }
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
      partitions: (g?.partitions ?? []).map((p, i) => ({ partition: i, owner: p.owner, ownershipEpoch: p.ownershipEpoch, revoking: p.revoke !== null, resetPending: p.reset })),
      pausedUntil: g?.pausedUntil ?? null,
      pendingEffects: this.store.pendingEffects(),
      rebalances: g?.counters.rebalances ?? 0,
      forcedRevocations: g?.counters.forcedRevocations ?? 0,
      expiredMembers: g?.counters.expiredMembers ?? 0,
    };
  }

  /** The one alarm (shared/scheduler.ts): jobs "delete", "timers", "probe", "outbox"; then the outbox loop resumes. */
  override async alarm(): Promise<void> {
    if (this.purged) return;
    await this.schedule.alarm();
    if (!this.state) return; // deleted (or being deleted): nothing to arm or drain
    if (this.armTimers()) await this.schedule.rearm();
    await this.drain();
  }

  // ------------------------------------------------------------ internals

  private missing(): { ok: false; status: 404; error: string } {
    return { ok: false, status: 404, error: `consumer group "${this.id.group}" does not exist` };
  }

  /** Resolves once the outbox loop is not running (it stops by itself when the state is gone). */
  private async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /**
   * The rest of a group delete (deleteGroup): wait for the outbox loop to
   * stop, drop the group at every partition, forget it in the registry,
   * delete the storage. A failure re-schedules it (alarm job "delete") and
   * rethrows. Concurrent calls share one run.
   */
  private completeDelete(): Promise<void> {
    this.deletion ??= (async () => {
      await this.idle();
      const id = this.id;
      const count = this.store.meta("partition_count", 0);
      await mapLimit(range(count), FANOUT, (p) =>
        withDeadline(partitionStub(this.env, id.tenant, id.incarnation, id.topicId, p).dropGroup(id.group)));
      await withDeadline(registryStub(this.env, id.tenant).unregisterGroup(id.incarnation, id.topicId, id.group));
      // Member ids, membership and assignment epochs and notice ids go on where they were: a session
      // of a removed member that never heard of the delete cannot pass for a member of the next group.
      const counters = COUNTERS.map((k) => [k, this.store.meta(k)] as const);
      await this.schedule.stop();
      await this.ctx.storage.deleteAll();
      this.store = new GroupStore(this.ctx.storage.sql);
      this.ctx.storage.transactionSync(() => {
        for (const [k, v] of counters) if (v > 0) this.store.setMeta(k, v);
      });
      this.schedule.reopen();
      this.state = null;
      this.failures = 0;
      this.timersDue = null;
    })().catch(async (e: unknown) => {
      await this.schedule.set("delete", Date.now() + DELETE_RETRY_MS);
      throw e;
    }).finally(() => {
      this.deletion = null;
    });
    return this.deletion;
  }

  /** Persists state changes + effects in one transaction, re-arms the timers, starts the outbox loop. */
  private async commit(effects: Effect[]): Promise<void> {
    this.persist(effects);
    if (this.armTimers()) await this.schedule.rearm();
    void this.drain();
  }

  /** Writes the state's changes and `effects` in one transaction; nothing once the state is gone (deleted, purged). */
  private persist(effects: readonly Effect[]): void {
    const g = this.state;
    if (!g) return;
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

  /** Runs queued effects in order until the outbox is empty, one must be retried later, or the group is being deleted. */
  private drain(): Promise<void> {
    this.draining ??= this.drainLoop().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  private async drainLoop(): Promise<void> {
    for (;;) {
      const g = this.state;
      if (!g) break;
      const next = this.store.nextEffect();
      if (!next) break;
      if (!(await this.execute(g, next.effect))) {
        this.failures++;
        await this.schedule.set("outbox", Date.now() + Math.min(5_000, 50 * 2 ** this.failures));
        break;
      }
      this.failures = 0;
      if (this.state !== g) break; // deleted while the effect ran: its storage is about to go
      this.store.done(next.id);
    }
  }

  /** Executes one effect of state `g`; false = failed, retry later. */
  private async execute(g: GroupState, e: Effect): Promise<boolean> {
    const id = this.id;
    if (e.kind === "fence") {
      try {
        const owner = e.owner ? { ...e.owner.session, memberId: e.owner.memberId } : null;
        const stub = partitionStub(this.env, id.tenant, id.incarnation, id.topicId, e.partition);
        const r = await withDeadline(stub.assign(id.group, e.epoch, owner, this.store.meta("start_policy"), e.reset));
        return r.ok || r.ownershipEpoch >= e.epoch;
      } catch {
        return false;
      }
    }
    if (e.kind === "pause") {
      try {
        await withDeadline(partitionStub(this.env, id.tenant, id.incarnation, id.topicId, e.partition).pauseGroup(id.group, e.until));
        return true;
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

  /** Probes the unverified members (see `unverified`) once, in the background. */
  private probeUnverified(): void {
    if (this.unverified.size === 0 || this.probing) return;
    this.probing = this.probe().catch(() => {}).finally(() => {
      this.probing = null;
    });
  }

  /** Removes members whose session no longer knows them (after a restart of this object): those not verified since. */
  private async probe(): Promise<void> {
    const g = this.state;
    if (!g) return;
    const ids = [...this.unverified];
    this.unverified.clear();
    for (const id of ids) {
      const m = g.members.get(id);
      if (!m) continue;
      let alive = true;
      try {
        alive = await withDeadline(sessionStub(this.env, m.session.sessionId).hasMember(m.session.subscriptionId, m.id));
      } catch {
        /* unknown: keep it; the session timeout decides */
      }
      if (!alive && this.state === g && g.members.has(m.id)) await this.commit(g.remove(m.id, "gone", Date.now()));
    }
  }
}
