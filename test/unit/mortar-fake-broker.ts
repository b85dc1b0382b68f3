/**
 * A broker in memory behind a MortarMQ connection's port
 * (objects/session/port.ts), for driving whole sessions in Node: a topic
 * registry, partition logs that deliver and settle with ownership fencing,
 * and consumer groups run by the real group state machine
 * (objects/group/state.ts, pure) whose effects — fence the partition, send
 * a NOTICE to the session — this fake executes the way the ConsumerGroup
 * object does. Everything the connection writes is collected as decoded
 * frames (`take()`).
 *
 * Deliberately simple where the session cannot tell: no storage, no
 * deadlines at the partition, ids from counters.
 */
import {
  ErrorCode, FrameDecoder, Op, encodeFrame, type Frame, type PubFrame,
} from "../../wire/mortar";
import type { DeclareRetention } from "../../wire/mortar/frames";
import { readPubBatch } from "../../objects/partition/batch";
import { AppendStatus, SettleKind, type AppendResult, type DeliverRequest, type DeliverResult, type SettleRequest, type SettleResult } from "../../objects/partition/rpc";
import type { DeclareResult, LookupResult, TopicInfo } from "../../objects/registry/rpc";
import type { ControlAckRequest, JoinRequest, JoinResult } from "../../objects/group/rpc";
import { GroupState, type Effect } from "../../objects/group/state";
import type { AuthResult } from "../../objects/tenants/rpc";
import type { Connection } from "../../objects/session/connection";
import type { MortarPort } from "../../objects/session/port";
import type { Subscription } from "../../objects/session/subscription";

interface InFlight {
  deliveryId: number;
  attempt: number;
  subscriptionId: number;
}

/** One partition's log and, per group, its owner and deliveries. */
class FakePartition {
  readonly records: PubFrame[] = [];
  readonly groups = new Map<string, { epoch: number; owner: { subscriptionId: number; memberId: number } | null; next: number; inFlight: Map<number, InFlight>; redeliver: number[]; attempts: Map<number, number> }>();

  group(name: string) {
    let g = this.groups.get(name);
    if (!g) this.groups.set(name, (g = { epoch: 0, owner: null, next: 1, inFlight: new Map(), redeliver: [], attempts: new Map() }));
    return g;
  }
}

export class FakeBroker implements MortarPort {
  /** The connection under test (set after constructing it with this port). */
  conn!: Connection;
  readonly topics = new Map<string, TopicInfo>();
  readonly partitions = new Map<string, FakePartition>();
  readonly groups = new Map<string, GroupState>();
  /** Calls the connection made, in order (`append p0 ×2`, `join billing`, …). */
  readonly calls: string[] = [];
  closed: { code: number; reason: string } | null = null;
  subs: ReadonlyMap<number, Subscription> = new Map();
  private out: Uint8Array[] = [];
  private held = new Map<number, (() => void)[]>();
  private declaresHeld: (() => void)[] | null = null;
  private nextDeliveryId = 1;

  constructor(private readonly tokens: Record<string, string> = { "": "acme" }) {}

  // ------------------------------------------------------------ test controls

  /** Every frame written since the last take(), decoded. */
  take(): Frame[] {
    const d = new FrameDecoder();
    const frames: Frame[] = [];
    for (const b of this.out) {
      const r = d.push(b);
      if (r.error) throw r.error;
      frames.push(...r.frames);
    }
    this.out = [];
    return frames;
  }

  /** Holds appends to `partition` until the returned function is called. */
  hold(partition: number): () => void {
    this.held.set(partition, []);
    return () => {
      const waiting = this.held.get(partition) ?? [];
      this.held.delete(partition);
      for (const go of waiting) go();
    };
  }

  /** Holds DECLAREs until the returned function is called (a barrier that stays open). */
  holdDeclares(): () => void {
    const waiting: (() => void)[] = (this.declaresHeld = []);
    return () => {
      this.declaresHeld = null;
      for (const go of waiting) go();
    };
  }

  // ------------------------------------------------------------ the port

  async authenticate(token: string | undefined): Promise<AuthResult> {
    this.calls.push("authenticate");
    const tenant = this.tokens[token ?? ""];
    return tenant ? { ok: true, tenant, open: false } : { ok: false, reason: "invalid", message: "unknown token" };
  }

  admitPublish(): Promise<null> {
    return Promise.resolve(null);
  }

  permit(): null {
    return null; // scopes are tested through the real runtime (test/workers/tenants/scopes.test.ts)
  }

  permitAny(): null {
    return null;
  }

  async lookup(topicId: number): Promise<LookupResult> {
    this.calls.push(`lookup ${topicId}`);
    for (const t of this.topics.values()) if (t.topicId === topicId) return { ok: true, topic: t };
    return { ok: false, code: ErrorCode.UNKNOWN_TOPIC, message: `topic_id ${topicId} is not known` };
  }

  /** The retention tails DECLAREs carried, in order (undefined for a DECLARE without one). */
  readonly retentionTails: (DeclareRetention | undefined)[] = [];

  async declare(topic: Uint8Array, partitionCount: number, _flags = 0, retention?: DeclareRetention): Promise<DeclareResult> {
    const name = new TextDecoder().decode(topic);
    this.calls.push(`declare ${name}`);
    this.retentionTails.push(retention);
    const held = this.declaresHeld;
    if (held) await new Promise<void>((go) => held.push(go));
    const had = this.topics.get(name);
    // the registry answers the settings in force on every topic view (here: a fixed one)
    const t = had ?? { topicId: 2 * this.topics.size + 1, name, partitionCount, incarnation: 1, dlq: false, createdAt: 0,
      retention: { ms: 604_800_000, bytes: 0, messages: 0, discard: "old" as const } };
    this.topics.set(name, t);
    return { ok: true, topicId: t.topicId, partitionCount: t.partitionCount, created: had ? 0 : 1, topic: t };
  }

  async append(topic: TopicInfo, partition: number, batch: Uint8Array): Promise<AppendResult> {
    const records = readPubBatch(batch); // the Partition decodes the forwarded frames once
    this.calls.push(`append p${partition} ×${records.length}`);
    const held = this.held.get(partition);
    if (held) await new Promise<void>((go) => held.push(go));
    const p = this.partition(topic, partition);
    const sequences = new Float64Array(records.length);
    for (let i = 0; i < records.length; i++) {
      p.records.push(records[i]!);
      sequences[i] = p.records.length;
    }
    // the Partition wakes the owners that wait for records
    for (const g of p.groups.values()) if (g.owner) queueMicrotask(() => this.conn.consumer.wake(g.owner!.subscriptionId, partition));
    return {
      leaderEpoch: 1, commitSeq: p.records.length, durability: 1,
      status: new Uint8Array(records.length).fill(AppendStatus.APPENDED), sequences, codes: new Uint16Array(records.length),
    };
  }

  async deliver(topic: TopicInfo, partition: number, req: DeliverRequest): Promise<DeliverResult> {
    const g = this.partition(topic, partition).group(req.group);
    const p = this.partition(topic, partition);
    const none = (code: number): DeliverResult => ({ code, frames: new Uint8Array(0), sequences: new Float64Array(0), deliveryIds: new Float64Array(0), sizes: new Uint32Array(0), blockedBytes: 0 });
    if (req.ownershipEpoch !== g.epoch) return none(ErrorCode.STALE_OWNERSHIP_EPOCH);
    if (g.owner?.subscriptionId !== req.caller.subscriptionId) return none(ErrorCode.NOT_OWNER);
    const frames: Uint8Array[] = [];
    const seqs: number[] = [], ids: number[] = [], sizes: number[] = [];
    let bytes = 0;
    while (seqs.length < req.maxMsgs) {
      const seq = g.redeliver[0] ?? (g.next <= p.records.length ? g.next : 0);
      if (!seq) break;
      const r = p.records[seq - 1]!;
      if (seqs.length > 0 && bytes + r.value.length > req.maxBytes) break;
      if (g.redeliver[0] === seq) g.redeliver.shift();
      else g.next++;
      const attempt = (g.attempts.get(seq) ?? 0) + 1;
      g.attempts.set(seq, attempt);
      const deliveryId = this.nextDeliveryId++;
      g.inFlight.set(seq, { deliveryId, attempt, subscriptionId: req.caller.subscriptionId });
      frames.push(encodeFrame({
        op: Op.MSG, subscriptionId: req.caller.subscriptionId, topicId: topic.topicId, partition, sequence: BigInt(seq),
        deliveryId: BigInt(deliveryId), attempt, ownershipEpoch: BigInt(g.epoch), producerId: r.producerId, producerSeq: r.producerSeq,
        flags: 0, key: r.key, value: r.value,
      }));
      seqs.push(seq);
      ids.push(deliveryId);
      sizes.push(r.value.length);
      bytes += r.value.length;
    }
    if (seqs.length > 0) this.calls.push(`deliver p${partition} → ${seqs.join(",")}`);
    const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let o = 0;
    for (const f of frames) {
      all.set(f, o);
      o += f.length;
    }
    return { code: 0, frames: all, sequences: Float64Array.from(seqs), deliveryIds: Float64Array.from(ids), sizes: Uint32Array.from(sizes), blockedBytes: 0 };
  }

  async settle(topic: TopicInfo, partition: number, req: SettleRequest): Promise<SettleResult> {
    const g = this.partition(topic, partition).group(req.group);
    const codes = new Uint16Array(req.kinds.length);
    for (let i = 0; i < codes.length; i++) {
      const seq = req.sequences[i]!;
      const d = g.inFlight.get(seq);
      if (req.ownershipEpochs[i]! < g.epoch) codes[i] = ErrorCode.STALE_OWNERSHIP_EPOCH;
      else if (g.owner?.subscriptionId !== req.caller.subscriptionId) codes[i] = ErrorCode.NOT_OWNER;
      else if (!d || d.deliveryId !== req.deliveryIds[i]) codes[i] = ErrorCode.UNKNOWN_DELIVERY;
      else if (req.kinds[i] !== SettleKind.PROGRESS) {
        g.inFlight.delete(seq);
        if (req.kinds[i] === SettleKind.RETRY) g.redeliver.push(seq);
      }
    }
    this.calls.push(`settle p${partition} [${[...codes].join(",")}]`);
    return { codes };
  }

  async join(topic: TopicInfo, group: string, req: JoinRequest): Promise<JoinResult> {
    this.calls.push(`join ${group}`);
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = new GroupState(req.partitionCount, { sessionTimeoutMs: 60_000, revocationTimeoutMs: 60_000 })));
    const { member, effects } = g.join(req.session, Date.now(), req.leaseMs ?? null);
    this.execute(topic, group, effects);
    return { memberId: member.id, membershipEpoch: member.membershipEpoch, assignmentEpoch: member.assignmentEpoch };
  }

  async heartbeat(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number, assignmentEpoch: number, leave: boolean): Promise<number> {
    const r = this.groups.get(group)!.heartbeat(memberId, membershipEpoch, assignmentEpoch, leave, Date.now());
    if (r.code === 0 && leave) this.execute(topic, group, r.effects);
    return r.code;
  }

  async renew(_topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<number> {
    this.calls.push(`renew ${group}`);
    return this.groups.get(group)!.renew(memberId, membershipEpoch, Date.now());
  }

  async expire(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<void> {
    this.calls.push(`expire ${group} member ${memberId}`);
    const g = this.groups.get(group)!;
    if (g.members.get(memberId)?.membershipEpoch === membershipEpoch) this.execute(topic, group, g.remove(memberId, "expired", Date.now()));
  }

  async controlAck(topic: TopicInfo, group: string, req: ControlAckRequest): Promise<number> {
    this.calls.push(`controlAck ${group} notice ${req.noticeId}`);
    const r = this.groups.get(group)!.controlAck(req.memberId, {
      id: req.noticeId, kind: req.kind, membershipEpoch: req.membershipEpoch, assignmentEpoch: req.assignmentEpoch, ownershipEpoch: req.ownershipEpoch,
    }, Date.now());
    if (r.code === 0) this.execute(topic, group, r.effects);
    return r.code;
  }

  async leave(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<void> {
    this.calls.push(`leave ${group} member ${memberId}`);
    const g = this.groups.get(group);
    const m = g?.members.get(memberId);
    if (g && m && m.membershipEpoch === membershipEpoch) this.execute(topic, group, g.remove(memberId, "closed", Date.now()));
  }

  send(bytes: Uint8Array): void {
    this.out.push(bytes.slice());
  }

  close(code: number, reason: string): void {
    this.closed = { code, reason };
  }

  subscriptions(subs: ReadonlyMap<number, Subscription>): void {
    this.subs = subs;
  }

  // ------------------------------------------------------------ internals

  private partition(topic: TopicInfo, p: number): FakePartition {
    const key = `${topic.topicId}/${p}`;
    let part = this.partitions.get(key);
    if (!part) this.partitions.set(key, (part = new FakePartition()));
    return part;
  }

  /**
   * Runs a group's effects in order, after the current call answered (as
   * the ConsumerGroup object drains its outbox): a fence moves the
   * partition's owner (deliveries of the old owner go up for redelivery),
   * a NOTICE goes to the session.
   */
  private execute(topic: TopicInfo, group: string, effects: Effect[]): void {
    const g = this.groups.get(group)!;
    queueMicrotask(() => {
      for (const e of effects) {
        if (e.kind === "fence") {
          const pg = this.partition(topic, e.partition).group(group);
          pg.epoch = e.epoch;
          pg.owner = e.owner ? { subscriptionId: e.owner.session.subscriptionId, memberId: e.owner.memberId } : null;
          for (const seq of [...pg.inFlight.keys()].sort((a, b) => a - b)) pg.redeliver.push(seq);
          pg.inFlight.clear();
          this.calls.push(`fence p${e.partition} epoch ${e.epoch}`);
        } else if (e.kind === "notice") {
          const n = e.notice;
          const ok = this.conn.consumer.notice({
            subscriptionId: e.session.subscriptionId, memberId: n.memberId, noticeId: n.id, kind: n.kind, membershipEpoch: n.membershipEpoch,
            assignmentEpoch: n.assignmentEpoch, ownershipEpoch: n.ownershipEpoch, topicId: topic.topicId, partition: n.partition,
          });
          if (ok) g.noticeDelivered(n);
        } else if (e.kind === "removed") {
          this.conn.consumer.removed(e.session.subscriptionId, e.memberId);
        } // "pause": the fake broker's partitions do not pause (group pauses are tested in the workers pool)
      }
    });
  }
}
