/**
 * The Mailbox's due schedule rows (schedule.ts kinds `deliver`, `expire`,
 * `mailbox`), run before every request and by the alarm: delayed messages
 * become visible, expired messages go, and a mailbox whose TTL ended is
 * dropped with all its data and removed from the tenant's index.
 */
import type { MailboxMeta } from "./store";
import type { MailboxCore } from "./core";

/** Due schedule rows handled per SQL round while catching up. */
const DUE_BATCH = 256;

/** Runs every schedule row due at `now` (ms), in one transaction; wakes held FETCHes and pushes when messages became visible. */
export function runDue(c: MailboxCore, now: number): void {
  const meta = c.meta;
  if (!meta) {
    c.nextDueMs = null;
    return;
  }
  if (meta.expiresMs !== null && meta.expiresMs <= now) {
    expireMailbox(c, meta);
    return;
  }
  let nextId = meta.nextMsgId;
  c.storage.transactionSync(() => {
    for (let due = c.store.takeDueDelayed(now, DUE_BATCH); due.length; due = c.store.takeDueDelayed(now, DUE_BATCH)) {
      const live = due.filter(({ m }) => m.expiresMs === null || m.expiresMs > now); // the others expired before anyone could see them
      c.store.appendVisibleMany(nextId, live.map((d) => d.m), live.map((d) => d.dueMs)); // one segment for the batch
      for (const { m } of live) c.laneTops[m.lane] = nextId++;
    }
    while (c.store.expireDue(now, DUE_BATCH, nextId) === DUE_BATCH);
  });
  const promoted = nextId !== meta.nextMsgId;
  meta.nextMsgId = nextId;
  c.telemetry.touch(); // messages may have expired
  c.nextDueMs = c.store.earliestDue();
  if (promoted) {
    c.waiters.wake();
    c.push.onVisible(now);
  }
  c.rearm();
}

/** Mailbox TTL reached: drop all data, fail held FETCHes, tell the index. */
function expireMailbox(c: MailboxCore, meta: MailboxMeta): void {
  const address = meta.address;
  c.storage.transactionSync(() => {
    c.store.dropAll();
    c.index.removed(address, meta.createdMs);
  });
  void c.index.push();
  c.forget(address);
  c.telemetry.existenceChanged();
  c.rearm();
}

/**
 * Tenant purge (docs/tenants.md "Deleting a tenant"): after the SEND
 * commit in flight, drops the mailbox and every message (held FETCHes get
 * `mailbox X does not exist`), waits for a usage report in flight, and
 * deletes all of the object's storage and its alarm; nothing counted before
 * is reported. The object is usable again afterwards. Idempotent.
 */
export async function purgeMailbox(c: MailboxCore): Promise<void> {
  await c.sends.after(() => {
    c.forget(c.meta?.address ?? ""); // the push tables go with deleteAll
    c.telemetryDue = null;
    c.index.forget();
  });
  await c.telemetry.abandon();
  await c.scheduler.stop();
  await c.storage.deleteAll();
  c.nameUnsaved = c.name !== null; // deleteAll took the name: a later CREATE stores it again
}
