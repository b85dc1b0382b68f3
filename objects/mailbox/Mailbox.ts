/**
 * Mailbox Durable Object: one mq9 mailbox (one per tenant + mail_address,
 * named `objectName("mailbox", tenant, address)`). Implements MSG.SEND /
 * FETCH / ACK / QUERY / DELETE and PUSH.* of the mq9 spec with the
 * decisions of DESIGN.md §5 and docs/mq9.md. MAILBOX.CREATE writes only the
 * mailbox's row in the tenant's MailboxIndex; this object takes the row
 * over on the mailbox's first request (materialize, docs/mq9.md "Mailbox
 * index").
 *
 * Every RPC: catch up on due schedule rows → decide with the pure modules
 * (cursor.ts, schedule.ts, batch.ts, waiters.ts) → persist in one
 * `transactionSync` (all SQL in store.ts) → reply. Delayed deliveries, message TTLs, the mailbox TTL and long-poll
 * deadlines all share the object's one alarm (schedule.ts).
 */
import type { MailboxDetail } from "../../wire/admin/console";
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import {
  MAX_GROUPS_PER_MAILBOX,
  MAX_PENDING_FETCHES,
  MAX_REPLY_PAYLOAD_BYTES,
  Mq9Error,
  echo,
  mq9Messages,
  priorityOfLane,
  type DeliverPolicy,
  type FetchSpec,
  type Mq9Message,
  type Mq9SendOptions,
  type PushCreateSpec,
  type PushInfo,
  type QuerySpec,
} from "../../wire/mq9";
import { ReplyBudget } from "./batch";
import { newMessage, planSendWrites } from "./send-path";
import { readBatch, startId } from "./read-path";
import { applyAck, cursorAt, laneFromLastBatch, openGroup, recordBatch } from "./cursor";
import { GroupCommit } from "../shared/groupcommit";
import { dueAt } from "./schedule";
import { AlarmScheduler, earliest } from "../shared/scheduler";
import { MailboxStore, toMq9Message, type MailboxMeta, type NewMessage, type StoredMessage } from "./store";
import { packSendResult, type MailboxResult, type MessagesResult, type PackedSendResult, type SendResult } from "./rpc";
import { WaiterSet } from "./waiters";
import { MailboxTelemetry } from "./telemetry";
import { IndexSync } from "./index-sync";
import { mailboxIndexStub } from "../mailbox-index/stub";
import type { IndexedMailbox } from "../mailbox-index/rpc";
import { nameToRemember, rememberName } from "../shared/object-name";
import { mq9Fault } from "../mq9/faults";
import { tenantOfName } from "../shared/names";
import { tenantStub } from "../tenants/stub";
import { mailboxStub } from "./stub";
import { PushDriver, type DeadLetterCopy } from "./push/driver";
import { PushStore } from "./push/store";
import { readMailboxConfig } from "./config";
import { a2aReceiverOp, type A2aReceiverOp } from "./a2a-receiver-store";

/** Due schedule rows handled per SQL round while catching up. */
const DUE_BATCH = 256;

type SendItem = { address: string; opts: Mq9SendOptions; payload: Uint8Array };

/** A failed RPC result. */
type Failure = Extract<MailboxResult, { ok: false }>;

/**
 * One mq9 mailbox. RPC methods (called by the mq9 service,
 * objects/mq9/dispatch.ts, through `mailboxStub`, stub.ts) return
 * `MailboxResult`s (rpc.ts) and never throw for mq9 errors. `address` is
 * passed on every call for the spec's error strings.
 */
/** Groups listed by `describe`. */
const DESCRIBED_GROUPS = 100;

/** What `describe` answers (the console's mailbox page without the tenant). */
export type MailboxDescription = Omit<MailboxDetail, "tenant">;

export class Mailbox extends DurableObject<Env> {
  private readonly store: MailboxStore;
  /** Cached mailbox row; null = no mailbox. */
  private meta: MailboxMeta | null = null;
  /** Cached earliest `schedule.due_ms`. */
  private nextDueMs: number | null = null;
  /**
   * Highest msg_id appended per lane (-1 = none); lets FETCH skip lanes with
   * nothing at or above the floor. May be stale-high after deletions, which
   * only costs a query.
   */
  private laneTops: number[] = [-1, -1, -1];
  /** The one alarm (shared/scheduler.ts): due schedule rows, long-poll deadlines, telemetry, index retries, push. */
  private readonly scheduler: AlarmScheduler;
  private readonly waiters = new WaiterSet();
  private readonly sends: GroupCommit<SendItem, SendResult>;
  /** Counters for /metrics and usage (telemetry.ts). */
  private readonly telemetry: MailboxTelemetry;
  /** When the telemetry wants its flush (ms), shares the one alarm; null = nothing to report. */
  private telemetryDue: number | null = null;
  /** The object's name (`mailbox/<tenant>/<address>`), null when never addressed by name. */
  private readonly name: string | null;
  /** The name is not stored yet: the next CREATE stores it in its transaction (nameToRemember). */
  private nameUnsaved: boolean;
  private readonly pushStore: PushStore;
  /** Push subscriptions and their deliveries (push/driver.ts). */
  private readonly push: PushDriver;
  /** The tenant's mailbox index entry (index-sync.ts). */
  private readonly index: IndexSync;
  /** When a failed index update is retried (ms), shares the one alarm; null = nothing pending. */
  private indexDue: number | null = null;
  /** The mailbox's tenant (from the object's name); null = not addressed by name (no index to ask). */
  private readonly tenant: string | null;
  /** The claim of this mailbox's index row in flight (materialize); null = none. */
  private materializing: Promise<Failure | null> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new MailboxStore(ctx.storage.sql);
    this.pushStore = new PushStore(ctx.storage.sql);
    const named = nameToRemember(ctx);
    this.name = named.name;
    this.nameUnsaved = named.unsaved;
    this.sends = new GroupCommit<SendItem, SendResult>(
      (item) => this.applySend(item),
      () => {
        try {
          this.push.afterSends(Date.now()); // attempts of the messages just sent start in the SENDs' commit
        } catch {
          // the alarm's loop (woken by the SEND) starts them and meets the error there
        }
        this.telemetry.persist(); // the group's SEND counts commit with the group
        this.index.settle(); // an acknowledged index add's row goes with it
        return ctx.storage.sync();
      },
      (e) => failure(e),
      (items) => this.applySends(items),
    );
    this.telemetry = new MailboxTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), name: this.name ?? undefined,
      levels: () => ({
        exists: this.meta !== null, heldFetches: this.waiters.size, storedBytes: this.meta ? this.store.storedBytes() : 0,
        pushes: this.push.size, pushInFlight: this.push.attemptsInFlight, pushBacklog: this.meta ? this.push.backlog(Date.now()) : 0,
      }),
      schedule: (at) => {
        this.telemetryDue = earliest(this.telemetryDue, at);
        this.rearm();
      },
    });
    const tenant = tenantOfName(this.name);
    this.tenant = tenant;
    const { attemptsPerLease, ...pushConfig } = readMailboxConfig(env);
    this.push = new PushDriver({
      storage: ctx.storage, store: this.store, pushes: this.pushStore, telemetry: this.telemetry,
      ...pushConfig,
      meta: () => this.meta,
      laneTops: () => this.laneTops,
      rearm: () => this.rearm(),
      kick: () => this.scheduler.kick(),
      keepArmed: (now) => this.scheduler.keepArmed(now),
      deadLetter: async (dlq, ttlSec, copy) => {
        if (tenant === null) return { ok: false, code: "internal", error: "the mailbox has no tenant (not addressed by name)" };
        return await mailboxStub(env, tenant, dlq).deadLetter(dlq, ttlSec, copy);
      },
      leaseAttempts: async () => (tenant === null ? Infinity : await tenantStub(env, tenant).leasePushAttempts(attemptsPerLease)),
      random: Math.random,
      fillRandom: (b) => crypto.getRandomValues(b),
    });
    this.index = new IndexSync(ctx.storage, env, tenant, (at) => {
      this.indexDue = at;
      this.rearm();
    });
    this.scheduler = new AlarmScheduler(ctx.storage, { owner: "Mailbox" })
      .part("messages", { due: () => this.nextDueMs, run: () => void this.catchUp() })
      .part("waiters", { due: () => this.waiters.earliestDeadline(), run: (now) => this.waiters.expireDue(now) })
      .part("telemetry", {
        due: () => this.telemetryDue,
        run: async () => {
          this.telemetryDue = null;
          this.rearm();
          await this.telemetry.flush(); // a failed flush re-schedules itself
        },
      })
      .part("index", {
        due: () => this.indexDue,
        run: () => {
          this.indexDue = null;
          void this.index.push().then((ok) => { if (ok) this.settle(); });
        },
      })
      .part("push", {
        due: () => this.push.dueAt(),
        run: (now) => { if (this.meta) this.push.step(now); },
        live: {
          begin: () => this.push.beginRun(),
          holds: (now) => !this.push.done(now),
          wake: () => this.push.nextWake(),
          end: (now) => this.push.endRun(now),
        },
      });
    void ctx.blockConcurrencyWhile(async () => {
      await this.scheduler.armed();
      this.meta = this.store.loadMeta();
      this.nextDueMs = this.store.earliestDue();
      this.laneTops = this.store.laneTops();
      if (this.meta) this.push.load(Date.now());
      this.telemetry.resume();
      this.index.resume();
      this.rearm(); // a subscription with work found on load gets its alarm
    });
  }

  /**
   * Whether a request can run at once: the mailbox is here and its TTL has
   * not ended — else (or an object not addressed by name) it first asks the
   * index (materialize).
   */
  private here(): boolean {
    const m = this.meta;
    return m !== null && (m.expiresMs === null || m.expiresMs > Date.now());
  }

  /**
   * Runs `op` once the mailbox is here: at once when it is (the usual
   * case, no promise), else after {@link materialize}; `failed` turns a
   * failed index call into `op`'s kind of answer (default: the failure itself, a MailboxResult). `createTtlSec`: a
   * dead-letter mailbox, created in the index when missing.
   */
  private whenHere<T>(address: string, op: () => T | Promise<T>, failed: (f: Failure) => T = (f) => f as T, createTtlSec?: number): T | Promise<T> {
    const wait = this.ready(address, createTtlSec);
    return wait === null ? op() : wait.then((f) => (f ? failed(f) : op()));
  }

  /** Null when requests can run at once (here, or no index to ask); else {@link materialize}'s promise. */
  private ready(address: string, createTtlSec?: number): Promise<Failure | null> | null {
    return this.tenant === null || this.here() ? null : this.materialize(address, createTtlSec);
  }

  /**
   * The mailbox exists only as its row in the tenant's MailboxIndex until
   * its first request (docs/mq9.md "Mailbox index", #14 item 3: a CREATE
   * opens no database): claims the row (the index marks it materialized)
   * and stores the mailbox here with the row's creation time and TTL — after
   * expiring a mailbox here whose TTL ended. No row: nothing is stored (the
   * request then answers `mailbox X does not exist`). Concurrent requests
   * share one claim and run in arrival order after it. Resolves the
   * failure when the index could not be asked, else null.
   */
  private materialize(address: string, createTtlSec?: number): Promise<Failure | null> {
    this.materializing ??= this.claimRow(address, createTtlSec).finally(() => {
      this.materializing = null;
    });
    return this.materializing;
  }

  private async claimRow(address: string, createTtlSec: number | undefined): Promise<Failure | null> {
    try {
      const row = await mailboxIndexStub(this.env, this.tenant!).claim(address, Date.now(), createTtlSec);
      this.catchUp(); // a mailbox here whose TTL ended goes first
      if (!this.meta && row) this.adopt(row);
      return null;
    } catch (e) {
      return failure(e);
    }
  }

  /**
   * Stores the mailbox of index row `row` here (none is here). Everything
   * is written in this one synchronous turn, so workerd commits it once,
   * with the request that materialized it: the object's name (when not
   * stored yet), the schema and mailbox row, its usage report (telemetry.ts
   * `created`: the mailbox gauge counts it here now) and its TTL alarm. The
   * report is sent after that commit; once acknowledged its row is dropped
   * in the next write turn.
   */
  private adopt(row: IndexedMailbox): MailboxMeta {
    const ttlSec = row.expires_ms === null ? 0 : Math.round((row.expires_ms - row.created_ms) / 1000);
    const meta: MailboxMeta = { address: row.address, createdMs: row.created_ms, ttlSec, expiresMs: row.expires_ms, nextMsgId: 0 };
    this.ctx.storage.transactionSync(() => {
      if (this.nameUnsaved) rememberName(this.ctx, this.name);
      this.store.createMailbox(meta);
    });
    this.nameUnsaved = false;
    this.meta = meta;
    void this.telemetry.created()?.then((ok) => { if (ok) this.settle(); });
    this.nextDueMs = earliest(this.nextDueMs, meta.expiresMs);
    this.rearm();
    return meta;
  }

  /** Drops the acknowledged index update and usage report rows (one turn, one commit). */
  private settle(): void {
    this.index.settle();
    this.telemetry.settle();
  }

  /**
   * MSG.SEND: stores `payload` (opaque bytes) with the header options.
   * Returns the new msg_id, or -1 for a delayed message (it gets its id
   * when due, keeping key, tags, priority and TTL). SENDs arriving while a
   * commit is in flight share the next one (shared/groupcommit.ts).
   */
  send(address: string, opts: Mq9SendOptions, payload: Uint8Array): SendResult | Promise<SendResult> {
    const wait = this.ready(address);
    if (wait === null) return this.sends.submit({ address, opts, payload }); // the hot path: no closure
    return wait.then((f) => f ?? this.sends.submit({ address, opts, payload }));
  }

  /**
   * Several MSG.SENDs to this mailbox in one call (a NATS connection
   * pipelining SENDs, see objects/mq9/sendbatch.ts): SEND i has `opts[i]`
   * and `payloads[i]` (two arrays, not one object per SEND: less to
   * (de)serialize). Applied in order in one turn, sharing one commit; one
   * result per SEND, as `send` would answer, packed (rpc.ts packSendResult).
   */
  sendMany(address: string, opts: readonly Mq9SendOptions[], payloads: readonly Uint8Array[]): PackedSendResult[] | Promise<PackedSendResult[]> {
    const submit = () => {
      const rs = this.sends.submitAll(payloads.map((payload, i) => ({ address, opts: opts[i]!, payload })));
      return Array.isArray(rs) ? rs.map(packSendResult) : rs.then((all) => all.map(packSendResult));
    };
    return this.whenHere(address, submit, (f) => payloads.map(() => packSendResult({ ...f })));
  }

  /**
   * Several SENDs in one turn (a `sendMany`, or a group commit's waiting
   * SENDs), in order, with the results applySend would give each: every
   * run of plain SENDs (no key, no delay) is stored with one statement per
   * 11 messages (MailboxStore.appendVisibleMany); the others one at a time.
   */
  private applySends(items: readonly SendItem[]): SendResult[] {
    const out: SendResult[] = [];
    for (const w of planSendWrites(items.map((i) => i.opts))) {
      if (w.kind === "one") out.push(this.applySend(items[w.at]!));
      else for (const r of this.appendPlain(items.slice(w.from, w.to))) out.push(r); // no spread: an unbounded run
    }
    return out;
  }

  /** Plain SENDs (no key, no delay) stored together; all fail alike when the mailbox is missing or the write fails. */
  private appendPlain(items: readonly SendItem[]): SendResult[] {
    let first: number;
    let ms: NewMessage[];
    let now: number;
    try {
      now = this.catchUp();
      const meta = this.requireMailbox(items[0]!.address);
      first = meta.nextMsgId;
      ms = items.map((i) => newMessage(i.opts, i.payload, now));
      this.atomically(this.store.appendIsOneStatement(ms), () => this.store.appendVisibleMany(first, ms, now));
      meta.nextMsgId = first + ms.length;
    } catch (e) {
      const f = failure(e);
      return items.map(() => ({ ...f }));
    }
    let bytes = 0;
    ms.forEach((m, i) => {
      bytes += m.payload.byteLength;
      this.laneTops[m.lane] = first + i;
      this.nextDueMs = earliest(this.nextDueMs, m.expiresMs);
    });
    this.telemetry.sent(bytes, ms.length);
    this.waiters.wake();
    this.push.onVisible(now);
    this.rearm();
    return ms.map((_, i) => ({ ok: true as const, msgId: first + i }));
  }

  private applySend({ address, opts, payload }: SendItem): SendResult {
    return this.run(() => {
      const now = this.catchUp();
      const meta = this.requireMailbox(address);
      const m = newMessage(opts, payload, now);
      if (opts.delaySec > 0) {
        const due = dueAt(now, opts.delaySec);
        this.ctx.storage.transactionSync(() => this.store.addDelayed(m, due));
        this.telemetry.sent(payload.byteLength);
        this.nextDueMs = earliest(this.nextDueMs, due);
        this.rearm();
        return { msgId: -1 };
      }
      const msgId = meta.nextMsgId;
      this.atomically(this.store.appendIsOneStatement([m]), () => this.store.appendVisible(msgId, m, now));
      this.telemetry.sent(payload.byteLength);
      meta.nextMsgId = msgId + 1;
      this.laneTops[m.lane] = msgId;
      this.nextDueMs = earliest(this.nextDueMs, m.expiresMs);
      this.waiters.wake();
      this.push.onVisible(now);
      this.rearm();
      return { msgId };
    });
  }

  /**
   * MSG.FETCH: up to `numMsgs` messages in delivery order from the group's
   * floors (stateful) or from `deliver` (stateless). With nothing to
   * deliver and `maxWaitMs` > 0 the request is held and answered as soon as
   * a message becomes visible, or empty at the deadline. `waiterId` (unique
   * per request, chosen by the caller) lets {@link cancelFetch} release the
   * held request when its client goes away.
   */
  async fetchMessages(address: string, spec: FetchSpec, waiterId: string | null = null): Promise<MessagesResult> {
    return await this.whenHere(address, async () => await this.sends.after(() => this.fetchNow(address, spec, waiterId)));
  }

  private async fetchNow(address: string, spec: FetchSpec, waiterId: string | null): Promise<MessagesResult> {
    try {
      const now = this.catchUp();
      this.requireMailbox(address);
      const read = this.openFetch(address, spec);
      const first = read();
      if (first || spec.maxWaitMs === 0) return { ok: true, messages: first ?? [] };
      return await this.hold(address, waiterId, now + spec.maxWaitMs, read);
    } catch (e) {
      return failure(e);
    }
  }

  /**
   * Opens a FETCH's position and returns its reader (the next batch, or
   * null when nothing is there). Stateless: a fixed start from `deliver`.
   * Stateful: the group per {@link openGroup} — a new or force_deliver'd
   * group's cursor is saved now (so a `latest` group sees what is sent
   * after its first FETCH), a new group past MAX_GROUPS_PER_MAILBOX is
   * refused (too_many_requests).
   */
  private openFetch(address: string, spec: FetchSpec): () => Mq9Message[] | null {
    const group = spec.group;
    if (group === null) {
      const floors = cursorAt(this.startId(spec.deliver)).floors;
      return () => this.readStateless(floors, spec.numMsgs);
    }
    this.refusePushed(address, group, "FETCH");
    const opening = openGroup(
      this.store.loadGroup(group), spec.forceDeliver,
      () => this.store.groupCount(), () => this.startId(spec.deliver), MAX_GROUPS_PER_MAILBOX,
    );
    if (opening.kind === "full") {
      throw new Mq9Error(
        "too_many_requests",
        `mailbox ${echo(address)} already has ${MAX_GROUPS_PER_MAILBOX} consumer groups: reuse an existing group_name or FETCH without one (stateless)`,
      );
    }
    if (opening.kind === "start") this.ctx.storage.transactionSync(() => this.store.saveGroup(group, opening.cursor));
    return () => this.readForGroup(group, spec.numMsgs);
  }

  /** One stateless FETCH attempt from fixed `floors`; counts what it returns. */
  private readStateless(floors: number[], numMsgs: number): Mq9Message[] | null {
    const batch = this.readBatch(floors, numMsgs, Date.now());
    if (batch.length === 0) return null;
    this.telemetry.returned("fetch", batch.length, payloadBytes(batch));
    return batch.map(toMq9Message);
  }

  /**
   * One stateful FETCH attempt from the group's stored floors (read again
   * each time: an ACK may have moved them while the request was held);
   * records the batch on the cursor and commits it with the counts.
   */
  private readForGroup(group: string, numMsgs: number): Mq9Message[] | null {
    if (this.push.pushIdOf(group) !== null) return null; // pushed since this FETCH was held
    const cursor = this.store.loadGroup(group);
    if (!cursor) return null;
    const batch = this.readBatch(cursor.floors, numMsgs, Date.now());
    if (batch.length === 0) return null;
    const next = recordBatch(cursor, batch.map((m) => ({ lane: m.lane, msgId: m.msgId })));
    this.ctx.storage.transactionSync(() => this.store.saveGroup(group, next));
    this.telemetry.returned("fetch", batch.length, payloadBytes(batch));
    this.telemetry.persist(); // commits with the cursor
    return batch.map(toMq9Message);
  }

  /**
   * Holds a FETCH that found nothing (long-poll): `read` is tried again
   * whenever messages become visible and answers as soon as it finds some;
   * at `deadline` (ms) the request is answered with what `read` finds then
   * (usually nothing). `waiterId` lets {@link cancelFetch} release it.
   * Refused (too_many_requests) while MAX_PENDING_FETCHES are held.
   */
  private async hold(
    address: string, waiterId: string | null, deadline: number, read: () => Mq9Message[] | null,
  ): Promise<MessagesResult> {
    if (this.waiters.size >= MAX_PENDING_FETCHES) {
      throw new Mq9Error("too_many_requests", `mailbox ${echo(address)} already holds ${MAX_PENDING_FETCHES} waiting FETCH requests`);
    }
    this.telemetry.touch(); // a long-poll is held (and again when it is answered, below)
    const held = await new Promise<MessagesResult>((resolve) => {
      this.waiters.add({
        id: waiterId,
        deadline,
        poll: () => {
          const messages = read();
          if (messages) resolve({ ok: true, messages });
          return messages !== null;
        },
        expire: () => resolve({ ok: true, messages: read() ?? [] }),
        fail: (e) => resolve(failure(e)),
      });
      this.rearm();
    });
    this.telemetry.touch();
    return held;
  }

  /**
   * Releases the held long-poll FETCH `waiterId` (its HTTP client
   * disconnected or its NATS connection closed), freeing its slot of
   * MAX_PENDING_FETCHES at once instead of at its deadline. The held call
   * is answered empty; nobody reads it. Returns false when no such FETCH is
   * held (already answered). Must be called on the same stub as the FETCH,
   * after it: calls on one stub are delivered in order.
   */
  cancelFetch(waiterId: string): boolean | Promise<boolean> {
    // in order behind a FETCH that still waits for the commit in flight (fetchMessages)
    return this.sends.after(() => {
      const cancelled = this.waiters.cancel(waiterId);
      if (cancelled) this.rearm();
      return cancelled;
    });
  }

  /** Long-poll FETCHes held right now (at most MAX_PENDING_FETCHES); for diagnostics and tests. */
  heldFetches(): number {
    return this.waiters.size;
  }

  /**
   * MSG.ACK: advances `group`'s floors per the rule in cursor.ts (never
   * backwards, never past an undelivered message of another lane).
   * Errors: `message not found` for a msg_id never assigned; unknown group;
   * a msg_id above the highest of its lane delivered to the group (409).
   */
  ack(address: string, group: string, msgId: number): MailboxResult | Promise<MailboxResult> {
    return this.whenHere(address, () => this.ackNow(address, group, msgId));
  }

  private ackNow(address: string, group: string, msgId: number): MailboxResult | Promise<MailboxResult> {
    return this.sends.after(() => this.run(() => {
      this.catchUp();
      const meta = this.requireMailbox(address);
      if (msgId >= meta.nextMsgId) throw new Mq9Error("message_not_found", mq9Messages.messageNotFound());
      this.refusePushed(address, group, "ACK");
      const cursor = this.store.loadGroup(group);
      if (!cursor) throw new Mq9Error("group_not_found", `consumer group ${echo(group)} has not fetched from mailbox ${echo(address)}`);
      // A message that is gone and was not in the last batch has nothing left to acknowledge.
      const lane = this.store.laneOf(msgId) ?? laneFromLastBatch(cursor, msgId);
      if (lane === null) return {};
      const r = applyAck(cursor, lane, msgId);
      if (!r.ok) throw new Mq9Error("message_not_delivered", mq9Messages.notDelivered(msgId, group, priorityOfLane(lane), r.highestDelivered));
      if (r.changed) this.ctx.storage.transactionSync(() => this.store.saveGroup(group, r.cursor));
      return {};
    }));
  }

  /**
   * MSG.QUERY: visible messages matching every filter (AND), the newest
   * `limit` of them, returned in msg_id order. Moves no cursor.
   */
  query(address: string, spec: QuerySpec): MessagesResult | Promise<MessagesResult> {
    return this.whenHere(address, () => this.queryNow(address, spec));
  }

  private queryNow(address: string, spec: QuerySpec): MessagesResult | Promise<MessagesResult> {
    return this.sends.after(() => this.run(() => {
      const now = this.catchUp();
      this.requireMailbox(address);
      const budget = new ReplyBudget(spec.limit, MAX_REPLY_PAYLOAD_BYTES);
      const picked: StoredMessage[] = [];
      for (const m of this.store.queryNewestFirst(spec, now)) {
        if (!budget.admit(m.size)) break;
        picked.push(m);
      }
      this.telemetry.returned("query", picked.length, payloadBytes(picked));
      return { messages: picked.reverse().map(toMq9Message) };
    }));
  }

  /**
   * The mailbox's state for the console (`GET /v0/mailboxes/:address`,
   * docs/console.md): creation, TTL, the next msg_id, unexpired messages and
   * payload bytes per priority lane, delayed messages, and the first 100
   * consumer groups by name with their ack floor and highest delivered
   * msg_id per lane. Moves nothing. Error `mailbox X does not exist`.
   */
  describe(address: string): MailboxResult<{ detail: MailboxDescription }> | Promise<MailboxResult<{ detail: MailboxDescription }>> {
    return this.whenHere(address, () => this.describeNow(address));
  }

  private describeNow(address: string): MailboxResult<{ detail: MailboxDescription }> | Promise<MailboxResult<{ detail: MailboxDescription }>> {
    return this.sends.after(() => this.run(() => {
      const now = this.catchUp();
      const meta = this.requireMailbox(address);
      const lanes = this.store.laneCounts(now);
      const lane = (i: number) => lanes[i]!;
      const perLane = <T,>(f: (i: number) => T) => ({ critical: f(0), urgent: f(1), normal: f(2) });
      const detail: MailboxDescription = {
        mail_address: meta.address,
        created_at: new Date(meta.createdMs).toISOString(),
        expires_at: meta.expiresMs === null ? null : new Date(meta.expiresMs).toISOString(),
        ttl: meta.ttlSec,
        next_msg_id: meta.nextMsgId,
        lanes: perLane(lane),
        delayed: this.store.delayedCount(),
        groups: this.store.groupsPage(DESCRIBED_GROUPS).map(({ name, cursor }) => ({
          group_name: name,
          floors: perLane((i) => cursor.floors[i]!),
          delivered: perLane((i) => (cursor.delivered[i]! >= 0 ? cursor.delivered[i]! : null)),
        })),
        groups_total: this.store.groupCount(),
      };
      return { detail };
    }));
  }

  /** MSG.DELETE: removes one visible message. Error `message not found`. */
  deleteMessage(address: string, msgId: number): MailboxResult<{ deleted: true }> | Promise<MailboxResult<{ deleted: true }>> {
    return this.whenHere(address, () => this.deleteNow(address, msgId));
  }

  private deleteNow(address: string, msgId: number): MailboxResult<{ deleted: true }> | Promise<MailboxResult<{ deleted: true }>> {
    return this.sends.after(() => this.run(() => {
      this.catchUp();
      const meta = this.requireMailbox(address);
      const gone = this.ctx.storage.transactionSync(() => this.store.deleteMessage(msgId, meta.nextMsgId));
      if (!gone) throw new Mq9Error("message_not_found", mq9Messages.messageNotFound());
      this.telemetry.touch();
      return { deleted: true as const };
    }));
  }

  /**
   * Tenant purge (docs/tenants.md "Deleting a tenant"): after the SEND
   * commit in flight, drops the mailbox and every message (held FETCHes get
   * `mailbox X does not exist`), waits for a usage report in flight, and
   * deletes all of the object's storage and its alarm; nothing counted before
   * is reported. The object is usable again afterwards (a CREATE of the same
   * address starts empty). Idempotent.
   */
  async purge(): Promise<void> {
    await this.sends.after(() => {
      const address = this.meta?.address ?? "";
      this.meta = null;
      this.nextDueMs = null;
      this.laneTops = [-1, -1, -1];
      this.push.clear(); // attempts in flight are aborted, their answers ignored; the push tables go with deleteAll
      this.waiters.failAll(new Mq9Error("mailbox_not_found", mq9Messages.mailboxNotFound(address)));
      this.telemetryDue = null;
      this.index.forget();
    });
    await this.telemetry.abandon();
    await this.scheduler.stop();
    await this.ctx.storage.deleteAll();
    this.nameUnsaved = this.name !== null; // deleteAll took the name: a later CREATE stores it again
  }

  /**
   * PUSH.CREATE (docs/push.md): a push subscription delivering consumer
   * group `spec.group` to `spec.url` (already checked against the
   * deployment's URL policy). Answers the push_id, and the secret when it
   * was generated, the mailbox's TTL (s, for its dead-letter mailbox), and
   * `reported`: the tenant's aggregator already counts
   * it (the telemetry is flushed before the answer; TenantDirectory.confirmPush).
   * Errors: mailbox missing, group_pushed, too_many_requests.
   */
  async createPush(address: string, spec: PushCreateSpec): Promise<MailboxResult<{ pushId: string; secret?: string; ttlSec: number; reported: boolean }>> {
    const f = await this.ready(address);
    if (f) return f;
    const r = await this.sends.after(() => this.run(() => {
      const now = this.catchUp();
      const meta = this.requireMailbox(address);
      return { ...this.push.create(meta, spec, () => this.startId(spec.deliver), now), ttlSec: meta.ttlSec };
    }));
    return r.ok ? { ...r, reported: await this.telemetry.flush() } : r;
  }

  /** The mailbox's A2A receiver token: set, delete or check it (a2a-receiver-store.ts). Error: mailbox missing. */
  a2aReceiver(address: string, op: A2aReceiverOp): MailboxResult<{ valid: boolean }> | Promise<MailboxResult<{ valid: boolean }>> {
    return this.whenHere(address, () => this.sends.after(() => this.run(() => {
      this.catchUp();
      this.requireMailbox(address);
      return a2aReceiverOp(this.ctx.storage.sql, op);
    })));
  }

  /** PUSH.LIST: the mailbox's push subscriptions with their counters (never the secret). */
  listPushes(address: string): MailboxResult<{ pushes: PushInfo[] }> | Promise<MailboxResult<{ pushes: PushInfo[] }>> {
    return this.whenHere(address, () => this.sends.after(() => this.run(() => {
      const now = this.catchUp();
      this.requireMailbox(address);
      return { pushes: this.push.list(now) };
    })));
  }

  /**
   * PUSH.DELETE: stops push subscription `pushId`; its group stays at its ack floors. Error `push subscription not found`.
   * `reported`: the tenant's aggregator has the new subscription count (TenantDirectory.pushesChanged frees the slot at once).
   */
  async deletePush(address: string, pushId: string): Promise<MailboxResult<{ reported: boolean }>> {
    const f = await this.ready(address);
    if (f) return f;
    const r = await this.sends.after(() => this.run(() => {
      this.catchUp();
      this.requireMailbox(address);
      this.push.remove(pushId);
      return {};
    }));
    return r.ok ? { ...r, reported: await this.telemetry.flush() } : r;
  }

  /**
   * Stores a dead-letter copy in this mailbox (`address`, a `<source>.dlq`
   * mailbox), creating the mailbox with `ttlSec` when it does not exist
   * (its index row, outside the tenant's count: the PUSH.CREATE took the slot).
   * Called by the source Mailbox after a pushed message used its
   * max_attempts. Idempotent by `copy.ref`: a copy resent after a lost
   * answer is stored once (answers the stored msg_id).
   */
  deadLetter(address: string, ttlSec: number, copy: DeadLetterCopy): MailboxResult<{ msgId: number }> | Promise<MailboxResult<{ msgId: number }>> {
    return this.whenHere(address, () => this.deadLetterNow(address, copy), undefined, ttlSec);
  }

  private deadLetterNow(address: string, copy: DeadLetterCopy): MailboxResult<{ msgId: number }> | Promise<MailboxResult<{ msgId: number }>> {
    return this.sends.after(() => this.run(() => {
      const now = this.catchUp();
      const meta = this.requireMailbox(address);
      const known = this.pushStore.deadLetterRef(copy.ref);
      if (known !== null) return { msgId: known };
      const msgId = meta.nextMsgId;
      const m: NewMessage = {
        lane: copy.lane, key: copy.key, tags: copy.tags, payload: copy.payload, sentMs: now, expiresMs: null,
        replyTo: copy.replyTo, correlationId: copy.correlationId, deadLetter: JSON.stringify(copy.info),
      };
      this.ctx.storage.transactionSync(() => {
        this.store.appendVisible(msgId, m, now);
        this.pushStore.addDeadLetterRef(copy.ref, msgId, now);
      });
      meta.nextMsgId = msgId + 1;
      this.laneTops[m.lane] = msgId;
      this.telemetry.touch();
      this.waiters.wake();
      this.push.onVisible(now);
      this.rearm();
      return { msgId };
    }));
  }

  /** Throws group_pushed when a push subscription delivers `group` (pull FETCH and ACK on it are refused). */
  private refusePushed(address: string, group: string, verb: "FETCH" | "ACK"): void {
    const pushId = this.push.pushIdOf(group);
    if (pushId !== null) throw new Mq9Error("group_pushed", mq9Messages.groupPushed(group, address, pushId, verb));
  }

  /**
   * The one alarm (shared/scheduler.ts): due schedule rows, long-poll
   * deadlines, the telemetry flush, an index update retry, and push
   * deliveries — a live part: the run starts the attempts that are due and
   * stays open while any is in flight and LINGER_MS after (doing the other
   * work as it comes due), at most a minute; re-arms. Idempotent.
   */
  override async alarm(): Promise<void> {
    await this.scheduler.alarm();
  }

  /** Runs every schedule row due now (if any); returns now (ms). */
  private catchUp(): number {
    const now = Date.now();
    if (this.nextDueMs !== null && this.nextDueMs <= now) this.runDue(now);
    return now;
  }

  private runDue(now: number): void {
    const meta = this.meta;
    if (!meta) {
      this.nextDueMs = null;
      return;
    }
    if (meta.expiresMs !== null && meta.expiresMs <= now) {
      this.expireMailbox(meta);
      return;
    }
    let nextId = meta.nextMsgId;
    this.ctx.storage.transactionSync(() => {
      for (let due = this.store.takeDueDelayed(now, DUE_BATCH); due.length; due = this.store.takeDueDelayed(now, DUE_BATCH)) {
        for (const { m, dueMs } of due) {
          if (m.expiresMs !== null && m.expiresMs <= now) continue; // expired before anyone could see it
          this.store.appendVisible(nextId, m, dueMs);
          this.laneTops[m.lane] = nextId++;
        }
      }
      while (this.store.expireDue(now, DUE_BATCH, nextId) === DUE_BATCH);
    });
    const promoted = nextId !== meta.nextMsgId;
    meta.nextMsgId = nextId;
    this.telemetry.touch(); // messages may have expired
    this.nextDueMs = this.store.earliestDue();
    if (promoted) {
      this.waiters.wake();
      this.push.onVisible(now);
    }
    this.rearm();
  }

  /** Mailbox TTL reached: drop all data, fail held FETCHes, tell the index. */
  private expireMailbox(meta: MailboxMeta): void {
    const address = meta.address;
    this.ctx.storage.transactionSync(() => {
      this.store.dropAll();
      this.index.removed(address, meta.createdMs);
    });
    void this.index.push();
    this.meta = null;
    this.nextDueMs = null;
    this.laneTops = [-1, -1, -1];
    this.push.clear();
    this.waiters.failAll(new Mq9Error("mailbox_not_found", mq9Messages.mailboxNotFound(address)));
    this.telemetry.existenceChanged();
    this.rearm();
  }

  /** Arms the alarm for the earliest due part; wakes a running push loop so that it waits for the new earliest time. */
  private rearm(): void {
    void this.scheduler.rearm();
  }

  /** Runs `write` all or nothing: as it is when it is one SQL statement (atomic by itself), else in a transaction. */
  private atomically(oneStatement: boolean, write: () => void): void {
    if (oneStatement) write();
    else this.ctx.storage.transactionSync(write);
  }

  private requireMailbox(address: string): MailboxMeta {
    if (!this.meta) throw new Mq9Error("mailbox_not_found", mq9Messages.mailboxNotFound(address));
    return this.meta;
  }

  /** First msg_id a FETCH starting with `deliver` delivers (read-path.ts). */
  private startId(deliver: DeliverPolicy): number {
    return startId(deliver, this.meta?.nextMsgId ?? 0, (ms) => this.store.firstIdCreatedAtOrAfter(ms));
  }

  /** The next batch from per-lane `floors` (read-path.ts readBatch). */
  private readBatch(floors: number[], limit: number, now: number): StoredMessage[] {
    return readBatch(floors, limit, MAX_REPLY_PAYLOAD_BYTES, this.laneTops, (lane, floor, max) => this.store.readLane(lane, floor, max, now));
  }

  private run<T extends object>(fn: () => T): MailboxResult<T> {
    try {
      return { ok: true, ...fn() };
    } catch (e) {
      return failure(e);
    }
  }
}

/** Payload bytes of stored messages. */
function payloadBytes(messages: readonly StoredMessage[]): number {
  return messages.reduce((n, m) => n + m.size, 0);
}

/** The failed result for `e`: an Mq9Error as it is; anything else as a platform fault, without its text (mq9/faults.ts). */
function failure(e: unknown): Failure {
  if (e instanceof Mq9Error) return { ok: false, code: e.code, error: e.message };
  return { ok: false, ...mq9Fault(e, "Mailbox") };
}
