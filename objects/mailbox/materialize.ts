/**
 * Index sync on the Mailbox's side: the mailbox exists only as its row in
 * the tenant's MailboxIndex until its first request (docs/mq9.md "Mailbox
 * index", #14 item 3: a CREATE opens no database). Every request first
 * asks {@link Materializer.ready}; the first one claims the row (the index
 * marks it materialized) and stores the mailbox here.
 */
import { mailboxIndexStub } from "../mailbox-index/stub";
import type { IndexedMailbox } from "../mailbox-index/rpc";
import { rememberName } from "../shared/object-name";
import { earliest } from "../shared/alarm-times";
import type { MailboxMeta } from "./store";
import { failure, type Failure, type MailboxCore } from "./core";

/** Claims the mailbox's index row on its first request (see the file's comment). */
export class Materializer {
  /** The claim of this mailbox's index row in flight; null = none. */
  private materializing: Promise<Failure | null> | null = null;

  constructor(private readonly c: MailboxCore) {}

  /**
   * Runs `op` once the mailbox is here: at once when it is (the usual
   * case, no promise), else after the claim; `failed` turns a failed index
   * call into `op`'s kind of answer (default: the failure itself, a
   * MailboxResult). `createTtlSec`: a dead-letter mailbox, created in the
   * index when missing.
   */
  whenHere<T>(address: string, op: () => T | Promise<T>, failed: (f: Failure) => T = (f) => f as T, createTtlSec?: number): T | Promise<T> {
    const wait = this.ready(address, createTtlSec);
    return wait === null ? op() : wait.then((f) => (f ? failed(f) : op()));
  }

  /**
   * Null when requests can run at once: the mailbox is here and its TTL has
   * not ended, or the object has no index to ask (not addressed by name);
   * else the claim's promise (resolves the failure when the index could not
   * be asked, else null).
   */
  ready(address: string, createTtlSec?: number): Promise<Failure | null> | null {
    const m = this.c.meta;
    const here = m !== null && (m.expiresMs === null || m.expiresMs > Date.now());
    return this.c.tenant === null || here ? null : this.materialize(address, createTtlSec);
  }

  /**
   * Claims the row and stores the mailbox here with the row's creation time
   * and TTL — after expiring a mailbox here whose TTL ended. No row:
   * nothing is stored (the request then answers `mailbox X does not
   * exist`). Concurrent requests share one claim and run in arrival order
   * after it.
   */
  private materialize(address: string, createTtlSec?: number): Promise<Failure | null> {
    this.materializing ??= this.claimRow(address, createTtlSec).finally(() => {
      this.materializing = null;
    });
    return this.materializing;
  }

  private async claimRow(address: string, createTtlSec: number | undefined): Promise<Failure | null> {
    const c = this.c;
    try {
      const row = await mailboxIndexStub(c.env, c.tenant!).claim(address, Date.now(), createTtlSec);
      c.catchUp(); // a mailbox here whose TTL ended goes first
      if (!c.meta && row) this.adopt(row);
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
    const c = this.c;
    const ttlSec = row.expires_ms === null ? 0 : Math.round((row.expires_ms - row.created_ms) / 1000);
    const meta: MailboxMeta = { address: row.address, createdMs: row.created_ms, ttlSec, expiresMs: row.expires_ms, nextMsgId: 0 };
    c.storage.transactionSync(() => {
      if (c.nameUnsaved) rememberName(c.ctx, c.name);
      c.store.createMailbox(meta);
    });
    c.nameUnsaved = false;
    c.meta = meta;
    void c.telemetry.created()?.then((ok) => { if (ok) c.settle(); });
    c.nextDueMs = earliest(c.nextDueMs, meta.expiresMs);
    c.rearm();
    return meta;
  }
}
