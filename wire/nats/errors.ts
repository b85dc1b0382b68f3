/**
 * NATS client-protocol limits and the `-ERR` texts this broker sends, with
 * the same wording nats-server uses (server/parser.go, server/client.go,
 * server/errors.go). See docs/nats.md for the full table.
 */

/** Longest control line (bytes before CRLF) a client may send; nats-server MAX_CONTROL_LINE_SIZE. */
export const MAX_CONTROL_LINE = 4096;

/**
 * `max_payload` announced in INFO, bytes (nats-server default, 1 MiB). For
 * HPUB it bounds headers + body together, as nats-server does.
 */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Standard `-ERR` texts (without the surrounding quotes). */
export const NatsErr = {
  /** Unparseable operation name or a missing CRLF after a payload (fatal). */
  UnknownOp: "Unknown Protocol Operation",
  /** Control line longer than {@link MAX_CONTROL_LINE} (fatal). */
  MaxControlLine: "Maximum Control Line Exceeded",
  /** PUB/HPUB size above max_payload (fatal). */
  MaxPayload: "Maximum Payload Violation",
  /** Bad or missing credentials in CONNECT, or an operation before CONNECT when auth is required (fatal). */
  AuthViolation: "Authorization Violation",
  /** No CONNECT within the auth timeout when auth is required (fatal). */
  AuthTimeout: "Authentication Timeout",
  /** PUB/HPUB subject that is not a valid literal subject (non-fatal; the message is dropped). */
  InvalidPublishSubject: "Invalid Publish Subject",
  /** SUB subject that is not a valid subject (non-fatal; nothing subscribed). */
  InvalidSubject: "Invalid Subject",
  /** HPUB on a connection that did not ask for `headers` in CONNECT (fatal). */
  HeadersNotSupported: "message headers not supported",
  /** CONNECT with `no_responders` but without `headers` (fatal). */
  NoRespondersRequiresHeaders: "no responders requires headers support",
  /** CONNECT `protocol` outside 0..1 (fatal). */
  BadClientProtocol: "invalid client protocol",
  /** The tenant's connection quota is reached (fatal; the real nats-server text). */
  MaxConnections: "maximum connections exceeded",
  /** The token could not be checked (tenant directory unreachable; fatal, retry later). */
  AuthUnavailable: "Authorization Unavailable",
  /** Too many subscriptions on one connection (non-fatal). */
  MaxSubscriptions: "maximum subscriptions exceeded",
  /** Too much outstanding mq9 request work on one connection (fatal). */
  SlowConsumer: "Slow Consumer",
  /** A partial operation was not completed in time (fatal). */
  StaleConnection: "Stale Connection",
  /** HPUB header block that does not start with `NATS/1.0` (non-fatal; the message is dropped). */
  BadHeader: "bad message header detected",
} as const;

/**
 * The `-ERR` text of a SUB the connection's permissions refuse (non-fatal;
 * nothing subscribed), worded as nats-server's (server/client.go
 * processSub): `Permissions Violation for Subscription to "<subject>"`,
 * with ` using queue "<queue>"` for a queue subscription.
 */
export function subscribeViolation(subject: string, queue?: string): string {
  return `Permissions Violation for Subscription to "${subject}"${queue === undefined ? "" : ` using queue "${queue}"`}`;
}

/**
 * A protocol error: `text` goes on the wire as `-ERR '<text>'`; `fatal`
 * errors close the connection after the `-ERR`.
 */
export class NatsProtocolError extends Error {
  constructor(
    readonly text: string,
    readonly fatal: boolean,
  ) {
    super(text);
    this.name = "NatsProtocolError";
  }
}

/** Shorthand for a fatal protocol error. */
export function fatal(text: string): NatsProtocolError {
  return new NatsProtocolError(text, true);
}
