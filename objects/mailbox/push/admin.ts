/**
 * PUSH.CREATE and PUSH.DELETE of one mailbox's subscriptions (docs/push.md):
 * the checks, the rows written, and the subscription added to or removed
 * from the driver's set (runs.ts). The driver (driver.ts) then re-arms.
 */
import {
  MAX_GROUPS_PER_MAILBOX, MAX_PUSHES_PER_MAILBOX, Mq9Error, echo, mq9Messages, type PushCreateSpec,
} from "../../../wire/mq9";
import type { MailboxMeta } from "../store";
import type { PushHost } from "./host";
import type { PushRuns, Run } from "./runs";
import { newPushId, newPushSecret, pushStartCursor } from "./state";
import type { PushConfig } from "./store";

/**
 * PUSH.CREATE on mailbox `meta` with a checked `spec` (url normalized) at
 * `now` (ms): stores the subscription (its group's start cursor from
 * `startId()`, the first msg_id of `spec.deliver`, and a schedule row due
 * now) and adds it to `runs`. Throws Mq9Error: group_pushed (the group
 * already has a push), too_many_requests (MAX_PUSHES_PER_MAILBOX, or a new
 * group beyond MAX_GROUPS_PER_MAILBOX). Returns the push_id and, when it
 * was generated, the secret.
 */
export function createSubscription(
  h: PushHost, runs: PushRuns, meta: MailboxMeta, spec: PushCreateSpec, startId: () => number, now: number,
): { pushId: string; secret?: string } {
  const existing = runs.ofGroup(spec.group);
  if (existing) throw new Mq9Error("group_pushed", mq9Messages.groupPushed(spec.group, meta.address, existing.cfg.pushId, "PUSH.CREATE"));
  if (runs.size >= MAX_PUSHES_PER_MAILBOX) {
    throw new Mq9Error("too_many_requests", `mailbox ${echo(meta.address)} already has ${MAX_PUSHES_PER_MAILBOX} push subscriptions: DELETE one first`);
  }
  const stored = h.store.loadGroup(spec.group);
  if (!stored && h.store.groupCount() >= MAX_GROUPS_PER_MAILBOX) {
    throw new Mq9Error("too_many_requests", `mailbox ${echo(meta.address)} already has ${MAX_GROUPS_PER_MAILBOX} consumer groups: use an existing group_name`);
  }
  const cursor = pushStartCursor(stored, startId());
  const secret = spec.secret ?? newPushSecret((b) => h.fillRandom(b));
  const cfg: Omit<PushConfig, "seq"> = {
    pushId: newPushId((b) => h.fillRandom(b)), group: spec.group, url: spec.url, secret,
    maxAttempts: spec.maxAttempts, concurrency: spec.concurrency, timeoutMs: spec.timeoutMs, createdMs: now,
  };
  const seq = h.storage.transactionSync(() => {
    h.store.saveGroup(spec.group, cursor);
    const s = h.pushes.insertPush(cfg);
    h.pushes.setDue(s, now);
    return s;
  });
  const run: Run = {
    cfg: { ...cfg, seq }, cursor, open: new Map(), due: now, more: true, key: null, pending: null,
    stats: { delivered: 0, failed: 0, deadLettered: 0, lastError: null, lastSuccessMs: null, lastFailureMs: null },
  };
  runs.add(run);
  return spec.secret === null ? { pushId: cfg.pushId, secret } : { pushId: cfg.pushId };
}

/**
 * PUSH.DELETE: removes subscription `pushId` from `runs` and storage
 * (attempts in flight are aborted, their answers ignored). Its group stays,
 * at its ack floors, for pull consumers: the messages it had not settled
 * are delivered again. Throws Mq9Error(push_not_found).
 */
export function removeSubscription(h: PushHost, runs: PushRuns, pushId: string): void {
  const run = runs.ofPushId(pushId);
  if (!run) throw new Mq9Error("push_not_found", mq9Messages.pushNotFound());
  for (const o of run.open.values()) o.cancel?.abort();
  const floors = [...run.cursor.floors];
  h.storage.transactionSync(() => {
    h.pushes.deletePush(run.cfg.seq);
    h.store.saveGroup(run.cfg.group, { floors, delivered: floors.map((f) => f - 1), batch: null });
  });
  runs.delete(run);
}
