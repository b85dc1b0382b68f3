/**
 * The consumer side of MortarClient (spec §2 SUB, MSG, ACK, NACK, PULL,
 * HEARTBEAT, NOTICE, CONTROL_ACK, CREDIT; docs/protocol.md "Read path").
 *
 * A Subscription is one group membership on one connection:
 * - push mode: the broker pushes MSGs within the credit window; read them
 *   with `for await (const m of sub)` or `sub.next()`, settle each with
 *   `m.ack()`, `m.nack()` (retry) / `m.nack(true)` (dead-letter now) or keep
 *   it alive with `m.progress()`. ACK/NACK return credit.
 * - pull mode (`pull: true`): `sub.pull({ maxMsgs, maxBytes, waitMs, minBytes })`.
 * - Automatic: HEARTBEAT every `heartbeatMs` (15 s) with the current epochs;
 *   NOTICE ASSIGN is confirmed at once; NOTICE REVOKE drops the buffered
 *   messages of that partition and is confirmed once every message of it
 *   handed to the application was settled (or after `revokeGraceMs`).
 * - A membership the broker no longer knows (STALE_MEMBERSHIP_EPOCH,
 *   UNKNOWN_SUBSCRIPTION) ends the subscription: iterators throw that error.
 */
import {
  AckFlags, ControlAckResult, CreditMode, ErrorCode, GROUP_HEARTBEAT_INTERVAL_MS, HeartbeatState, NackReason, NoticeKind, Op,
  decodeCreditResult, type CreditResult, type Frame, type MsgFrame, type NoticeFrame,
} from "../../wire/mortar";
import { MortarClientError } from "./errors";

/** What a Subscription needs from its client. */
export interface ConsumerHost {
  request(frame: Frame): Promise<unknown>;
  /** Called when the subscription ends (it stops receiving pushes). */
  detach(id: number): void;
}

/** Options of MortarClient.subscribe(). */
export interface SubscribeOptions {
  /** Where a group with no committed position starts (default "earliest"). */
  startPolicy?: "earliest" | "latest";
  /** Credit window in messages (0/undefined = broker default 256). */
  creditCount?: number;
  /** Credit window in value bytes (0/undefined = broker default 2 MiB). */
  creditBytes?: number;
  /** Pull mode: no pushes; fetch with pull(). */
  pull?: boolean;
  /** HEARTBEAT interval, ms (default 15000, GROUP_HEARTBEAT_INTERVAL_MS; 0 = none — the member is then removed after its session timeout). */
  heartbeatMs?: number;
  /** Longest wait for in-hand messages of a revoked partition before confirming the REVOKE, ms (default 5000). */
  revokeGraceMs?: number;
}

/** PULL options. */
export interface PullOptions {
  /** Max messages (default 256). */
  maxMsgs?: number;
  /** Max value bytes (default 2 MiB; the first message may be larger). */
  maxBytes?: number;
  /** Long-poll wait, ms (default 0 = answer at once). ≤ 65535. */
  waitMs?: number;
  /** Answer early once this many value bytes are collected (default 0 = any message). */
  minBytes?: number;
}

/** One delivery. Settle it exactly once with ack() or nack(); progress() any number of times before. */
export class Message {
  readonly topicId: number;
  readonly partition: number;
  readonly sequence: bigint;
  readonly deliveryId: bigint;
  /** 1 on the first delivery. */
  readonly attempt: number;
  readonly ownershipEpoch: bigint;
  readonly producerId: bigint;
  readonly producerSeq: bigint;
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  private settled = false;

  constructor(private readonly sub: Subscription, f: MsgFrame) {
    this.topicId = f.topicId;
    this.partition = f.partition;
    this.sequence = f.sequence;
    this.deliveryId = f.deliveryId;
    this.attempt = f.attempt;
    this.ownershipEpoch = f.ownershipEpoch;
    this.producerId = f.producerId;
    this.producerSeq = f.producerSeq;
    this.key = f.key.slice();
    this.value = f.value.slice();
  }

  /** The value as UTF-8 text. */
  text(): string {
    return new TextDecoder().decode(this.value);
  }

  /** ACK: done with it. @throws MortarClientError (e.g. STALE_OWNERSHIP_EPOCH after the partition moved) */
  ack(): Promise<void> {
    return this.settle(Op.ACK, 0);
  }

  /** NACK: redeliver (default) or, with `reject`, dead-letter it now. */
  nack(reject = false): Promise<void> {
    return this.settle(Op.NACK, reject ? NackReason.REJECT : NackReason.RETRY);
  }

  /** ACK with PROGRESS: push the work deadline out (no attempt used, no credit returned). */
  async progress(): Promise<void> {
    await this.sub.host.request(this.frame(Op.ACK, AckFlags.PROGRESS));
  }

  private async settle(op: number, x: number): Promise<void> {
    if (this.settled) throw new MortarClientError(ErrorCode.UNKNOWN_DELIVERY, "this message was already settled", op, "protocol");
    this.settled = true;
    try {
      await this.sub.host.request(this.frame(op, x));
    } finally {
      this.sub.settledMessage(this);
    }
  }

  private frame(op: number, x: number): Frame {
    const ref = {
      subscriptionId: this.sub.id, topicId: this.topicId, partition: this.partition, seq: this.sequence,
      deliveryId: this.deliveryId, ownershipEpoch: this.ownershipEpoch,
    };
    return op === Op.ACK ? { op: Op.ACK, ...ref, flags: x } : { op: Op.NACK, ...ref, reason: x, flags: 0 };
  }
}

/** One consumer-group membership (a SUB). */
export class Subscription implements AsyncIterable<Message> {
  /** partition → ownership epoch of the partitions this member owns. */
  readonly assignment = new Map<number, bigint>();
  private assignmentEpochValue: number;
  private readonly buffer: Message[] = [];
  private readonly waiters: { resolve: (m: Message | null) => void; reject: (e: MortarClientError) => void }[] = [];
  /** Messages handed to the application and not settled yet, per partition. */
  private readonly inHand = new Map<number, Set<Message>>();
  private readonly pullBuffer: Message[] = [];
  private pullChain: Promise<unknown> = Promise.resolve();
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private ended: MortarClientError | null = null;

  constructor(
    readonly host: ConsumerHost,
    readonly id: number,
    readonly topicId: number,
    readonly group: string,
    readonly memberId: bigint,
    readonly membershipEpoch: number,
    assignmentEpoch: number,
    readonly pullMode: boolean,
    private readonly opts: SubscribeOptions,
  ) {
    this.assignmentEpochValue = assignmentEpoch;
    const every = opts.heartbeatMs ?? GROUP_HEARTBEAT_INTERVAL_MS;
    if (every > 0) {
      this.heartbeat = setInterval(() => void this.beat().catch(() => {}), every);
      this.heartbeat.unref?.();
    }
  }

  /** Assignment epoch of the latest NOTICE (what HEARTBEAT and PULL carry). */
  get assignmentEpoch(): number {
    return this.assignmentEpochValue;
  }

  /** True once the subscription ended (closed, or the membership was lost). */
  get closed(): boolean {
    return this.ended !== null;
  }

  /**
   * The next pushed message (push mode). Waits up to `timeoutMs` (default
   * forever), then null. Once the subscription ended: null after close();
   * otherwise throws why it ended (CONNECTION_CLOSED, STALE_MEMBERSHIP_EPOCH,
   * …) — messages still buffered then are dropped, never handed out.
   * @throws MortarClientError PULL_MODE (action fix-request, the
   *   subscription unaffected) on a pull-mode subscription: use pull()
   */
  next(timeoutMs?: number): Promise<Message | null> {
    if (this.pullMode) return Promise.reject(modeError("PULL_MODE", "this subscription is in pull mode (nothing is pushed): use pull()", Op.PULL));
    const m = this.buffer.shift();
    if (m) return Promise.resolve(this.hand(m));
    if (this.ended) return this.ended.name === "SUBSCRIPTION_CLOSED" ? Promise.resolve(null) : Promise.reject(this.ended);
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const w = {
        resolve: (x: Message | null) => {
          clearTimeout(timer);
          resolve(x ? this.hand(x) : null);
        },
        reject: (e: MortarClientError) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(w);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve(null);
        }, timeoutMs);
      }
    });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Message> {
    for (;;) {
      const m = await this.next();
      if (!m) return;
      yield m;
    }
  }

  /**
   * PULL (pull mode): up to maxMsgs / maxBytes, waiting up to waitMs for
   * minBytes. Pulls of one subscription run one at a time.
   * @throws MortarClientError NOT_PULL_MODE (action fix-request, nothing
   *   sent, the subscription unaffected) on a push-mode subscription Retries once
   * the pending NOTICEs are applied when the broker answers
   * STALE_ASSIGNMENT_EPOCH.
   */
  pull(o: PullOptions = {}): Promise<Message[]> {
    if (!this.pullMode) return Promise.reject(modeError("NOT_PULL_MODE", "this subscription is in push mode: read it with next() / for await, or subscribe with { pull: true }", Op.PULL));
    const run = async (): Promise<Message[]> => {
      for (let attempt = 0; ; attempt++) {
        this.pullBuffer.length = 0;
        const epochs = [...this.assignment].sort((a, b) => a[0] - b[0]).map(([, e]) => e);
        try {
          await this.host.request({
            op: Op.PULL, subscriptionId: this.id, memberId: this.memberId, membershipEpoch: this.membershipEpoch,
            assignmentEpoch: this.assignmentEpochValue, ownershipEpochs: epochs, maxMsgs: o.maxMsgs ?? 0,
            maxBytes: o.maxBytes ?? 0, waitMs: o.waitMs ?? 0, minBytes: o.minBytes ?? 0,
          });
          return this.pullBuffer.splice(0).map((m) => this.hand(m));
        } catch (e) {
          const err = e as MortarClientError;
          if (err.code === ErrorCode.STALE_ASSIGNMENT_EPOCH && attempt < 3) continue;
          this.lost(err);
          throw err;
        }
      }
    };
    const p = this.pullChain.then(run, run);
    this.pullChain = p.catch(() => {});
    return p;
  }

  /** CREDIT: SET replaces the window, ADD grows it (0 with SET = the default). */
  async credit(mode: "set" | "add", count: number, bytes: number): Promise<CreditResult> {
    const ok = await this.host.request({
      op: Op.CREDIT, subscriptionId: this.id, membershipEpoch: this.membershipEpoch, ownershipEpoch: 0n,
      mode: mode === "set" ? CreditMode.SET : CreditMode.ADD, creditCount: count, creditBytes: bytes, reserved: 0,
    }) as { result: Uint8Array };
    return decodeCreditResult(ok.result);
  }

  /**
   * Leaves the group (HEARTBEAT LEAVE). Pending and later next() calls get
   * null (so `for await` ends); buffered messages are dropped — the group
   * redelivers them to its other members. Messages already handed out can
   * no longer be settled (UNKNOWN_SUBSCRIPTION): settle them before closing.
   */
  async close(): Promise<void> {
    if (this.ended) return;
    clearInterval(this.heartbeat);
    try {
      await this.host.request(this.heartbeatFrame(HeartbeatState.LEAVE));
    } catch {
      /* the connection close or the session timeout removes the member anyway */
    }
    this.end(new MortarClientError(0, "subscription closed", Op.HEARTBEAT, "connection", { name: "SUBSCRIPTION_CLOSED", action: "give-up" }));
  }

  // ------------------------------------------------------------ from the client

  /** A MSG for this subscription. */
  onMessage(f: MsgFrame): void {
    if (this.ended) return;
    const m = new Message(this, f);
    if (this.pullMode) {
      this.pullBuffer.push(m);
      return;
    }
    if (!this.assignment.has(m.partition)) return; // revoked meanwhile: redelivered to the new owner
    const w = this.waiters.shift();
    if (w) w.resolve(m);
    else this.buffer.push(m);
  }

  /** A NOTICE for this subscription. */
  onNotice(n: NoticeFrame): void {
    if (this.ended) return;
    if (n.assignmentEpoch > this.assignmentEpochValue) this.assignmentEpochValue = n.assignmentEpoch;
    if (n.kind === NoticeKind.ASSIGN) {
      this.assignment.set(n.partition, n.ownershipEpoch);
      void this.confirm(n);
      return;
    }
    this.assignment.delete(n.partition);
    for (let i = this.buffer.length - 1; i >= 0; i--) if (this.buffer[i]!.partition === n.partition) this.buffer.splice(i, 1);
    void this.whenSettled(n.partition).then(() => this.confirm(n));
  }

  /** The connection closed. */
  onClosed(err: MortarClientError): void {
    this.end(err);
  }

  /** A message left the application's hands (ack/nack called). */
  settledMessage(m: Message): void {
    const set = this.inHand.get(m.partition);
    set?.delete(m);
    if (set && set.size === 0) this.inHand.delete(m.partition);
  }

  // ------------------------------------------------------------ internals

  private hand(m: Message): Message {
    let set = this.inHand.get(m.partition);
    if (!set) this.inHand.set(m.partition, (set = new Set()));
    set.add(m);
    return m;
  }

  private async whenSettled(partition: number): Promise<void> {
    const end = Date.now() + (this.opts.revokeGraceMs ?? 5_000);
    while ((this.inHand.get(partition)?.size ?? 0) > 0 && Date.now() < end && !this.ended) await new Promise((r) => setTimeout(r, 20));
    this.inHand.delete(partition);
  }

  private async confirm(n: NoticeFrame): Promise<void> {
    try {
      await this.host.request({
        op: Op.CONTROL_ACK, noticeId: n.noticeId, noticeKind: n.kind, groupId: n.groupId, membershipEpoch: n.membershipEpoch,
        assignmentEpoch: n.assignmentEpoch, ownershipEpoch: n.ownershipEpoch, result: ControlAckResult.OK,
      });
    } catch (e) {
      this.lost(e as MortarClientError);
    }
  }

  private async beat(): Promise<void> {
    if (this.ended) return;
    try {
      await this.host.request(this.heartbeatFrame(HeartbeatState.ACTIVE));
    } catch (e) {
      this.lost(e as MortarClientError);
    }
  }

  private heartbeatFrame(state: number): Frame {
    return {
      op: Op.HEARTBEAT, subscriptionId: this.id, memberId: this.memberId, membershipEpoch: this.membershipEpoch,
      assignmentEpoch: this.assignmentEpochValue, state,
    };
  }

  /** Ends the subscription when the error means the membership is gone. */
  private lost(err: MortarClientError): void {
    if (err.code === ErrorCode.STALE_MEMBERSHIP_EPOCH || err.code === ErrorCode.UNKNOWN_SUBSCRIPTION || err.source === "connection") this.end(err);
  }

  private end(err: MortarClientError): void {
    if (this.ended) return;
    this.ended = err;
    clearInterval(this.heartbeat);
    // Buffered messages can no longer be settled on this subscription (after LEAVE the session
    // forgets it; a closed connection carries nothing): drop them — the group redelivers them.
    this.buffer.length = 0;
    this.pullBuffer.length = 0;
    this.host.detach(this.id);
    const closed = err.name === "SUBSCRIPTION_CLOSED";
    for (const w of this.waiters.splice(0)) closed ? w.resolve(null) : w.reject(err);
  }
}

/** A local error for calling the read method of the other mode (nothing is sent; the subscription goes on). */
function modeError(name: string, message: string, op: number): MortarClientError {
  return new MortarClientError(0, message, op, "protocol", { name, action: "fix-request" });
}
