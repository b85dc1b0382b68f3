/**
 * The Mailbox's MSG.ACK, MSG.QUERY, MSG.DELETE and the console's describe
 * (glue around cursor.ts and batch.ts). Each runs inside the RPC's result
 * wrapper (core.ts run): it returns the answer's fields or throws Mq9Error.
 */
import type { MailboxDetail } from "../../wire/admin/console";
import { MAX_REPLY_PAYLOAD_BYTES, Mq9Error, echo, mq9Messages, priorityOfLane, type Mq9Message, type QuerySpec } from "../../wire/mq9";
import { ReplyBudget } from "./batch";
import { applyAck, laneFromLastBatch } from "./cursor";
import { toMq9Message, type StoredMessage } from "./store";
import { payloadBytes, type MailboxCore } from "./core";

/** Groups listed by `describe`. */
const DESCRIBED_GROUPS = 100;

/** What `describe` answers (the console's mailbox page without the tenant). */
export type MailboxDescription = Omit<MailboxDetail, "tenant">;

/** MSG.ACK (see Mailbox.ack). Throws message_not_found, group_pushed, group_not_found, message_not_delivered. */
export function ack(c: MailboxCore, address: string, group: string, msgId: number): object {
  c.catchUp();
  const meta = c.requireMailbox(address);
  if (msgId >= meta.nextMsgId) throw new Mq9Error("message_not_found", mq9Messages.messageNotFound());
  c.refusePushed(address, group, "ACK");
  const cursor = c.store.loadGroup(group);
  if (!cursor) throw new Mq9Error("group_not_found", `consumer group ${echo(group)} has not fetched from mailbox ${echo(address)}`);
  // A message that is gone and was not in the last batch has nothing left to acknowledge.
  const lane = c.store.laneOf(msgId) ?? laneFromLastBatch(cursor, msgId);
  if (lane === null) return {};
  const r = applyAck(cursor, lane, msgId);
  if (!r.ok) throw new Mq9Error("message_not_delivered", mq9Messages.notDelivered(msgId, group, priorityOfLane(lane), r.highestDelivered));
  if (r.changed) c.storage.transactionSync(() => c.store.saveGroup(group, r.cursor));
  return {};
}

/** MSG.QUERY (see Mailbox.query): the newest matching messages within the reply budget, in msg_id order. */
export function query(c: MailboxCore, address: string, spec: QuerySpec): { messages: Mq9Message[] } {
  const now = c.catchUp();
  c.requireMailbox(address);
  const budget = new ReplyBudget(spec.limit, MAX_REPLY_PAYLOAD_BYTES);
  const picked: StoredMessage[] = [];
  for (const m of c.store.queryNewestFirst(spec, now)) {
    if (!budget.admit(m.size)) break;
    picked.push(m);
  }
  c.telemetry.returned("query", picked.length, payloadBytes(picked));
  return { messages: picked.reverse().map(toMq9Message) };
}

/** MSG.DELETE (see Mailbox.deleteMessage). Throws message_not_found. */
export function deleteMessage(c: MailboxCore, address: string, msgId: number): { deleted: true } {
  c.catchUp();
  const meta = c.requireMailbox(address);
  const gone = c.storage.transactionSync(() => c.store.deleteMessage(msgId, meta.nextMsgId));
  if (!gone) throw new Mq9Error("message_not_found", mq9Messages.messageNotFound());
  c.telemetry.touch();
  return { deleted: true as const };
}

/** The console's mailbox page (see Mailbox.describe). */
export function describe(c: MailboxCore, address: string): { detail: MailboxDescription } {
  const now = c.catchUp();
  const meta = c.requireMailbox(address);
  const lanes = c.store.laneCounts(now);
  const lane = (i: number) => lanes[i]!;
  const perLane = <T,>(f: (i: number) => T) => ({ critical: f(0), urgent: f(1), normal: f(2) });
  const detail: MailboxDescription = {
    mail_address: meta.address,
    created_at: new Date(meta.createdMs).toISOString(),
    expires_at: meta.expiresMs === null ? null : new Date(meta.expiresMs).toISOString(),
    ttl: meta.ttlSec,
    next_msg_id: meta.nextMsgId,
    lanes: perLane(lane),
    delayed: c.store.delayedCount(),
    groups: c.store.groupsPage(DESCRIBED_GROUPS).map(({ name, cursor }) => ({
      group_name: name,
      floors: perLane((i) => cursor.floors[i]!),
      delivered: perLane((i) => (cursor.delivered[i]! >= 0 ? cursor.delivered[i]! : null)),
    })),
    groups_total: c.store.groupCount(),
  };
  return { detail };
}
