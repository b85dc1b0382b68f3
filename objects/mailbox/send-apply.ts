/**
 * The Mailbox's SEND application (glue around send-path.ts): the group
 * commit that SENDs share (shared/groupcommit.ts), and how one SEND or a
 * run of SENDs is stored, counted, and wakes held FETCHes and pushes.
 * Checks that refuse a SEND before it is stored belong in {@link applySend}
 * and {@link appendPlain} (after `requireMailbox`).
 */
import { storedSize } from "./byte-cap";
import type { Mq9SendOptions } from "../../wire/mq9";
import { GroupCommit } from "../shared/groupcommit";
import { earliest } from "../shared/alarm-times";
import { newMessage, planSendWrites } from "./send-path";
import { dueAt } from "../shared/ttl";
import type { NewMessage } from "./store";
import type { SendResult } from "./rpc";
import { failure, run, type MailboxCore } from "./core";

/** One MSG.SEND as it waits for its commit. */
export type SendItem = { address: string; opts: Mq9SendOptions; payload: Uint8Array };

/**
 * The group commit of `c`'s SENDs: a SEND arriving while a commit is in
 * flight is applied in the next turn with the others waiting
 * ({@link applySends}), and they share one commit, which also carries the
 * push attempts they start, the telemetry counts and the index settle.
 */
export function sendCommit(c: MailboxCore): GroupCommit<SendItem, SendResult> {
  return new GroupCommit<SendItem, SendResult>(
    (item) => applySend(c, item),
    () => {
      try {
        c.push.afterSends(Date.now()); // attempts of the messages just sent start in the SENDs' commit
      } catch {
        // the alarm's loop (woken by the SEND) starts them and meets the error there
      }
      c.index.settle(); // an acknowledged index add's row goes with it
      return c.storage.sync();
    },
    (e) => failure(e),
    (items) => applySends(c, items),
  );
}

/**
 * Several SENDs in one turn (a `sendMany`, or a group commit's waiting
 * SENDs), in order, with the results applySend would give each: every
 * run of plain SENDs (no delay) is stored as one segment row
 * (MailboxStore.appendVisibleMany); delayed ones one at a time.
 */
function applySends(c: MailboxCore, items: readonly SendItem[]): SendResult[] {
  const out: SendResult[] = [];
  for (const w of planSendWrites(items.map((i) => i.opts))) {
    if (w.kind === "one") out.push(applySend(c, items[w.at]!));
    else for (const r of appendPlain(c, items.slice(w.from, w.to))) out.push(r); // no spread: an unbounded run
  }
  return out;
}

/** Plain SENDs (no delay) stored together; all fail alike when the mailbox is missing or the write fails. */
function appendPlain(c: MailboxCore, items: readonly SendItem[]): SendResult[] {
  let first: number;
  let ms: NewMessage[];
  let now: number;
  try {
    now = c.catchUp();
    const meta = c.requireMailbox(items[0]!.address);
    first = meta.nextMsgId;
    ms = items.map((i) => newMessage(i.opts, i.payload, now));
    let size = 0;
    for (const m of ms) size += storedSize(m);
    if (!c.cap.room(meta, size, now)) return items.map((i) => applySend(c, i)); // near the cap: each SEND admitted or refused on its own
    c.atomically(c.store.appendIsOneStatement(ms), () => c.store.appendVisibleMany(first, ms, now));
    meta.nextMsgId = first + ms.length;
  } catch (e) {
    const f = failure(e);
    return items.map(() => ({ ...f }));
  }
  let bytes = 0;
  ms.forEach((m, i) => {
    bytes += m.payload.byteLength;
    c.laneTops[m.lane] = first + i;
    c.nextDueMs = earliest(c.nextDueMs, m.expiresMs);
  });
  c.telemetry.sent(bytes, ms.length);
  c.waiters.wake();
  c.push.onVisible(now);
  c.rearm();
  return ms.map((_, i) => ({ ok: true as const, msgId: first + i }));
}

/** One SEND: a delayed message is scheduled (msg_id -1), any other stored visible now. */
function applySend(c: MailboxCore, { address, opts, payload }: SendItem): SendResult {
  return run(() => {
    const now = c.catchUp();
    const meta = c.requireMailbox(address);
    const m = newMessage(opts, payload, now);
    c.cap.admit(meta, address, storedSize(m), now);
    if (opts.delaySec > 0) {
      const due = dueAt(now, opts.delaySec);
      c.storage.transactionSync(() => c.store.addDelayed(m, due));
      c.telemetry.sent(payload.byteLength);
      c.nextDueMs = earliest(c.nextDueMs, due);
      c.rearm();
      return { msgId: -1 };
    }
    const msgId = meta.nextMsgId;
    c.atomically(c.store.appendIsOneStatement([m]), () => c.store.appendVisible(msgId, m, now));
    c.telemetry.sent(payload.byteLength);
    meta.nextMsgId = msgId + 1;
    c.laneTops[m.lane] = msgId;
    c.nextDueMs = earliest(c.nextDueMs, m.expiresMs);
    c.waiters.wake();
    c.push.onVisible(now);
    c.rearm();
    return { msgId };
  });
}
