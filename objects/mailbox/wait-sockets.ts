/**
 * Long-poll FETCHes parked outside the Mailbox's memory (issue #26 §2 (f)).
 *
 * A held FETCH used to be a waiter in memory (waiters.ts) plus the alarm for
 * its deadline: the Mailbox stayed resident, billed for duration, for as
 * long as a consumer long-polled an empty mailbox. Here the waiting side
 * (objects/mq9/long-poll.ts) opens a WebSocket `GET /wait` to the Mailbox
 * instead; the upgrade is the FETCH's probe (fetch.ts probeFetch): the first
 * batch, or an error, comes back as a plain JSON response; when there is
 * nothing to deliver the Mailbox accepts the socket with the hibernation
 * API (`ctx.acceptWebSocket`, tag WAIT_TAG) and forgets it. Nothing in
 * memory and no timer: the runtime may evict the Mailbox while consumers
 * wait. When a message becomes visible (the same points that wake
 * in-memory waiters) every parked socket gets WAKE and is closed: its
 * caller probes again (and gets the messages, or parks again). The
 * deadline is the caller's: it closes its socket when the wait ends.
 *
 * Wire: request header WAIT_HEADER, JSON {@link WaitRequest}; a 101
 * answer carries WAIT_FLOORS_HEADER (a stateless FETCH's position, JSON
 * number[]: the next probe reads from there, so `latest` does not move).
 */
import { WAIT_FLOORS_HEADER, WAIT_HEADER, WAIT_PATH, WAIT_TAG, WAKE, type MessagesResult, type WaitRequest } from "./rpc";

/** The WaitRequest of a `GET /wait` upgrade, or null when `request` is not one. */
export function waitRequestOf(request: Request): WaitRequest | null {
  if (new URL(request.url).pathname !== WAIT_PATH) return null;
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") return null;
  const raw = request.headers.get(WAIT_HEADER);
  if (raw === null) return null;
  try {
    const w = JSON.parse(raw) as WaitRequest;
    return typeof w?.address === "string" && typeof w.deadline === "number" && w.spec ? w : null;
  } catch {
    return null;
  }
}

/** A probe's answer as the upgrade's (non-101) response. */
export function answerResponse(r: MessagesResult): Response {
  return Response.json(r);
}

/** Sockets parked now. */
export function parkedCount(ctx: DurableObjectState): number {
  return ctx.getWebSockets(WAIT_TAG).length;
}

/**
 * Parks the caller: accepts a hibernatable socket tagged WAIT_TAG (its
 * attachment: the deadline) and answers 101. `floors`: a stateless FETCH's
 * position, echoed in WAIT_FLOORS_HEADER.
 */
export function park(ctx: DurableObjectState, deadline: number, floors: number[] | null): Response {
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  ctx.acceptWebSocket(server, [WAIT_TAG]);
  server.serializeAttachment({ deadline });
  const headers = floors === null ? undefined : { [WAIT_FLOORS_HEADER]: JSON.stringify(floors) };
  return new Response(null, { status: 101, webSocket: client, headers });
}

/**
 * Something became visible (or the mailbox is gone): every parked socket
 * gets WAKE and is closed, so its caller probes again. Cheap when none is
 * parked (one lookup, no storage).
 */
export function wakeParked(ctx: DurableObjectState): void {
  for (const ws of ctx.getWebSockets(WAIT_TAG)) {
    try {
      ws.send(WAKE);
      ws.close(1000, WAKE);
    } catch {
      /* the caller already left */
    }
  }
}

/** A parked socket's own event (its caller closed or failed): nothing to keep, the runtime drops it. */
export function parkedSocketEnded(ws: WebSocket): void {
  try {
    ws.close(1000, "done");
  } catch {
    /* already closed */
  }
}
