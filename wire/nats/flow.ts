/**
 * What a NATS connection has sent that the client has not yet read (pure;
 * docs/nats.md "Slow consumers"). nats-server bounds the bytes pending in
 * its own buffer per connection (`max_pending`, 64 MiB) and the time one
 * write may take (`write_deadline`); a server behind a WebSocket cannot see
 * what the runtime still buffers, so it asks the client: after each
 * `pingAfterBytes` of output it appends a PING, and the client's PONG for it
 * proves every byte before that PING was read (a client reads its stream in
 * order and answers PINGs as it reads them). At most one PING is out at a
 * time.
 *
 * `pending` = bytes sent since the last answered PING. Output that would
 * take it over `maxPending` while a PING is still unanswered, or a PING
 * unanswered for the write deadline (the session's timer), makes the
 * connection a slow consumer: `-ERR 'Slow Consumer'` and close. (With no
 * PING out, everything sent was read: a burst goes out, followed by a
 * PING, so a client that reads is never judged on one burst; the session
 * bounds a burst by how many requests it runs at once.)
 */

/** Default bound of bytes sent and not yet known read, per connection: nats-server's `max_pending`, 64 MiB. */
export const DEFAULT_MAX_PENDING_OUTPUT = 64 * 1024 * 1024;
/** Default time a PING may stay unanswered before the connection is a slow consumer, ms (nats-server's `write_deadline`, 10 s). */
export const DEFAULT_WRITE_DEADLINE_MS = 10_000;
/** Bytes of output after which a PING asks the client to confirm (when none is out). */
export const PING_AFTER_BYTES = 256 * 1024;
/** Bytes of a PING operation. */
const PING_BYTES = 6;

/** What to do after some output was queued. */
export type FlowStep = "send" | "send+ping" | "slow";

export class OutputFlow {
  /** Bytes sent so far (PINGs included). */
  private total = 0;
  /** Bytes known read: everything up to the last answered PING. */
  private confirmed = 0;
  /** `total` right after the PING that is out, or null when none is. */
  private outstanding: number | null = null;

  /** `maxPending`: bytes (≥ 1); `pingAfter`: bytes of output that call for a PING. */
  constructor(private readonly maxPending = DEFAULT_MAX_PENDING_OUTPUT, private readonly pingAfter = PING_AFTER_BYTES) {}

  /** Bytes sent and not yet known read. */
  get pending(): number {
    return this.total - this.confirmed;
  }

  /** Whether a PING is out (the session's write-deadline timer runs while one is). */
  get awaiting(): boolean {
    return this.outstanding !== null;
  }

  /**
   * `bytes` more are about to be sent: "slow" when a PING is out and they
   * would take the pending bytes past maxPending (send nothing more, close
   * as a slow consumer); "send+ping" when a PING must follow them (counted
   * here); else "send".
   */
  queued(bytes: number): FlowStep {
    if (this.outstanding !== null && this.total + bytes - this.confirmed > this.maxPending) return "slow";
    this.total += bytes;
    if (this.outstanding === null && this.total - this.confirmed >= this.pingAfter) {
      this.total += PING_BYTES;
      this.outstanding = this.total;
      return "send+ping";
    }
    return "send";
  }

  /** The client answered a PONG: returns true when it was for the PING out (which confirms every byte before it). */
  pong(): boolean {
    if (this.outstanding === null) return false; // an answer to no PING of ours (or to a client-side check): nothing learned
    this.confirmed = this.outstanding;
    this.outstanding = null;
    return true;
  }
}
