/**
 * What the mq9 client needs from a transport: one request/reply exchange
 * (`nats request <subject> <payload>` with `mq9-*` headers, DESIGN.md §1).
 * Implementations: http.ts (`POST /mq9/<subject>`, fetch only), nats.ts
 * (over a nats.js connection: nats-ws.ts WebSocket to `/nats`, nats-tcp.ts
 * TCP through the bridge).
 */

/** The transports: `http` (fetch), `nats-ws` (nats.ws, WebSocket `/nats`), `nats` (nats npm package, TCP). */
export type Mq9TransportName = "http" | "nats-ws" | "nats";

/** One request. */
export interface TransportRequest {
  /** Full subject, e.g. `$mq9.AI.MSG.SEND.task.001`. */
  subject: string;
  /** `mq9-*` headers, name → value. */
  headers: Record<string, string>;
  payload: Uint8Array;
  /** Time allowed for the answer, ms. */
  timeoutMs: number;
  /** Gives up waiting (the request may still take effect at the broker). */
  signal?: AbortSignal;
}

/** The broker's answer, not yet interpreted. */
export interface TransportAnswer {
  /** The JSON reply text. */
  text: string;
  /** HTTP status (http), null over NATS. */
  status: number | null;
  /** HTTP `Retry-After`, ms, or null. */
  retryAfterMs: number | null;
}

/** A connected transport. */
export interface Mq9Transport {
  readonly name: Mq9TransportName;
  /**
   * Sends one request and resolves with the answer.
   * @throws Mq9ClientError source "connection" (no answer: unreachable, connection lost), "timeout", or the signal's reason when aborted
   */
  request(req: TransportRequest): Promise<TransportAnswer>;
  /** Closes the connection (NATS) / nothing to do (http). Pending requests fail. */
  close(): Promise<void>;
}

/** Connection settings every transport gets. */
export interface TransportOptions {
  /** Bearer token (http) / NATS `auth_token`; none for an open broker. */
  token?: string;
  /** NATS: reconnect after a lost connection, forever (default true). */
  reconnect?: boolean;
  /** NATS: connection name shown by the broker. */
  name?: string;
  /** http: the fetch to use (default globalThis.fetch; e.g. a Worker service binding's). */
  fetch?: typeof fetch;
}

/**
 * `p`, or the signal's reason as soon as `signal` aborts (whichever comes
 * first). A later rejection of `p` is then ignored, and the listener is
 * removed either way, so one long-lived signal serves many requests.
 */
export async function raceSignal<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  p.catch(() => {}); // settled after the abort: nobody waits for it any more
  if (signal.aborted) throw signal.reason;
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
