/**
 * Test helper for the read path: a raw MortarMQ connection (WsConn) that
 * sorts what arrives into answers (OK/ERR, in request order) and pushes
 * (MSG/NOTICE), with small request helpers. Every frame still goes through
 * the real Worker, session, group and partition objects.
 */
import {
  ControlAckResult, HeartbeatState, NoticeKind, Op, SUB_PARTITION_ANY, decodeSubResult, utf8Bytes,
  type Frame, type MsgFrame, type NoticeFrame, type SubResult,
} from "../../../wire/mortar";
import type { ConsumerGroup } from "../../../objects/group/ConsumerGroup";
import { WsConn, expectOk, pubFrame } from "./mortar-ws";

export interface SubOptions {
  startPolicy?: number;
  creditCount?: number;
  creditBytes?: number;
  pull?: boolean;
}

/** One subscription as the test tracks it. */
export interface Sub extends SubResult {
  topicId: number;
}

export class Peer {
  readonly answers: Frame[] = [];
  readonly pushes: Frame[] = [];

  private constructor(readonly c: WsConn) {}

  /** Opens a connection and CONNECTs with `token` ("" = none, for an open broker). */
  static async open(token = ""): Promise<Peer> {
    const c = await WsConn.open();
    await c.connect(token);
    return new Peer(c);
  }

  private sort(): void {
    for (const f of this.c.frames.splice(0)) (f.op === Op.MSG || f.op === Op.NOTICE ? this.pushes : this.answers).push(f);
  }

  /** Sends frames as one WebSocket message. */
  send(frames: Frame[]): void {
    this.c.send(frames);
  }

  /** Waits for the next `n` answers (OK/ERR). */
  async answer(n = 1, timeoutMs = 5000): Promise<Frame[]> {
    await this.until(() => this.answers.length >= n, timeoutMs, `${n} answers`);
    return this.answers.splice(0, n);
  }

  /** Sends one request and waits for its answer. */
  async request(f: Frame, timeoutMs = 5000): Promise<Frame> {
    this.send([f]);
    return (await this.answer(1, timeoutMs))[0]!;
  }

  /** Waits until `n` pushes match `pred`; removes and returns them. */
  async take<T extends Frame>(pred: (f: Frame) => f is T, n = 1, timeoutMs = 5000): Promise<T[]> {
    await this.until(() => this.pushes.filter(pred).length >= n, timeoutMs, `${n} matching pushes`);
    const out: T[] = [];
    for (let i = 0; i < this.pushes.length && out.length < n; ) {
      const f = this.pushes[i]!;
      if (pred(f)) {
        out.push(f);
        this.pushes.splice(i, 1);
      } else i++;
    }
    return out;
  }

  /** Waits `ms` and returns the pushes that match `pred` without removing them. */
  async peek<T extends Frame>(pred: (f: Frame) => f is T, ms = 150): Promise<T[]> {
    await new Promise((r) => setTimeout(r, ms));
    this.sort();
    return this.pushes.filter(pred);
  }

  async subscribe(topicId: number, group: string, o: SubOptions = {}): Promise<Sub> {
    const ok = await this.request({
      op: Op.SUB, group: utf8Bytes(group), topicId, partition: SUB_PARTITION_ANY, startPolicy: o.startPolicy ?? 0,
      creditCount: o.creditCount ?? 0, creditBytes: o.creditBytes ?? 0, flags: o.pull ? 1 : 0,
    });
    return { ...decodeSubResult(expectOk(ok, Op.SUB).result), topicId };
  }

  async publish(topicId: number, partition: number, value: string, key = ""): Promise<Frame> {
    return this.request(pubFrame(topicId, partition, value, { key: utf8Bytes(key) }));
  }

  /** CONTROL_ACK of a NOTICE (echoing it). */
  controlAckFrame(n: NoticeFrame, patch: Partial<Frame & { op: typeof Op.CONTROL_ACK }> = {}): Frame {
    return {
      op: Op.CONTROL_ACK, noticeId: n.noticeId, noticeKind: n.kind, groupId: n.groupId, membershipEpoch: n.membershipEpoch,
      assignmentEpoch: n.assignmentEpoch, ownershipEpoch: n.ownershipEpoch, result: ControlAckResult.OK, ...patch,
    } as Frame;
  }

  /** CONTROL_ACKs every notice given, expecting OK. */
  async confirm(notices: NoticeFrame[]): Promise<void> {
    for (const n of notices) expectOk(await this.request(this.controlAckFrame(n)), Op.CONTROL_ACK);
  }

  ackFrame(m: MsgFrame, flags = 0): Frame {
    return { op: Op.ACK, subscriptionId: m.subscriptionId, topicId: m.topicId, partition: m.partition, seq: m.sequence, deliveryId: m.deliveryId, ownershipEpoch: m.ownershipEpoch, flags };
  }

  nackFrame(m: MsgFrame, reason: number): Frame {
    return { op: Op.NACK, subscriptionId: m.subscriptionId, topicId: m.topicId, partition: m.partition, seq: m.sequence, deliveryId: m.deliveryId, ownershipEpoch: m.ownershipEpoch, reason, flags: 0 };
  }

  heartbeatFrame(s: Sub, assignmentEpoch: number, leave = false): Frame {
    return { op: Op.HEARTBEAT, subscriptionId: s.subscriptionId, memberId: s.memberId, membershipEpoch: s.membershipEpoch, assignmentEpoch, state: leave ? HeartbeatState.LEAVE : HeartbeatState.ACTIVE };
  }

  close(): void {
    this.c.close();
  }

  private async until(ok: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.sort();
      if (ok()) return;
      if (this.c.closed) throw new Error(`closed (${this.c.closed.code} ${this.c.closed.reason}) waiting for ${what}`);
      if (Date.now() > deadline) throw new Error(`timeout waiting for ${what}; answers=${this.answers.length} pushes=${this.pushes.map((f) => f.op).join(",")}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

export const isNotice = (f: Frame): f is NoticeFrame => f.op === Op.NOTICE;
export const isAssign = (f: Frame): f is NoticeFrame => f.op === Op.NOTICE && f.kind === NoticeKind.ASSIGN;
export const isRevoke = (f: Frame): f is NoticeFrame => f.op === Op.NOTICE && f.kind === NoticeKind.REVOKE;
export const isMsg = (f: Frame): f is MsgFrame => f.op === Op.MSG;
export const text = (m: MsgFrame) => new TextDecoder().decode(m.value);

/**
 * Closes `peers` and waits (at most `timeoutMs`) until `group` has no
 * members and no pending effects: the sessions' close handlers (LEAVE) and
 * the group's follow-up calls have finished. A test that ends with work
 * still running in objects makes the pool report
 * `EnvironmentTeardownError: Closing rpc while "resolve" was pending` when
 * that work reaches an object after the file ended (docs/testing.md).
 */
export async function closeAndSettle(group: DurableObjectStub<ConsumerGroup>, peers: Peer[], timeoutMs = 3000): Promise<void> {
  for (const p of peers) p.close();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await group.info();
    if (info.members.length === 0 && info.pendingEffects === 0) return;
    if (Date.now() > deadline) throw new Error(`group did not settle: ${info.members.length} members, ${info.pendingEffects} pending effects`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
