/**
 * The Mailbox's PUSH.CREATE / LIST / DELETE and the dead-letter copies it
 * receives from other mailboxes (docs/push.md; the deliveries themselves
 * are push/driver.ts). Each runs inside the RPC's result wrapper (core.ts
 * run): it returns the answer's fields or throws Mq9Error.
 */
import { storedSize } from "./byte-cap";
import type { PushCreateSpec, PushInfo } from "../../wire/mq9";
import type { NewMessage } from "./store";
import type { DeadLetterCopy } from "./push/dead-letter";
import type { MailboxCore } from "./core";

/** PUSH.CREATE (see Mailbox.createPush): throws mailbox_not_found, group_pushed, too_many_requests. */
export function createPush(c: MailboxCore, address: string, spec: PushCreateSpec): { pushId: string; secret?: string; ttlSec: number } {
  const now = c.catchUp();
  const meta = c.requireMailbox(address);
  return { ...c.push.create(meta, spec, () => c.startId(spec.deliver), now), ttlSec: meta.ttlSec };
}

/** PUSH.LIST (see Mailbox.listPushes). */
export function listPushes(c: MailboxCore, address: string): { pushes: PushInfo[] } {
  const now = c.catchUp();
  c.requireMailbox(address);
  return { pushes: c.push.list(now) };
}

/** PUSH.DELETE (see Mailbox.deletePush): throws mailbox_not_found, push_not_found. */
export function deletePush(c: MailboxCore, address: string, pushId: string): object {
  c.catchUp();
  c.requireMailbox(address);
  c.push.remove(pushId);
  return {};
}

/**
 * Stores dead-letter copy `copy` in this (`.dlq`) mailbox, once per
 * `copy.ref` (see Mailbox.deadLetter): answers the stored msg_id.
 */
export function storeDeadLetter(c: MailboxCore, address: string, copy: DeadLetterCopy): { msgId: number } {
  const now = c.catchUp();
  const meta = c.requireMailbox(address);
  const known = c.pushStore.deadLetterRef(copy.ref);
  if (known !== null) return { msgId: known };
  const msgId = meta.nextMsgId;
  const m: NewMessage = {
    lane: copy.lane, key: copy.key, tags: copy.tags, payload: copy.payload, sentMs: now, expiresMs: null,
    replyTo: copy.replyTo, correlationId: copy.correlationId, deadLetter: JSON.stringify(copy.info),
  };
  c.cap.admit(meta, address, storedSize(m), now); // refused: the source retries the copy with backoff
  c.storage.transactionSync(() => {
    c.store.appendVisible(msgId, m, now);
    c.pushStore.addDeadLetterRef(copy.ref, msgId, now);
  });
  meta.nextMsgId = msgId + 1;
  c.laneTops[m.lane] = msgId;
  c.telemetry.touch();
  c.waiters.wake();
  c.push.onVisible(now);
  c.rearm();
  return { msgId };
}
