/**
 * mq9 over a NATS connection (docs/nats.md): each request is a NATS
 * request on the mq9 subject with the `mq9-*` headers in an HPUB header
 * block; the reply is the JSON text. Shared by the `nats-ws` (nats.ws,
 * WebSocket `/nats`) and `nats` (nats npm package, TCP through the bridge)
 * transports, which only differ in how they connect — both packages are
 * built on the same nats.js base client.
 *
 * A request in flight when the connection drops fails at once with a
 * `connection` error (the broker's session that held it is gone), instead
 * of waiting for its timeout; nats.js reconnects by itself and later
 * requests go over the new connection.
 */
import { Mq9ClientError } from "./errors";
import { raceSignal, type Mq9Transport, type Mq9TransportName, type TransportAnswer, type TransportOptions, type TransportRequest } from "./transport";

/** The part of a nats.js `MsgHdrs` used here. */
export interface NatsHeadersLike {
  set(name: string, value: string): void;
}

/** The part of a nats.js `NatsConnection` used here (nats and nats.ws alike). */
export interface NatsConnectionLike {
  request(subject: string, data: Uint8Array, opts: { timeout: number; headers?: NatsHeadersLike }): Promise<{ data: Uint8Array }>;
  status(): AsyncIterable<{ type: string }>;
  close(): Promise<void>;
  closed(): Promise<void | Error>;
}

const td = new TextDecoder();

/** Wait between reconnect attempts, ms (nats.js default 2000). */
export const RECONNECT_WAIT_MS = 1000;

/**
 * nats.js connection options for `servers` (the same for nats and
 * nats.ws): token, name, and reconnecting forever unless `reconnect` is false.
 */
export function natsConnectOptions(servers: string, o: TransportOptions) {
  return { servers, token: o.token, name: o.name, reconnect: o.reconnect ?? true, maxReconnectAttempts: -1, reconnectTimeWait: RECONNECT_WAIT_MS };
}

/** nats.js error codes that mean the token was refused. */
const AUTH_CODES = new Set(["AUTHORIZATION_VIOLATION", "AUTHENTICATION_EXPIRED", "BAD_AUTHENTICATION", "AUTHENTICATION_TIMEOUT"]);

/**
 * The client error for a nats.js error raised while connecting: the
 * broker's `Authorization Violation` is `unauthorized`, everything else a
 * connection failure.
 */
export function natsConnectError(e: unknown, url: string): Mq9ClientError {
  const code = (e as { code?: string })?.code ?? "";
  if (AUTH_CODES.has(code)) {
    return new Mq9ClientError("Authorization Violation", { kind: "unauthorized", retryable: false, source: "broker", cause: e });
  }
  return Mq9ClientError.connection(`cannot reach the broker at ${url} (${code || (e as Error)?.message || String(e)})`, null, e);
}

/** mq9 requests over one nats.js connection. */
export class NatsTransport implements Mq9Transport {
  /** Rejecters of the requests in flight, failed when the connection drops. */
  private readonly inFlight = new Set<(e: Mq9ClientError) => void>();

  constructor(
    readonly name: Exclude<Mq9TransportName, "http">,
    private readonly nc: NatsConnectionLike,
    private readonly makeHeaders: () => NatsHeadersLike,
    private readonly url: string,
  ) {
    void this.watch();
  }

  private async watch(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === "disconnect") this.failInFlight("the connection to the broker was lost");
      }
    } catch {
      /* status iterator ends with the connection */
    }
    this.failInFlight("the connection to the broker is closed");
  }

  private failInFlight(reason: string): void {
    for (const reject of [...this.inFlight]) reject(Mq9ClientError.connection(`${reason} (${this.url}); the request may or may not have taken effect`, null));
  }

  async request(req: TransportRequest): Promise<TransportAnswer> {
    let h: NatsHeadersLike | undefined;
    for (const [name, value] of Object.entries(req.headers)) {
      h ??= this.makeHeaders();
      h.set(name, value);
    }
    let reject!: (e: Mq9ClientError) => void;
    const dropped = new Promise<never>((_, r) => (reject = r));
    this.inFlight.add(reject);
    try {
      const sent = this.nc.request(req.subject, req.payload, { timeout: req.timeoutMs, headers: h });
      sent.catch(() => {}); // when the connection drop wins the race below
      const m = await raceSignal(Promise.race([sent, dropped]), req.signal);
      return { text: td.decode(m.data), status: null, retryAfterMs: null };
    } catch (e) {
      if (e instanceof Mq9ClientError || req.signal?.aborted) throw e;
      const code = (e as { code?: string })?.code;
      if (code === "TIMEOUT") throw Mq9ClientError.timeout(req.subject, req.timeoutMs, e);
      const what = code === "503" ? "no responder for the subject (is this an mq9 broker?)" : (e as Error)?.message || String(e);
      throw Mq9ClientError.connection(`request to ${this.url} failed: ${what}`, req.subject, e);
    } finally {
      this.inFlight.delete(reject);
    }
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}
