/**
 * A long-poll FETCH waited for by its caller (issue #26 §2 (f)), not held
 * in the Mailbox's memory: each probe is a WebSocket upgrade `GET /wait`
 * to the Mailbox (objects/mailbox/wait-sockets.ts). The Mailbox answers
 * the messages (or an error) at once, or parks the socket with
 * hibernation; it may then be evicted while the caller waits. On WAKE (a
 * message became visible; the Mailbox closes the socket) the caller probes
 * again; at its deadline, or when `signal` aborts (client gone), it closes
 * the socket and answers empty. A stateless FETCH keeps the position of its
 * first probe (the 101's floors) so that `deliver: latest` sees what was
 * sent while it waited.
 *
 * Each parked FETCH holds one outgoing WebSocket of the caller's
 * invocation: a caller with many (a NATS connection) bounds them with a
 * {@link LongPollBudget} and holds the rest in the Mailbox's memory as
 * before (dispatch.ts).
 */
import type { FetchSpec } from "../../wire/mq9";
import type { Mailbox } from "../mailbox/Mailbox";
import { WAIT_FLOORS_HEADER, WAIT_HEADER, WAIT_PATH, type MessagesResult, type WaitRequest } from "../mailbox/rpc";

/** The wait upgrade's URL (the host is not used). */
const WAIT_URL = `https://mailbox${WAIT_PATH}`;

/** How many long-polls of one caller may wait on sockets at once; the rest are held in the Mailbox. */
export class LongPollBudget {
  private open = 0;

  constructor(readonly max: number) {}

  /** Takes a slot: false when all `max` are in use. */
  take(): boolean {
    if (this.open >= this.max) return false;
    this.open++;
    return true;
  }

  /** Gives a slot back. */
  give(): void {
    this.open--;
  }
}

/**
 * FETCH `spec` (maxWaitMs > 0) on `stub` as a caller-side long-poll (see
 * the file's comment). Resolves the Mailbox's answer, or `[]` at the
 * deadline or when `signal` aborts. Rejects when a probe cannot reach the
 * object (the dispatcher turns that into a fault reply).
 */
export async function longPollFetch(
  stub: DurableObjectStub<Mailbox>, address: string, spec: FetchSpec, signal?: AbortSignal,
): Promise<MessagesResult> {
  const deadline = Date.now() + spec.maxWaitMs;
  let probe: WaitRequest = { address, spec, floors: null, deadline };
  for (;;) {
    if (signal?.aborted) probe = { ...probe, deadline: 0 }; // one last look, no park
    const res = await stub.fetch(WAIT_URL, { headers: { Upgrade: "websocket", [WAIT_HEADER]: JSON.stringify(probe) } });
    const ws = res.webSocket;
    if (res.status !== 101 || !ws) return (await res.json()) as MessagesResult;
    const floors = res.headers.get(WAIT_FLOORS_HEADER);
    probe = { ...probe, spec: { ...probe.spec, forceDeliver: false }, floors: floors === null ? null : (JSON.parse(floors) as number[]) };
    if (!(await parked(ws, deadline, signal))) return { ok: true, messages: [] };
  }
}

/**
 * Waits on a parked socket: true when the Mailbox woke it (WAKE, or it
 * closed the socket: probe again), false at `deadline` or on abort (the
 * socket is closed from this side).
 */
function parked(ws: WebSocket, deadline: number, signal: AbortSignal | undefined): Promise<boolean> {
  ws.accept();
  return new Promise<boolean>((resolve) => {
    let done = false;
    const finish = (woke: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      try {
        ws.close(1000, "done");
      } catch {
        /* already closed */
      }
      resolve(woke);
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), Math.max(0, deadline - Date.now()));
    ws.addEventListener("message", () => finish(true));
    ws.addEventListener("close", () => finish(true));
    ws.addEventListener("error", () => finish(true));
    if (signal?.aborted) finish(false);
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}
