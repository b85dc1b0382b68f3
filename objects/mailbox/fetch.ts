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
    const target = openFetch(c, address, spec, null);
    const read = () => readTarget(c, target);
    const first = read();
    if (first || spec.maxWaitMs === 0) return { ok: true, messages: first ?? [] };
    return await hold(c, address, waiterId, now + spec.maxWaitMs, read);
  } catch (e) {
    return failure(e);
  }
}

/**
 * Where a FETCH reads: a consumer group (its stored floors, read again each
 * time), or fixed per-lane floors (stateless). Structured-cloneable: a
 * parked long-poll keeps it in its wait socket's attachment (wait-sockets.ts).
 */
export interface ReadTarget {
  group: string | null;
  /** Stateless: the per-lane floors fixed when the FETCH opened; [] for a group. */
  floors: number[];
  numMsgs: number;
}

/**
 * Opens a FETCH's position. Stateless: a fixed start from `deliver`, or
 * `floors` when given (a long-poll re-probing after a wake-up keeps the
 * position of its first probe). Stateful: the group per {@link openGroup} —
 * a new or force_deliver'd group's cursor is saved now (so a `latest`
 * group sees what is sent after its first FETCH), a new group past
 * MAX_GROUPS_PER_MAILBOX is refused (too_many_requests).
 */
function openFetch(c: MailboxCore, address: string, spec: FetchSpec, floors: number[] | null): ReadTarget {
  const group = spec.group;
  if (group === null) return { group, floors: floors ?? cursorAt(c.startId(spec.deliver)).floors, numMsgs: spec.numMsgs };
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
  return { group, floors: [], numMsgs: spec.numMsgs };
}

/** One FETCH attempt at `t`: the next batch, or null when nothing is there. */
function readTarget(c: MailboxCore, t: ReadTarget): Mq9Message[] | null {
  return t.group === null ? readStateless(c, t.floors, t.numMsgs) : readForGroup(c, t.group, t.numMsgs);
}

/** Outcome of {@link probeFetch}: answered now, or nothing yet (park the request at `target`). */
export type Probe = { answer: MessagesResult } | { park: ReadTarget };

/**
 * A long-poll FETCH's probe (the `GET /wait` upgrade, wait-sockets.ts):
 * the first batch when there is one (or the error), else where to wait —
 * the caller parks without a waiter in memory. Synchronous, so no SEND
 * lands between the empty read and the park. `floors`: a stateless FETCH's
 * position from its first probe. Refused (too_many_requests) while
 * `parked` + held FETCHes reach MAX_PENDING_FETCHES.
 */
export function probeFetch(c: MailboxCore, address: string, spec: FetchSpec, floors: number[] | null, parked: number): Probe {
  try {
    c.catchUp();
    c.requireMailbox(address);
    const target = openFetch(c, address, spec, floors);
    const first = readTarget(c, target);
    if (first) return { answer: { ok: true, messages: first } };
    if (parked + c.waiters.size >= MAX_PENDING_FETCHES) throw tooManyHeld(address);
    return { park: target };
  } catch (e) {
    return { answer: failure(e) };
  }
}

function tooManyHeld(address: string): Mq9Error {
  return new Mq9Error("too_many_requests", `mailbox ${echo(address)} already holds ${MAX_PENDING_FETCHES} waiting FETCH requests`);
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
  if (c.waiters.size + c.parked() >= MAX_PENDING_FETCHES) throw tooManyHeld(address);
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
