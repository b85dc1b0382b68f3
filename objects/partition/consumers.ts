/**
 * The read path of one Partition object (docs/protocol.md "Read path"):
 * consumer-group ledgers (ledger.ts), fencing (assign), deliveries with
 * work deadlines, settlements (ACK / PROGRESS / NACK), redelivery and
 * dead-lettering to the `.dlq` twin. The Partition class delegates here.
 *
 * Every call: check → ledger (pure) → one transactionSync flushing the
 * changed rows → reply. Timers share the Partition's one alarm through the
 * schedule table: "deadlines" (earliest work deadline), "dlq" (dead letters
 * waiting for the twin), "pause" (the earliest end of a group's pause).
 * All jobs recompute from state: running one twice is harmless.
 *
 * Wake-ups: when a group's owner asked for records and got none
 * (`waiting`), the next append (or a redelivery becoming due) calls
 * MortarSession.wake on the owner's session once; the session then asks
 * again. No polling. Deliveries that pass their work deadline are reported
 * to the owner's session (MortarSession.expired) so it frees their credit.
 *
 * Retention (retention-keeper.ts) calls `truncate` when it deleted the
 * oldest records: groups below the new log start continue at it (the
 * records they lose are counted), deliveries of deleted records are
 * dropped, and their owners' sessions are told like for expired
 * deliveries, so the credit comes back and a later ACK answers
 * UNKNOWN_DELIVERY.
 */
import { ErrorCode } from "../../wire/mortar/errors";
import { Op, StartPolicy } from "../../wire/mortar/constants";
import { encodeDeadLetter } from "../../wire/mortar/dead-letter";
import type { Frame, PubFrame } from "../../wire/mortar/frames";
import type { Env } from "../env";
import type { PartitionIdentity } from "../shared/names";
export type { PartitionIdentity };
import type { ReadConfig } from "../shared/read-config";
import type { AlarmScheduler } from "../shared/scheduler";
import { sessionStub } from "../session/stub";
import { PubBatchBuilder, packFrames } from "./batch";
import { DeliveryState, GroupLedger } from "./ledger";
import { LedgerStore, type LoadFixes } from "./ledger-store";
import type { LogStore } from "./log-store";
import {
  SettleKind, type AppendResult, type AssignResult, type DeliverRequest, type DeliverResult, type GroupCursorInfo,
  type OwnerRef, type SettleRequest, type SettleResult, type SubscriberRef,
} from "./rpc";
import { partitionStub } from "./stub";

/**
 * Largest `deliver` answer, bytes of MSG frames (DESIGN.md §10: a serialized
 * RPC result is capped at 32 MiB; ours stay ≤ 8 MiB). A bigger credit window
 * is served by several calls; the first record of a call always goes, so a
 * 16 MiB value travels alone.
 */
export const MAX_DELIVER_BYTES = 8 * 1024 * 1024;
/** MSG frame bytes besides key and value (length prefix, op and fixed fields), an upper bound. */
const MSG_OVERHEAD_BYTES = 64;

/** Unsettled deliveries per (group, partition) before new records are held back ("max ack pending"). */
export const MAX_UNSETTLED_PER_GROUP = 65_536;
/** Dead letters moved to the twin per call, and the byte bound of one such batch (the first record always goes). */
const DLQ_BATCH = 256;
const DLQ_BATCH_BYTES = 4 * 1024 * 1024;
/** Retry delay after a failed transfer to the twin, ms. */
const DLQ_RETRY_MS = 1_000;

/** What the read path needs from its Partition. */
export interface ConsumersHost {
  storage: DurableObjectStorage;
  env: Env;
  log: LogStore;
  schedule: AlarmScheduler;
  config: ReadConfig;
  identity(): PartitionIdentity;
  lastSeq(): number;
  /** The first retained sequence (the log start): the oldest stored record, or lastSeq() + 1 when none is. */
  logStart(): number;
  deleted(): boolean;
  meta(k: string): number;
  setMeta(k: string, v: number): void;
  /** `count` deliveries of `bytes` value bytes were just recorded (called in the same synchronous turn as their commit). */
  delivered(count: number, bytes: number): void;
  /** ACK/NACK settled, or dead letters moved: the ledger counters changed. */
  settled(): void;
}

const NONE = new Uint8Array(0);

/** What a waiting owner's session can take without asking (the rest of its last drained deliver's budget). */
interface Standing {
  caller: SubscriberRef;
  epoch: number;
  maxMsgs: number;
  /** Value bytes. */
  maxBytes: number;
}

export class Consumers {
  private readonly store: LedgerStore;
  private readonly ledgers: Map<string, GroupLedger>;
  /** Paused groups (by name) and the end of their pause, unix ms (consumer-group management). */
  private readonly pauses: Map<string, number>;
  /** Owners waiting with a standing budget (their last deliver was drained and allowed carrying), by ledger. */
  private readonly standing = new Map<GroupLedger, Standing>();
  private deliveryEpoch: number;
  private deliveryCounter = 0;
  private deadlineDue: number | null;
  /** The dead-letter transfer while it runs. */
  private transfer: Promise<void> | null = null;
  /** Dead letters appeared while a transfer was running: it makes another pass. */
  private transferAgain = false;

  constructor(private readonly host: ConsumersHost) {
    this.store = new LedgerStore(host.storage.sql);
    const fixes: LoadFixes = { count: 0 };
    this.ledgers = this.store.loadAll(host.config.maxAttempts, fixes);
    this.pauses = this.store.loadPauses();
    this.deliveryEpoch = host.meta("delivery_epoch") + 1;
    host.setMeta("delivery_epoch", this.deliveryEpoch);
    this.deadlineDue = host.schedule.get("deadlines");
    if (fixes.count > 0 || fixes.migrated) {
      // Per-delivery rows of an earlier release become runs; deliveries it left waiting after their last attempt are dead-lettered now.
      host.storage.transactionSync(() => {
        for (const l of this.ledgers.values()) this.store.flush(l);
        if (fixes.migrated) this.store.dropLegacy();
        if (fixes.count > 0) host.schedule.put("dlq", Date.now());
      });
      if (fixes.count > 0) void host.schedule.rearm();
    }
  }

  /**
   * Fence (called by the ConsumerGroup): `owner` owns the partition for
   * `group` under `epoch` (null = nobody). A group seen for the first time
   * starts at the oldest record (StartPolicy.EARLIEST) or after the last
   * one (LATEST). An older epoch changes nothing (ok = false). `reset`
   * (a group reset, docs/groups.md): the group's position becomes that
   * sequence and its unsettled deliveries are dropped, in the same step as
   * the epoch change — so no ACK of the old position can move the new one.
   */
  async assign(group: string, epoch: number, owner: OwnerRef | null, startPolicy: number, reset?: number): Promise<AssignResult> {
    let l = this.ledgers.get(group);
    this.host.storage.transactionSync(() => {
      if (!l) {
        l = this.store.create(group, startPolicy === StartPolicy.LATEST ? this.host.lastSeq() + 1 : this.host.logStart());
        this.ledgers.set(group, l);
      }
    });
    const ok = l!.assign(epoch, owner, this.host.config.maxAttempts);
    if (ok && reset !== undefined) l!.reset(reset); // also drops the last attempts the fence just dead-lettered
    this.host.storage.transactionSync(() => this.store.flush(l!));
    if (l!.count(DeliveryState.DEAD) > 0) await this.scheduleDlq(Date.now()); // last attempts the fence ended
    return { ok, ownershipEpoch: l!.ownershipEpoch };
  }

  /**
   * Pauses `group` until `until` (unix ms) or resumes it (null): while
   * paused, deliver() hands out nothing (no new records, no redeliveries);
   * deliveries already made may still be settled, deadlines keep running.
   * The pause ends by itself at `until` (alarm job "pause") and the owner is
   * woken. Idempotent.
   */
  async pause(group: string, until: number | null, now = Date.now()): Promise<void> {
    const active = until !== null && until > now;
    this.host.storage.transactionSync(() => this.store.setPause(group, active ? until : null));
    if (active) this.pauses.set(group, until);
    else this.pauses.delete(group);
    await this.schedulePauses();
    const l = this.ledgers.get(group);
    if (!active && l) this.wake(l);
  }

  /**
   * Deletes `group`'s ledger here (group delete): its position, its
   * unsettled deliveries and its pause. A later fence starts it afresh
   * (start policy). Returns whether there was a ledger. Idempotent.
   */
  async dropGroup(group: string): Promise<boolean> {
    const l = this.ledgers.get(group);
    this.host.storage.transactionSync(() => {
      if (l) this.store.drop(l);
      this.store.setPause(group, null);
    });
    this.ledgers.delete(group);
    if (l) this.standing.delete(l);
    if (this.pauses.delete(group)) await this.schedulePauses();
    return l !== undefined;
  }

  /** One group's position and counters here (null: it never owned the partition), and the end of its pause. */
  cursor(group: string, now = Date.now()): { cursor: GroupCursorInfo | null; pausedUntil: number | null } {
    const l = this.ledgers.get(group);
    const until = this.pauses.get(group);
    return { cursor: l ? cursorInfo(l) : null, pausedUntil: until !== undefined && until > now ? until : null };
  }

  /**
   * Takes deliverable records for the owner: redeliveries first (lowest
   * sequence first), then new records, up to maxMsgs and maxBytes of values
   * (the first may be larger only with allowOversize) and MAX_DELIVER_BYTES
   * of frames (past the first record). Each gets a new delivery id,
   * attempt + 1 and a work deadline of ack wait + holdMs. `drained` says
   * nothing else is deliverable now: the owner is woken (MortarSession.wake)
   * when something is, instead of asking again.
   */
  async deliver(req: DeliverRequest): Promise<DeliverResult> {
    if (this.host.deleted()) return empty(ErrorCode.TOPIC_DELETED, "the topic was deleted");
    const l = this.ledgers.get(req.group);
    if (!l) return empty(ErrorCode.NOT_OWNER, `group "${req.group}" has no owner for this partition`);
    const bad = l.check(req.ownershipEpoch, req.caller);
    if (bad) return empty(bad, bad === ErrorCode.STALE_OWNERSHIP_EPOCH ? `ownership epoch ${req.ownershipEpoch} is older than ${l.ownershipEpoch}` : "the subscription does not own this partition");
    this.standing.delete(l);
    if (this.paused(req.group, Date.now())) {
      l.waiting = true; // woken when the pause ends
      return empty(0);
    }
    const t = this.take(l, req.caller, Math.max(1, req.maxMsgs), req.maxBytes, req.allowOversize, req.holdMs);
    const r = t.result;
    if (req.carry && r.drained) {
      const left = { maxMsgs: Math.max(1, req.maxMsgs) - r.sequences.length, maxBytes: req.maxBytes - t.bytes };
      if (left.maxMsgs > 0 && left.maxBytes > 0) this.standing.set(l, { caller: req.caller, epoch: l.ownershipEpoch, ...left });
    }
    await this.armDeadline(t.deadline);
    return r;
  }

  /**
   * Takes deliverable records for `caller` (deliver, carry): redeliveries
   * first, then new records, within the budget; records them in the ledger
   * and flushes it. `drained`: nothing else is deliverable now (the owner
   * is then marked waiting, so the next append wakes it).
   */
  private take(l: GroupLedger, caller: SubscriberRef, maxMsgs: number, maxBytes: number, allowOversize: boolean, holdMs: number): { result: DeliverResult; bytes: number; deadline: number | null } {
    const { topicId, partition } = this.host.identity();
    const deadline = Date.now() + this.host.config.ackWaitMs + Math.max(0, holdMs);
    const out: Frame[] = [];
    const seqs: number[] = [], ids: number[] = [], sizes: number[] = [];
    let bytes = 0;
    let frameBytes = 0;
    let blocked = 0;
    const fits = (f: PubFrame) => {
      const size = f.value.length;
      if (seqs.length === 0) return allowOversize || size <= maxBytes;
      return bytes + size <= maxBytes && frameBytes + f.key.length + size + MSG_OVERHEAD_BYTES <= MAX_DELIVER_BYTES;
    };
    const take = (seq: number, f: PubFrame) => {
      const id = this.nextDeliveryId();
      const attempt = l.delivered(seq, id, deadline);
      out.push({
        op: Op.MSG, subscriptionId: caller.subscriptionId, topicId, partition, sequence: BigInt(seq),
        deliveryId: BigInt(id), attempt: Math.min(attempt, 0xffff), ownershipEpoch: BigInt(l.ownershipEpoch),
        producerId: f.producerId, producerSeq: f.producerSeq, flags: 0, key: f.key, value: f.value,
      });
      seqs.push(seq);
      ids.push(id);
      sizes.push(f.value.length);
      bytes += f.value.length;
      frameBytes += f.key.length + f.value.length + MSG_OVERHEAD_BYTES;
    };
    for (const seq of l.retries()) {
      if (seqs.length >= maxMsgs || blocked) break;
      let found = false;
      this.host.log.scan(seq, (s, f) => {
        if (s !== seq) return false;
        found = true;
        if (fits(f)) take(seq, f);
        else blocked = f.value.length;
        return false;
      });
      if (!found) l.forget(seq);
    }
    const room = Math.min(maxMsgs - seqs.length, MAX_UNSETTLED_PER_GROUP - l.pending.size);
    if (!blocked && room > 0) {
      let n = 0;
      this.host.log.scan(l.next, (s, f) => {
        if (n >= room) return false;
        if (!fits(f)) {
          blocked = f.value.length;
          return false;
        }
        take(s, f);
        n++;
        return true;
      });
    }
    if (seqs.length > 0) blocked = 0;
    // Nothing left after these (no redelivery waiting, every stored record taken): the next append wakes the owner.
    const drained = !blocked && !l.hasRetries() && l.next > this.host.lastSeq();
    if (drained || (seqs.length === 0 && !blocked)) l.waiting = true;
    this.host.storage.transactionSync(() => this.store.flush(l));
    if (seqs.length > 0) this.host.delivered(seqs.length, bytes); // same turn: stored with the deliveries
    return {
      result: {
        code: 0, frames: packFrames(out), sequences: Float64Array.from(seqs), deliveryIds: Float64Array.from(ids),
        sizes: Uint32Array.from(sizes), blockedBytes: blocked, drained,
      },
      bytes,
      deadline: seqs.length > 0 ? deadline : null,
    };
  }

  /** Arms the "deadlines" job for a new work deadline when it is the earliest. */
  private async armDeadline(deadline: number | null): Promise<void> {
    if (deadline !== null && (this.deadlineDue === null || deadline < this.deadlineDue)) {
      this.deadlineDue = deadline;
      await this.host.schedule.set("deadlines", deadline);
    }
  }

  /**
   * New records for an owner that is waiting and left a standing budget
   * (deliver with `carry`): they are delivered now and carried in the wake
   * (MortarSession.carry) — one call instead of a wake and a deliver. The
   * session takes all or none: declined ones are taken back
   * (GroupLedger.returned; the session, told, asks again by itself). When
   * the call fails, the deliveries stay in flight (their deadline
   * redelivers them), as for a lost deliver answer.
   */
  private async carry(l: GroupLedger, st: Standing): Promise<void> {
    const o = l.owner!;
    l.waiting = false;
    this.standing.delete(l);
    const t = this.take(l, st.caller, st.maxMsgs, st.maxBytes, false, 0);
    const r = t.result;
    const n = r.sequences.length;
    if (n === 0) {
      if (r.drained) this.standing.set(l, st);
      else {
        l.waiting = true;
        this.wake(l); // a record larger than the budget: the session asks with what it has
      }
      return;
    }
    l.waiting = false; // take() marked it when drained: not before the session answered
    await this.armDeadline(t.deadline);
    const partition = this.host.identity().partition;
    let accepted: boolean;
    try {
      accepted = await sessionStub(this.host.env, o.sessionId).carry(st.caller.subscriptionId, partition, st.epoch, r);
    } catch {
      if (l.owner === o) l.waiting = true; // unknown whether it arrived: the deliveries expire if not
      return;
    }
    if (!accepted) {
      const seqs = [...r.sequences], ids = [...r.deliveryIds];
      if (l.returned(seqs, ids) > 0) {
        this.host.storage.transactionSync(() => this.store.flush(l));
        this.host.settled();
      }
      return; // the session was told (woken) by its own answer, or is gone
    }
    if (l.owner !== o || l.ownershipEpoch !== st.epoch) return;
    l.waiting = true;
    if (r.drained) this.standing.set(l, { ...st, maxMsgs: st.maxMsgs - n, maxBytes: st.maxBytes - t.bytes });
    if (l.hasRetries() || l.next <= this.host.lastSeq()) this.offer(l); // appended while the call was out
  }

  /**
   * Settles a batch of ACK / PROGRESS / NACK RETRY / NACK REJECT of one
   * subscriber; per-operation codes (0, STALE_OWNERSHIP_EPOCH, NOT_OWNER,
   * UNKNOWN_DELIVERY, TOPIC_DELETED). A failed operation changes nothing.
   */
  async settle(req: SettleRequest): Promise<SettleResult> {
    const n = req.kinds.length;
    const codes = new Uint16Array(n);
    if (this.host.deleted()) return { codes: codes.fill(ErrorCode.TOPIC_DELETED) };
    const l = this.ledgers.get(req.group);
    if (!l) return { codes: codes.fill(ErrorCode.NOT_OWNER) };
    const now = Date.now();
    const limits = { ackWaitMs: this.host.config.ackWaitMs, maxAttempts: this.host.config.maxAttempts };
    let dead = false;
    let retry = false;
    for (let i = 0; i < n; i++) {
      const kind = req.kinds[i]!;
      codes[i] = l.settle(kind, req.sequences[i]!, req.deliveryIds[i]!, req.ownershipEpochs[i]!, req.caller, now, limits);
      if (codes[i] === 0 && (kind === SettleKind.RETRY || kind === SettleKind.REJECT)) {
        if (l.pending.get(req.sequences[i]!)?.state === DeliveryState.DEAD) dead = true;
        else retry = true;
      }
    }
    this.host.storage.transactionSync(() => this.store.flush(l));
    this.host.settled();
    if (dead) await this.scheduleDlq(now);
    if (retry) this.wake(l);
    return { codes };
  }

  /**
   * Retention deleted every record below `logStart`: each group moves up to
   * it and drops its deliveries below it (GroupLedger.truncate), flushed
   * here — call inside the deletion's transaction. Returns the follow-up to
   * run after the commit: the owners' sessions are told which in-flight
   * deliveries are gone (their credit is free again).
   */
  truncate(logStart: number): () => void {
    const dropped: [GroupLedger, { seqs: number[]; deliveryIds: number[] }][] = [];
    let skipped = 0;
    for (const l of this.ledgers.values()) {
      const t = l.truncate(logStart);
      if (t.skipped === 0) continue;
      skipped += t.skipped;
      this.store.flush(l);
      if (t.inFlight.seqs.length > 0) dropped.push([l, t.inFlight]);
    }
    return () => {
      for (const [l, d] of dropped) this.notifyExpired(l, d.seqs, d.deliveryIds);
      if (skipped > 0) this.host.settled(); // the groups' counters changed
    };
  }

  /** New records were appended: every owner that is waiting for some gets them carried, or is woken. */
  appended(): void {
    for (const l of this.ledgers.values()) this.offer(l);
  }

  /** Carries deliverable records to a waiting owner that left a standing budget (still the owner, same epoch), else wakes it. */
  private offer(l: GroupLedger): void {
    const st = this.standing.get(l);
    if (st && l.waiting && l.owner && !this.paused(l.name, Date.now()) && l.check(st.epoch, st.caller) === 0) {
      void this.carry(l, st).catch(() => {});
      return;
    }
    this.wake(l);
  }

  /**
   * Runs a read-path alarm job; returns false for jobs it does not own.
   * "deadlines": expired deliveries go up for redelivery (or to the twin
   * after the last attempt). "dlq": moves dead letters to the twin.
   */
  async runJob(job: string, now: number): Promise<boolean> {
    if (job === "deadlines") {
      let dead = false;
      const woken: GroupLedger[] = [];
      const expired: [GroupLedger, { seqs: number[]; deliveryIds: number[] }][] = [];
      this.host.storage.transactionSync(() => {
        for (const l of this.ledgers.values()) {
          const e = { seqs: [] as number[], deliveryIds: [] as number[] };
          if (l.expire(now, this.host.config.maxAttempts, e) === 0) continue;
          expired.push([l, e]);
          if (l.count(DeliveryState.DEAD) > 0) dead = true;
          if (l.hasRetries()) woken.push(l);
          this.store.flush(l);
        }
      });
      let next: number | null = null;
      for (const l of this.ledgers.values()) {
        const d = l.nextDeadline();
        if (d !== null && (next === null || d < next)) next = d;
      }
      this.deadlineDue = next;
      if (next === null) this.host.schedule.clear("deadlines");
      else this.host.schedule.put("deadlines", next);
      if (dead) this.host.schedule.put("dlq", now);
      for (const [l, e] of expired) this.notifyExpired(l, e.seqs, e.deliveryIds);
      for (const l of woken) this.wake(l);
      return true;
    }
    if (job === "pause") {
      for (const [group, until] of [...this.pauses]) {
        if (until > now) continue;
        this.host.storage.transactionSync(() => this.store.setPause(group, null));
        this.pauses.delete(group);
        const l = this.ledgers.get(group);
        if (l) this.wake(l);
      }
      this.putPauseJob();
      return true;
    }
    if (job === "dlq") {
      this.host.schedule.clear("dlq");
      try {
        await this.transferDeadLetters();
      } catch {
        this.host.schedule.put("dlq", now + DLQ_RETRY_MS);
      }
      return true;
    }
    return false;
  }

  /** Positions and counters of every group at this partition. */
  info(): GroupCursorInfo[] {
    return [...this.ledgers.values()].map(cursorInfo);
  }

  // ------------------------------------------------------------ internals

  private nextDeliveryId(): number {
    if (this.deliveryCounter >= 0xffff_ffff) {
      this.deliveryEpoch++;
      this.deliveryCounter = 0;
      this.host.setMeta("delivery_epoch", this.deliveryEpoch);
    }
    return this.deliveryEpoch * 0x1_0000_0000 + ++this.deliveryCounter;
  }

  private async scheduleDlq(now: number): Promise<void> {
    const due = this.host.schedule.get("dlq");
    if (due === null || due > now) await this.host.schedule.set("dlq", now);
  }

  /** True while `group` is paused at `now`. */
  private paused(group: string, now: number): boolean {
    const until = this.pauses.get(group);
    return until !== undefined && until > now;
  }

  /** Arms the "pause" job for the earliest pause end (or clears it) and re-arms the alarm. */
  private async schedulePauses(): Promise<void> {
    this.putPauseJob();
    await this.host.schedule.rearm();
  }

  private putPauseJob(): void {
    let next: number | null = null;
    for (const until of this.pauses.values()) if (next === null || until < next) next = until;
    if (next === null) this.host.schedule.clear("pause");
    else this.host.schedule.put("pause", next);
  }

  private wake(l: GroupLedger): void {
    const o = l.owner;
    if (!l.waiting || !o || this.paused(l.name, Date.now())) return;
    l.waiting = false;
    const retry = () => {
      if (l.owner === o) l.waiting = true; // not delivered: try again with the next new record
    };
    try {
      void sessionStub(this.host.env, o.sessionId).wake(o.subscriptionId, this.host.identity().partition).catch(retry);
    } catch {
      retry(); // never let a wake-up fail the append that caused it
    }
  }

  /**
   * Tells the owner's session that these deliveries passed their work
   * deadline, or that retention deleted their records: their credit is
   * free again (an ACK of them is refused now), so a window full of them
   * does not stop what comes next. Best effort: a session that is gone
   * holds no window.
   */
  private notifyExpired(l: GroupLedger, seqs: number[], deliveryIds: number[]): void {
    const o = l.owner;
    if (!o) return;
    try {
      void sessionStub(this.host.env, o.sessionId).expired(o.subscriptionId, this.host.identity().partition, seqs, deliveryIds).catch(() => {});
    } catch {
      /* never fail the alarm job for a notification */
    }
  }

  /**
   * Appends dead letters to the `.dlq` twin (same partition index) in
   * batches; they are settled once the twin committed them. Called while a
   * transfer is running (its alarm job fired again), it makes the running
   * one pass over every group once more, so dead letters of a group it had
   * already passed are not left behind.
   */
  private transferDeadLetters(): Promise<void> {
    if (this.transfer) {
      this.transferAgain = true;
      return Promise.resolve();
    }
    this.transfer = (async () => {
      do {
        this.transferAgain = false;
        await this.transferPass();
      } while (this.transferAgain);
    })().finally(() => {
      this.transfer = null;
    });
    return this.transfer;
  }

  /** Resolves once no dead-letter transfer is running (a tenant purge waits for it: nothing reaches the twin afterwards). */
  async idle(): Promise<void> {
    while (this.transfer) await this.transfer.catch(() => {});
  }

  /** One pass over every group's dead letters (transferDeadLetters). */
  private async transferPass(): Promise<void> {
    const id = this.host.identity();
    const twin = partitionStub(this.host.env, id.tenant, id.incarnation, id.topicId + 1, id.partition);
    for (const l of this.ledgers.values()) {
      for (;;) {
        const dead = l.deadLetters(DLQ_BATCH);
        if (dead.length === 0) break;
        const batch = new PubBatchBuilder();
        const seqs: number[] = [];
        for (const d of dead) {
          if (seqs.length > 0 && batch.length >= DLQ_BATCH_BYTES) break;
          let found = false;
          this.host.log.scan(d.seq, (s, f, ts) => {
            if (s !== d.seq) return false;
            found = true;
            const value = encodeDeadLetter({
              reason: d.reason, topicId: id.topicId, partition: id.partition, sequence: BigInt(d.seq),
              attempts: d.attempt, publishedAt: ts, deadLetteredAt: Date.now(), group: l.name,
            }, f.value);
            batch.add({ ...f, topicId: id.topicId + 1, value });
            return false;
          });
          if (found) seqs.push(d.seq);
          else l.forget(d.seq);
        }
        // A `.dlq` twin (even topic_id) has no twin of its own: its dead letters are settled without a copy.
        if (seqs.length > 0 && id.topicId % 2 === 1) {
          const r = (await twin.appendDeadLetters(batch.finish())) as AppendResult;
          if (r.error && r.error.code !== ErrorCode.TOPIC_DELETED) throw new Error(r.error.message);
        }
        l.deadLettered(seqs);
        this.host.storage.transactionSync(() => this.store.flush(l));
        this.host.settled();
      }
    }
  }
}

/** A ledger's position and counters as `info()` / `cursor()` answer them. */
function cursorInfo(l: GroupLedger): GroupCursorInfo {
  return {
    group: l.name, ownershipEpoch: l.ownershipEpoch, ownerMemberId: l.owner?.memberId ?? 0,
    ackFloor: l.ackFloor(), nextSequence: l.next,
    inFlight: l.count(DeliveryState.IN_FLIGHT), pendingRedelivery: l.count(DeliveryState.RETRY), pendingDeadLetter: l.count(DeliveryState.DEAD),
    ...l.counters,
  };
}

function empty(code: number, message?: string): DeliverResult {
  return { code, message, frames: NONE, sequences: new Float64Array(0), deliveryIds: new Float64Array(0), sizes: new Uint32Array(0), blockedBytes: 0 };
}
