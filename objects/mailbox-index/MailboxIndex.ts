/**
 * MailboxIndex Durable Object: a tenant's mq9 mailboxes
 * (`mailbox-index/<tenant>`, mailboxIndexStub) — the truth for which
 * mailboxes exist and when each expires (docs/mq9.md "Mailbox index").
 *
 * - MAILBOX.CREATE writes only a row here (`create`): one commit in this one
 *   database, no Mailbox object opened (#14 item 3: a flood of CREATEs is
 *   a flood of rows in one object, not of new databases, each an fsync
 *   series on workerd's one thread).
 * - A Mailbox object takes its row over on its first request (`claim`:
 *   the row marked materialized) and keeps messages, groups and push
 *   subscriptions; until then the mailbox is only this row.
 * - The index's one alarm deletes rows whose TTL ended (expireDue); a
 *   materialized Mailbox expires its own data at the same time and tells
 *   the index too (objects/mailbox/index-sync.ts, idempotent).
 * - Rows of mailboxes created by a Mailbox object (brokers from before this
 *   change, `add` from index-sync.ts) are materialized ones.
 * Listing (`page`) and the tenant purge read the rows; the purge opens only
 * materialized mailboxes.
 *
 * It is also the tenant's exact mailbox count for the `mailboxes` limit
 * (objects/tenants/mailbox-limits.ts, docs/tenants.md "Default limits"):
 * `admit` counts the rows (kept in memory) plus the CREATEs it admitted
 * whose row is not written yet (reservations by address; the CREATE's
 * `create` ends one, a CREATE that created nothing `release`s it, and one
 * not ended within RESERVATION_MS lapses).
 *
 * It reports `mortarmq_mq9_mailboxes` for its rows no Mailbox object holds
 * (a materialized Mailbox reports its own 1), through its Meter.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { series } from "../usage/catalog";
import { Meter } from "../usage/meter";
import { telemetryFlushMs, usageStub } from "../usage/stub";
import { rememberedName } from "../shared/object-name";
import { tenantOfName } from "../shared/names";
import { mailboxExpiry } from "../shared/ttl";
import { AlarmScheduler, earliest } from "../shared/scheduler";
import { MailboxIndexStore } from "./store";
import type { IndexRow, IndexedMailbox, MailboxPage } from "./rpc";

/**
 * How long an admitted CREATE holds its slot while its row is not written,
 * ms: the CREATE writes it right after the admission, so a lapsed
 * reservation is a CREATE that died with its caller.
 */
export const RESERVATION_MS = 60_000;

/** Rows expired per SQL round by the alarm. */
const EXPIRE_BATCH = 500;

const MAILBOXES = series("mortarmq_mq9_mailboxes");

export type { IndexAdmission, IndexCreate, IndexRowPage } from "./rpc";
import type { IndexAdmission, IndexCreate, IndexRowPage } from "./rpc";

export class MailboxIndex extends DurableObject<Env> {
  private store: MailboxIndexStore;
  /** Listed mailboxes (counted when the object starts, then kept by every change). */
  private listed = 0;
  /** Rows no Mailbox object holds (counted when the object starts, then kept). */
  private unmaterialized = 0;
  /** Admitted CREATEs whose row is not written yet: address → admission time (ms, ascending in insertion order). */
  private readonly reserved = new Map<string, number>();
  private readonly meter: Meter | null;
  /** Earliest row expiry (ms) the alarm is for; null = none. */
  private expiryAt: number | null = null;
  /** When the meter wants its flush (ms); null = nothing to report. */
  private flushAt: number | null = null;
  /** The one alarm (shared/scheduler.ts): row expiry and the meter's flush. */
  private readonly scheduler: AlarmScheduler;
  /** The tenant's purge has begun: nothing is created or claimed any more (seal). */
  private sealed = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new MailboxIndexStore(ctx.storage.sql);
    this.scheduler = new AlarmScheduler(ctx.storage, { owner: "MailboxIndex" })
      .part("expiry", { due: () => this.expiryAt, run: (now) => this.expireRows(now) })
      .part("flush", {
        due: () => this.flushAt,
        run: async () => {
          this.flushAt = null;
          await this.meter?.flush(); // a failed flush schedules its retry
        },
      });
    const tenant = tenantOfName(rememberedName(ctx));
    this.meter = tenant === null ? null : new Meter(ctx.storage, {
      reporter: ctx.id.toString(),
      flushMs: telemetryFlushMs(env),
      send: (r) => usageStub(env, tenant).report(r),
      levels: () => ({ [MAILBOXES]: this.unmaterialized }),
      schedule: (at) => {
        this.flushAt = earliest(this.flushAt, at);
        this.rearm();
      },
    });
    void ctx.blockConcurrencyWhile(async () => {
      await this.scheduler.armed();
      this.expiryAt = this.store.earliestExpiry();
      this.listed = this.store.count();
      this.unmaterialized = this.store.unmaterializedCount();
      this.sealed = this.store.sealed();
      this.meter?.resume();
      // a change committed before a restart whose flush was only scheduled in memory: report it now
      if (this.meter && this.meter.reportedLevel(MAILBOXES) !== this.unmaterialized) this.meter.touch();
      this.rearm();
    });
  }

  /**
   * MAILBOX.CREATE of `address` with TTL `ttlSec` (0 = never) at `now`:
   * writes its row (replacing one whose TTL ended) and ends the address's
   * reservation. Refused when the address has a live mailbox.
   */
  create(address: string, ttlSec: number, now = Date.now()): IndexCreate {
    if (this.sealed) return { ok: false, deleted: true };
    const old = this.store.get(address);
    if (old && !expired(old, now)) return { ok: false, exists: true };
    if (old) this.forgetRow(old);
    this.insert(address, ttlSec, now);
    this.reserved.delete(address);
    return { ok: true, createdMs: now };
  }

  /**
   * A Mailbox object takes over the row of `address` (its first request):
   * answers the row (marked materialized), or null when the address has no
   * live mailbox. `createTtlSec` given (a dead-letter mailbox, docs/push.md):
   * a missing row is created with that TTL, outside the count (its slot was
   * taken by the PUSH.CREATE).
   */
  claim(address: string, now = Date.now(), createTtlSec?: number): IndexedMailbox | null {
    if (this.sealed) return null;
    let row = this.store.get(address);
    if (row && expired(row, now)) {
      this.forgetRow(row);
      row = null;
    }
    if (!row) {
      if (createTtlSec === undefined) return null;
      row = this.insert(address, createTtlSec, now);
    }
    if (!row.materialized) {
      this.store.markMaterialized(address);
      this.unmaterialized--;
      this.meter?.touch();
    }
    return { address: row.address, created_ms: row.created_ms, expires_ms: row.expires_ms };
  }

  /** A Mailbox object created a mailbox (index-sync.ts; idempotent: an add sent again after a mailbox restarted writes nothing). */
  add(m: IndexedMailbox): void {
    if (this.sealed) return;
    const row = this.store.get(m.address);
    if (row && row.created_ms > m.created_ms) return;
    if (!row || row.created_ms !== m.created_ms || row.expires_ms !== m.expires_ms || !row.materialized) {
      this.store.add(m);
      if (!row) this.listed++;
      else if (!row.materialized) this.unmaterialized--;
      this.armExpiry(m.expires_ms);
    }
    this.reserved.delete(m.address);
  }

  /** The mailbox created at `createdMs` at `address` is gone (expired, purged). Idempotent. */
  remove(address: string, createdMs: number): void {
    const gone = this.store.remove(address, createdMs);
    if (gone) this.counted(gone);
  }

  /**
   * A CREATE of `address` under a limit of `max` mailboxes: admitted while
   * the listed mailboxes plus the admitted CREATEs whose address is not
   * listed are below `max`; `address` is then reserved until the CREATE
   * writes its row (or releases it). A listed address is admitted without
   * counting (the CREATE creates nothing new, or replaces a row whose TTL
   * ended) but reserved too: should its row expire before the CREATE
   * writes, the reservation counts from then on, so the slot the expiry
   * freed is not given twice. An address already reserved is admitted as it
   * is (only one of the two CREATEs creates it).
   */
  admit(address: string, max: number, now = Date.now()): IndexAdmission {
    for (const [a, at] of this.reserved) {
      if (at > now - RESERVATION_MS) break;
      this.reserved.delete(a);
    }
    if (this.reserved.has(address)) return { ok: true };
    if (!this.store.has(address)) {
      const count = this.count() + this.unlistedReservations();
      if (count >= max) return { ok: false, count };
    }
    this.reserved.set(address, now);
    return { ok: true, at: now };
  }

  /** Reserved addresses that have no row (each becomes a mailbox when its CREATE writes). */
  private unlistedReservations(): number {
    let n = 0;
    for (const a of this.reserved.keys()) if (!this.store.has(a)) n++;
    return n;
  }

  /** The CREATE admitted at `at` for `address` created nothing: its slot is free again. */
  release(address: string, at: number): void {
    if (this.reserved.get(address) === at) this.reserved.delete(address);
  }

  /** One page of mailboxes by address, after the cursor `after` (null = the first page), addresses starting with `prefix`; `limit` 1..1000. */
  page(after: string | null, limit: number, prefix = ""): MailboxPage {
    return this.store.page(after, limit, prefix);
  }

  /** {@link page} with each row's state: whether a Mailbox object holds it. */
  rows(after: string | null, limit: number): IndexRowPage {
    return this.store.rows(after, limit);
  }

  /** How many mailboxes are listed. */
  count(): number {
    return this.listed;
  }

  /** The alarm: deletes the rows whose TTL ended, flushes the meter when due; re-arms. */
  override async alarm(): Promise<void> {
    await this.scheduler.alarm();
  }

  /** Deletes the rows whose TTL ended at `now` (ms) and uncounts them. */
  private expireRows(now: number): void {
    for (let rows = this.store.expireDue(now, EXPIRE_BATCH); rows.length; rows = this.store.expireDue(now, EXPIRE_BATCH)) {
      for (const r of rows) this.counted(r);
    }
    this.expiryAt = this.store.earliestExpiry();
  }

  /**
   * Tenant purge, before it reads the first page of mailboxes: from now on
   * nothing is created or claimed (a CREATE answers `deleted`, a claim
   * null), so no Mailbox object is opened after the purge listed the opened
   * ones — e.g. a `.dlq` by a dead letter already on its way. Persisted;
   * `purge` ends it. Idempotent.
   */
  seal(): void {
    this.store.seal();
    this.sealed = true;
  }

  /** Tenant purge: deletes all of the index's storage (safe to call twice); an empty index remains usable. */
  async purge(): Promise<void> {
    await this.meter?.abandon();
    await this.scheduler.stop();
    await this.ctx.storage.deleteAll();
    this.store = new MailboxIndexStore(this.ctx.storage.sql);
    this.listed = 0;
    this.unmaterialized = 0;
    this.reserved.clear();
    this.sealed = false;
    this.expiryAt = null;
    this.flushAt = null;
  }

  /** Writes the row of a new mailbox (not materialized) and counts it. */
  private insert(address: string, ttlSec: number, now: number): IndexRow {
    const row: IndexRow = { address, created_ms: now, expires_ms: mailboxExpiry(now, ttlSec), materialized: false };
    this.store.insert(row);
    this.listed++;
    this.unmaterialized++;
    this.meter?.touch();
    this.armExpiry(row.expires_ms);
    return row;
  }

  /** Deletes `row` (its TTL ended) and uncounts it. */
  private forgetRow(row: IndexRow): void {
    this.store.remove(row.address, row.created_ms);
    this.counted(row);
  }

  /** Uncounts a deleted row. */
  private counted(row: IndexRow): void {
    this.listed--;
    if (!row.materialized) {
      this.unmaterialized--;
      this.meter?.touch();
    }
  }

  /** The alarm must also fire at `expiresMs` (null = never). */
  private armExpiry(expiresMs: number | null): void {
    if (expiresMs === null) return;
    if (this.expiryAt === null || expiresMs < this.expiryAt) {
      this.expiryAt = expiresMs;
      this.rearm();
    }
  }

  /** Arms the alarm for the earliest of the next expiry and the meter's flush. */
  private rearm(): void {
    void this.scheduler.rearm();
  }
}

/** Whether `row`'s TTL ended at `now`. */
function expired(row: IndexedMailbox, now: number): boolean {
  return row.expires_ms !== null && row.expires_ms <= now;
}
