/**
 * MailboxIndex Durable Object: the list of a tenant's mq9 mailboxes
 * (`mailbox-index/<tenant>`, mailboxIndexStub), because a Worker cannot
 * enumerate Durable Objects. Used by the tenant purge to find every mailbox,
 * and the base of a paginated mailbox listing (`page`).
 *
 * Consistency rule (docs/mq9.md "Mailbox index"): a Mailbox writes the
 * index update it owes into its own storage in the same transaction as its
 * CREATE (or its expiry), sends it after the commit without making the
 * reply wait, and retries it from its alarm until this object answered
 * (objects/mailbox/index-sync.ts). So every mailbox that exists is listed
 * here or has an update pending in its own storage; a listed mailbox may
 * already have expired until its removal lands. Updates carry the creation
 * time, so order does not matter (store.ts).
 *
 * It is also the tenant's exact mailbox count for the `mailboxes` limit
 * (objects/tenants/mailbox-limits.ts, docs/tenants.md "Default limits"):
 * `admit` counts the listed mailboxes (kept in memory) plus the CREATEs it
 * admitted whose mailbox is not listed yet (reservations by address; the
 * mailbox's own `add` ends one, a CREATE that created nothing `release`s
 * it, and one not ended within RESERVATION_MS lapses).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { MailboxIndexStore, type IndexedMailbox, type MailboxPage } from "./store";

/**
 * How long an admitted CREATE holds its slot while its mailbox is not listed,
 * ms: a CREATE answers within seconds and its mailbox's `add` follows the
 * commit at once (retried from the mailbox's alarm after 1 s, 2 s, …), so a
 * lapsed reservation is a CREATE that died with its caller.
 */
export const RESERVATION_MS = 60_000;

/** `admit` answer: admitted (`at` names the reservation, absent when none was needed: the address is listed or reserved already), or refused with the count. */
export type IndexAdmission = { ok: true; at?: number } | { ok: false; count: number };

export class MailboxIndex extends DurableObject<Env> {
  private store: MailboxIndexStore;
  /** Listed mailboxes (count(*) once, then kept by add/remove). */
  private listed: number | null = null;
  /** Admitted CREATEs whose mailbox is not listed yet: address → admission time (ms, ascending in insertion order). */
  private readonly reserved = new Map<string, number>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new MailboxIndexStore(ctx.storage.sql);
  }

  /** A mailbox was created (idempotent: an add sent again after a mailbox restarted writes nothing). */
  add(m: IndexedMailbox): void {
    const listed = this.count();
    const row = this.store.get(m.address);
    const known = row !== null;
    if (!row || row.created_ms !== m.created_ms || row.expires_ms !== m.expires_ms) this.store.add(m);
    if (!known) this.listed = listed + 1;
    this.reserved.delete(m.address);
  }

  /** The mailbox created at `createdMs` at `address` is gone (expired, purged). Idempotent. */
  remove(address: string, createdMs: number): void {
    const listed = this.count();
    this.listed = listed - this.store.remove(address, createdMs);
  }

  /**
   * A CREATE of `address` under a limit of `max` mailboxes: admitted while
   * the listed mailboxes plus the unlisted admitted ones are below `max`
   * (then `address` is reserved until its mailbox is listed); a listed or
   * already reserved address is admitted without a reservation (it creates
   * no new mailbox, or only one of the two CREATEs does).
   */
  admit(address: string, max: number, now = Date.now()): IndexAdmission {
    for (const [a, at] of this.reserved) {
      if (at > now - RESERVATION_MS) break;
      this.reserved.delete(a);
    }
    if (this.reserved.has(address) || this.store.has(address)) return { ok: true };
    const count = this.count() + this.reserved.size;
    if (count >= max) return { ok: false, count };
    this.reserved.set(address, now);
    return { ok: true, at: now };
  }

  /** The CREATE admitted at `at` for `address` created nothing: its slot is free again. */
  release(address: string, at: number): void {
    if (this.reserved.get(address) === at) this.reserved.delete(address);
  }

  /** One page of mailboxes by address, after the cursor `after` (null = the first page), addresses starting with `prefix`; `limit` 1..1000. */
  page(after: string | null, limit: number, prefix = ""): MailboxPage {
    return this.store.page(after, limit, prefix);
  }

  /** How many mailboxes are listed. */
  count(): number {
    this.listed ??= this.store.count();
    return this.listed;
  }

  /** Tenant purge: deletes all of the index's storage (safe to call twice); an empty index remains usable. */
  async purge(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.store = new MailboxIndexStore(this.ctx.storage.sql);
    this.listed = 0;
    this.reserved.clear();
  }
}
