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
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { MailboxIndexStore, type IndexedMailbox, type MailboxPage } from "./store";

export class MailboxIndex extends DurableObject<Env> {
  private store: MailboxIndexStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new MailboxIndexStore(ctx.storage.sql);
  }

  /** A mailbox was created (idempotent). */
  add(m: IndexedMailbox): void {
    this.store.add(m);
  }

  /** The mailbox created at `createdMs` at `address` is gone (expired, purged). Idempotent. */
  remove(address: string, createdMs: number): void {
    this.store.remove(address, createdMs);
  }

  /** One page of mailboxes by address, after the cursor `after` (null = the first page), addresses starting with `prefix`; `limit` 1..1000. */
  page(after: string | null, limit: number, prefix = ""): MailboxPage {
    return this.store.page(after, limit, prefix);
  }

  /** How many mailboxes are listed. */
  count(): number {
    return this.store.count();
  }

  /** Tenant purge: deletes all of the index's storage (safe to call twice); an empty index remains usable. */
  async purge(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.store = new MailboxIndexStore(this.ctx.storage.sql);
  }
}
