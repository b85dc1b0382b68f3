/**
 * The Mailbox's MSG.FETCH (glue around read-path.ts and cursor.ts): opens
 * the read position (stateless from `deliver`, or the consumer group's
 * cursor), reads a batch, and holds the request as a long-poll
 * (waiters.ts) when there is nothing to deliver yet.
 */
import { MAX_GROUPS_PER_MAILBOX, MAX_PENDING_FETCHES, Mq9Error, echo, type FetchSpec, type Mq9Message } from "../../wire/mq9";
import { cursorAt, openGroup, recordBatch } from "./cursor";
import { toMq9Message } from "./store";
import type { MessagesResult } from "./rpc";
import { failure, payloadBytes, type MailboxCore } from "./core";

/**
 * MSG.FETCH on mailbox `address` (see Mailbox.fetchMessages): answers the
 * first batch, or holds the request until `spec.maxWaitMs` passes. Never
 * throws: errors are failed results.
 */
export async function fetchNow(c: MailboxCore, address: string, spec: FetchSpec, waiterId: string | null): Promise<MessagesResult> {
  try {
    const now = c.catchUp();
    c.requireMailbox(address);
    const read = openFetch(c, address, spec);
    const first = read();
    if (first || spec.maxWaitMs === 0) return { ok: true, messages: first ?? [] };
    return await hold(c, address, waiterId, now + spec.maxWaitMs, read);
  } catch (e) {
    return failure(e);
  }
}

/**
 * Opens a FETCH's position and returns its reader (the next batch, or
 * null when nothing is there). Stateless: a fixed start from `deliver`.
 * Stateful: the group per {@link openGroup} — a new or force_deliver'd
 * group's cursor is saved now (so a `latest` group sees what is sent
 * after its first FETCH), a new group past MAX_GROUPS_PER_MAILBOX is
 * refused (too_many_requests).
 */
function openFetch(c: MailboxCore, address: string, spec: FetchSpec): () => Mq9Message[] | null {
  const group = spec.group;
  if (group === null) {
    const floors = cursorAt(c.startId(spec.deliver)).floors;
    return () => readStateless(c, floors, spec.numMsgs);
  }
  c.refusePushed(address, group, "FETCH");
  const opening = openGroup(
    c.store.loadGroup(group), spec.forceDeliver,
    () => c.store.groupCount(), () => c.startId(spec.deliver), MAX_GROUPS_PER_MAILBOX,
  );
  if (opening.kind === "full") {
    throw new Mq9Error(
      "too_many_requests",
      `mailbox ${echo(address)} already has ${MAX_GROUPS_PER_MAILBOX} consumer groups: reuse an existing group_name or FETCH without one (stateless)`,
    );
  }
  if (opening.kind === "start") c.storage.transactionSync(() => c.store.saveGroup(group, opening.cursor));
  return () => readForGroup(c, group, spec.numMsgs);
}

/** One stateless FETCH attempt from fixed `floors`; counts what it returns. */
function readStateless(c: MailboxCore, floors: number[], numMsgs: number): Mq9Message[] | null {
  const batch = c.readBatch(floors, numMsgs, Date.now());
  if (batch.length === 0) return null;
  c.telemetry.returned("fetch", batch.length, payloadBytes(batch));
  return batch.map(toMq9Message);
}

/**
 * One stateful FETCH attempt from the group's stored floors (read again
 * each time: an ACK may have moved them while the request was held);
 * records the batch on the cursor and commits it with the counts.
 */
function readForGroup(c: MailboxCore, group: string, numMsgs: number): Mq9Message[] | null {
  if (c.push.pushIdOf(group) !== null) return null; // pushed since this FETCH was held
  const cursor = c.store.loadGroup(group);
  if (!cursor) return null;
  const batch = c.readBatch(cursor.floors, numMsgs, Date.now());
  if (batch.length === 0) return null;
  const next = recordBatch(cursor, batch.map((m) => ({ lane: m.lane, msgId: m.msgId })));
  c.storage.transactionSync(() => c.store.saveGroup(group, next));
  c.telemetry.returned("fetch", batch.length, payloadBytes(batch));
  return batch.map(toMq9Message);
}

/**
 * Holds a FETCH that found nothing (long-poll): `read` is tried again
 * whenever messages become visible and answers as soon as it finds some;
 * at `deadline` (ms) the request is answered with what `read` finds then
 * (usually nothing). `waiterId` lets {@link cancelHeld} release it.
 * Refused (too_many_requests) while MAX_PENDING_FETCHES are held.
 */
async function hold(
  c: MailboxCore, address: string, waiterId: string | null, deadline: number, read: () => Mq9Message[] | null,
): Promise<MessagesResult> {
  if (c.waiters.size >= MAX_PENDING_FETCHES) {
    throw new Mq9Error("too_many_requests", `mailbox ${echo(address)} already holds ${MAX_PENDING_FETCHES} waiting FETCH requests`);
  }
  c.telemetry.touch(); // a long-poll is held (and again when it is answered, below)
  const held = await new Promise<MessagesResult>((resolve) => {
    c.waiters.add({
      id: waiterId,
      deadline,
      poll: () => {
        const messages = read();
        if (messages) resolve({ ok: true, messages });
        return messages !== null;
      },
      expire: () => resolve({ ok: true, messages: read() ?? [] }),
      fail: (e) => resolve(failure(e)),
    });
    c.rearm();
  });
  c.telemetry.touch();
  return held;
}

/** Releases the held FETCH `waiterId` (answered empty); false when none is held. */
export function cancelHeld(c: MailboxCore, waiterId: string): boolean {
  const cancelled = c.waiters.cancel(waiterId);
  if (cancelled) c.rearm();
  return cancelled;
}
