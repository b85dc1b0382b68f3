/**
 * One Mailbox's entry in its tenant's MailboxIndex (objects/mailbox-index/):
 * the update the index is owed — "remove" after the mailbox expired, or
 * "add" left by a broker from before index-only CREATEs (a CREATE writes
 * the index row itself now, docs/mq9.md "Mailbox index") — kept in table
 * `index_sync` (at most one row) and written in the SAME transaction as the
 * expiry, so it is exactly as durable as the change it describes. After
 * the commit it is sent without the reply waiting for it (`push`); a
 * failed send is retried from the mailbox's alarm (1 s, doubling to 1 min),
 * also after a restart. Once the index answered, a removal drops the table
 * at once (the mailbox is gone); an acknowledged add is only marked sent in
 * memory and its row deleted by `settle`, in a write turn the Mailbox makes
 * anyway (a SEND commit). Updates are idempotent (MailboxIndex.add/remove):
 * a row left behind by a restart is simply sent again.
 */
import type { Env } from "../env";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { IndexSyncStore, type PendingIndexUpdate as Pending } from "./index-sync-store";

const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

export class IndexSync {
  private pending: Pending | null = null;
  private ready = false;
  private retryMs = FIRST_RETRY_MS;
  /** The send in flight (resolves true when the index answered). */
  private sending: Promise<boolean> | null = null;
  /** The stored row is an add the index acknowledged: `settle` deletes it. */
  private sent = false;
  /** The table (all SQL of this module, index-sync-store.ts). */
  private readonly rows: IndexSyncStore;

  /**
   * @param tenant the mailbox's tenant (null: an object not addressed by name — no index)
   * @param schedule arms the mailbox's alarm for a retry at `at` (ms), or clears it (null)
   */
  constructor(
    storage: DurableObjectStorage,
    private readonly env: Env,
    private readonly tenant: string | null,
    private readonly schedule: (at: number | null) => void,
  ) {
    this.rows = new IndexSyncStore(storage.sql);
  }

  /** Loads an update left pending before a restart and sends it. Call once the object is loaded. */
  resume(): void {
    if (!this.rows.exists()) return;
    this.ready = true;
    const p = this.rows.load();
    if (!p) return;
    this.pending = p;
    void this.push().then((ok) => { if (ok) this.settle(); });
  }

  /** Inside the expiry's transaction: the index must forget the mailbox created at `createdMs`. */
  removed(address: string, createdMs: number): void {
    this.write({ op: "remove", address, createdMs, expiresMs: null });
  }

  /**
   * After the commit: sends the pending update (the caller does not wait;
   * a failure schedules a retry). Resolves true once the index has it
   * (also when nothing was pending), false when the send failed.
   */
  push(): Promise<boolean> {
    const p = this.pending;
    if (!p || this.tenant === null) return Promise.resolve(p === null);
    if (this.sending) return this.sending;
    const index = mailboxIndexStub(this.env, this.tenant);
    const call = p.op === "add"
      ? index.add({ address: p.address, created_ms: p.createdMs, expires_ms: p.expiresMs })
      : index.remove(p.address, p.createdMs);
    this.sending = Promise.resolve(call).then(() => {
      this.sending = null;
      this.retryMs = FIRST_RETRY_MS;
      if (this.pending !== p) return this.push(); // a newer update arrived meanwhile
      this.pending = null;
      if (this.ready && p.op === "remove") {
        this.rows.drop(); // an expired mailbox leaves no row behind
        this.ready = false;
      } else if (this.ready) {
        this.sent = true; // deleted by settle(), in a write turn the mailbox makes anyway
      }
      this.schedule(null);
      return true;
    }, () => {
      this.sending = null;
      this.schedule(Date.now() + this.retryMs);
      this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
      return false;
    });
    return this.sending;
  }

  /**
   * Deletes the row of an add the index acknowledged (no-op otherwise).
   * Call in a turn that writes anyway, so the delete shares its commit.
   */
  settle(): void {
    if (!this.sent) return;
    this.sent = false;
    if (this.ready && this.pending === null) this.rows.clear();
  }

  /** The mailbox's storage was deleted (tenant purge): nothing is pending any more (the index is purged too). */
  forget(): void {
    this.pending = null;
    this.ready = false;
    this.sent = false;
    this.schedule(null);
  }

  private write(p: Pending): void {
    if (this.tenant === null) return;
    this.rows.put(p, !this.ready);
    this.ready = true;
    this.pending = p;
    this.sent = false;
  }
}
