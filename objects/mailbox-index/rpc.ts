/**
 * The shapes of the MailboxIndex's RPC surface (MailboxIndex.ts): what the
 * mq9 service, the Mailbox objects, the console and the tenant purge send
 * and get back (docs/mq9.md "Mailbox index").
 */

/** One indexed mailbox. */
export interface IndexedMailbox {
  address: string;
  /** When the mailbox was created, unix ms. */
  created_ms: number;
  /** When its TTL deletes it, unix ms; null = never. */
  expires_ms: number | null;
}

/** One page of the index. */
export interface MailboxPage {
  mailboxes: IndexedMailbox[];
  /** Cursor of the next page (the last address of this one); null = this was the last page. */
  next: string | null;
}

/** A row with its state: `materialized` — its Mailbox object holds it (claimed or created there). */
export interface IndexRow extends IndexedMailbox {
  materialized: boolean;
}

/** `admit` answer: admitted (`at` names the reservation, absent when none was needed: the address is listed or reserved already), or refused with the count. */
export type IndexAdmission = { ok: true; at?: number } | { ok: false; count: number };

/** `create` answer: created (the row's creation time, ms), or the address has a live mailbox, or the tenant is being deleted (seal). */
export type IndexCreate = { ok: true; createdMs: number } | { ok: false; exists: true } | { ok: false; deleted: true };

/** A page of rows with their state (the tenant purge). */
export interface IndexRowPage {
  rows: IndexRow[];
  next: string | null;
}
