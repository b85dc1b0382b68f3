/**
 * The state one Mailbox object keeps in memory and the parts it wires
 * together (Mailbox.ts is the RPC glue over these): the store, the cached
 * mailbox row, the held FETCHes (waiters.ts), the telemetry (telemetry.ts),
 * the push driver (push/driver.ts), the index entry (index-sync.ts), the
 * SEND group commit (send-apply.ts) and the one alarm (shared/scheduler.ts)
 * every part contributes its next wake-up time to. Due schedule rows are
 * caught up by expiry.ts before every request.
 */
import { MailboxByteCap, mailboxMaxBytes } from "./byte-cap";
import type { Env } from "../env";
import { MAX_REPLY_PAYLOAD_BYTES, Mq9Error, mq9Messages, type DeliverPolicy } from "../../wire/mq9";
import { readBatch, startId } from "./read-path";
import { GroupCommit } from "../shared/groupcommit";
import { AlarmScheduler, earliest } from "../shared/scheduler";
import { MailboxStore, type MailboxMeta, type StoredMessage } from "./store";
import type { MailboxResult, SendResult } from "./rpc";
import { WaiterSet } from "./waiters";
import { parkedCount, wakeParked } from "./wait-sockets";
import { MailboxTelemetry } from "./telemetry";
import { IndexSync } from "./index-sync";
import { nameToRemember } from "../shared/object-name";
import { mq9Fault } from "../mq9/faults";
import { tenantOfName } from "../shared/names";
import { tenantStub } from "../tenants/stub";
import { mailboxStub } from "./stub";
import { PushDriver } from "./push/driver";
import { PushStore } from "./push/store";
import { readMailboxConfig } from "./config";
import { runDue } from "./expiry";
import { sendCommit, type SendItem } from "./send-apply";

/** A failed RPC result. */
export type Failure = Extract<MailboxResult, { ok: false }>;

/** One mailbox's parts and cached state (see the file's comment). Fields are shared by the Mailbox's modules. */
export class MailboxCore {
  readonly storage: DurableObjectStorage;
  readonly store: MailboxStore;
  readonly pushStore: PushStore;
  /** MQ9_MAILBOX_MAX_BYTES, checked on every SEND and dead-letter copy (byte-cap.ts). */
  readonly cap: MailboxByteCap;
  /** Cached mailbox row; null = no mailbox. */
  meta: MailboxMeta | null = null;
  /** Cached earliest `schedule.due_ms`. */
  nextDueMs: number | null = null;
  /**
   * Highest msg_id appended per lane (-1 = none); lets FETCH skip lanes with
   * nothing at or above the floor. May be stale-high after deletions, which
   * only costs a query.
   */
  laneTops: number[] = [-1, -1, -1];
  /** The one alarm (shared/scheduler.ts): due schedule rows, long-poll deadlines, telemetry, index retries, push. */
  readonly scheduler: AlarmScheduler;
  /** Held FETCHes in memory; a wake-up also wakes the long-polls parked on sockets (wait-sockets.ts). */
  readonly waiters: WaiterSet;
  /** SENDs arriving while a commit is in flight share the next one (send-apply.ts). */
  readonly sends: GroupCommit<SendItem, SendResult>;
  /** Counters for /metrics and usage (telemetry.ts). */
  readonly telemetry: MailboxTelemetry;
  /** When the telemetry wants its flush (ms), shares the one alarm; null = nothing to report. */
  telemetryDue: number | null = null;
  /** The object's name (`mailbox/<tenant>/<address>`), null when never addressed by name. */
  readonly name: string | null;
  /** The name is not stored yet: the next CREATE stores it in its transaction (nameToRemember). */
  nameUnsaved: boolean;
  /** Push subscriptions and their deliveries (push/driver.ts). */
  readonly push: PushDriver;
  /** The tenant's mailbox index entry (index-sync.ts). */
  readonly index: IndexSync;
  /** When a failed index update is retried (ms), shares the one alarm; null = nothing pending. */
  indexDue: number | null = null;
  /** The mailbox's tenant (from the object's name); null = not addressed by name (no index to ask). */
  readonly tenant: string | null;

  constructor(readonly ctx: DurableObjectState, readonly env: Env) {
    this.storage = ctx.storage;
    this.waiters = new WaiterSet(() => wakeParked(ctx));
    this.store = new MailboxStore(ctx.storage.sql);
    this.pushStore = new PushStore(ctx.storage.sql);
    this.cap = new MailboxByteCap(mailboxMaxBytes(env), () => this.store.storedBytes());
    const named = nameToRemember(ctx);
    this.name = named.name;
    this.nameUnsaved = named.unsaved;
    this.sends = sendCommit(this);
    this.telemetry = new MailboxTelemetry({
      storage: ctx.storage, env, reporter: ctx.id.toString(), name: this.name ?? undefined,
      levels: () => ({
        exists: this.meta !== null, heldFetches: this.waiters.size + this.parked(), storedBytes: this.meta ? this.store.storedBytes() : 0,
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
  }

  /** Object start (inside blockConcurrencyWhile): the alarm's state, the mailbox row, its schedule and subscriptions. */
  async load(): Promise<void> {
    // a stored alarm may carry a telemetry flush an evicted instance asked for: it flushes then too
    // (nothing to report: no row, no call), and a flush asked for now joins it instead of moving it
    this.telemetryDue = await this.scheduler.armed();
    this.meta = this.store.loadMeta((fn) => this.storage.transactionSync(fn)); // moves a legacy per-message table into segments, batch by batch
    this.nextDueMs = this.store.earliestDue();
    this.laneTops = this.store.laneTops();
    if (this.meta) this.push.load(Date.now());
    this.telemetry.resume(this.parked());
    this.index.resume();
    this.rearm(); // a subscription with work found on load gets its alarm
  }

  /** Long-poll FETCHes parked on sockets now (wait-sockets.ts). */
  parked(): number {
    return parkedCount(this.ctx);
  }

  /** Runs every schedule row due now (if any, expiry.ts runDue); returns now (ms). */
  catchUp(): number {
    const now = Date.now();
    if (this.nextDueMs !== null && this.nextDueMs <= now) runDue(this, now);
    return now;
  }

  /** The mailbox is gone (TTL ended, purge): forget it in memory, abort pushes, fail held FETCHes with `mailbox X does not exist`. */
  forget(address: string): void {
    this.meta = null;
    this.nextDueMs = null;
    this.laneTops = [-1, -1, -1];
    this.push.clear(); // attempts in flight are aborted, their answers ignored
    this.waiters.failAll(new Mq9Error("mailbox_not_found", mq9Messages.mailboxNotFound(address)));
  }

  /** Drops the acknowledged index update's row (one turn, one commit); the usage report row stays until the next report replaces it. */
  settle(): void {
    this.index.settle();
  }

  /** Arms the alarm for the earliest due part; wakes a running push loop so that it waits for the new earliest time. */
  rearm(): void {
    void this.scheduler.rearm();
  }

  /** Runs `write` all or nothing: as it is when it is one SQL statement (atomic by itself), else in a transaction. */
  atomically(oneStatement: boolean, write: () => void): void {
    if (oneStatement) write();
    else this.storage.transactionSync(write);
  }

  /** The mailbox row; throws Mq9Error(mailbox_not_found) when there is no mailbox. */
  requireMailbox(address: string): MailboxMeta {
    if (!this.meta) throw new Mq9Error("mailbox_not_found", mq9Messages.mailboxNotFound(address));
    return this.meta;
  }

  /** Throws group_pushed when a push subscription delivers `group` (pull FETCH and ACK on it are refused). */
  refusePushed(address: string, group: string, verb: "FETCH" | "ACK"): void {
    const pushId = this.push.pushIdOf(group);
    if (pushId !== null) throw new Mq9Error("group_pushed", mq9Messages.groupPushed(group, address, pushId, verb));
  }

  /** First msg_id a FETCH starting with `deliver` delivers (read-path.ts). */
  startId(deliver: DeliverPolicy): number {
    return startId(deliver, this.meta?.nextMsgId ?? 0, (ms) => this.store.firstIdCreatedAtOrAfter(ms));
  }

  /** The next batch from per-lane `floors` (read-path.ts readBatch). */
  readBatch(floors: number[], limit: number, now: number): StoredMessage[] {
    return readBatch(floors, limit, MAX_REPLY_PAYLOAD_BYTES, this.laneTops, (lane, floor, max) => this.store.readLane(lane, floor, max, now));
  }
}

/** `fn`'s fields as a successful result, or the failure it threw (see {@link failure}). */
export function run<T extends object>(fn: () => T): MailboxResult<T> {
  try {
    return { ok: true, ...fn() };
  } catch (e) {
    return failure(e);
  }
}

/** The failed result for `e`: an Mq9Error as it is; anything else as a platform fault, without its text (mq9/faults.ts). */
export function failure(e: unknown): Failure {
  if (e instanceof Mq9Error) return { ok: false, code: e.code, error: e.message };
  return { ok: false, ...mq9Fault(e, "Mailbox") };
}

/** Payload bytes of stored messages. */
export function payloadBytes(messages: readonly StoredMessage[]): number {
  return messages.reduce((n, m) => n + m.size, 0);
}
