/**
 * The tenant's publish-rate token bucket (docs/tenants.md "Publish rate"),
 * pure. One bucket per tenant lives in its TenantDirectory object; sessions
 * and Worker isolates do not ask it per message but lease budget from it in
 * chunks (gate.ts), so the bucket sees one call per chunk.
 *
 * Two dimensions, each optional: messages/s and bytes/s. Each holds at most
 * one second of its rate (the burst) and refills continuously. A grant is
 * min(want, available) per dimension, and only when every limited
 * dimension has something available (a grant of bytes without a message
 * could not be used). So whatever the number of lessees, everything
 * granted over any interval T is at most burst + rate × T.
 */

/** Seconds of rate a bucket holds when full (the burst), unless the bucket is built with another. */
export const BURST_S = 1;

/** Budget granted by one lease (units: messages, bytes; Infinity where unlimited). */
export interface Grant {
  msgs: number;
  bytes: number;
}

interface Dim {
  /** Per second. */
  rate: number;
  tokens: number;
}

export class RateBucket {
  private msgs: Dim | null;
  private bytes: Dim | null;
  private last: number;

  /**
   * `msgsPerS` / `bytesPerS`: null = that dimension is unlimited. Starts
   * full at `now` (ms). `burstS`: seconds of the rate it holds when full.
   */
  constructor(msgsPerS: number | null, bytesPerS: number | null, now: number, private readonly burstS = BURST_S) {
    this.msgs = msgsPerS === null ? null : { rate: msgsPerS, tokens: msgsPerS * burstS };
    this.bytes = bytesPerS === null ? null : { rate: bytesPerS, tokens: bytesPerS * burstS };
    this.last = now;
  }

  /** True when the rates are these (so a quota change can keep the current fill). */
  sameRates(msgsPerS: number | null, bytesPerS: number | null): boolean {
    return (this.msgs?.rate ?? null) === msgsPerS && (this.bytes?.rate ?? null) === bytesPerS;
  }

  /** Grants up to `want` (see the module comment). */
  grant(wantMsgs: number, wantBytes: number, now: number): Grant {
    this.refill(now);
    const m = this.msgs;
    const b = this.bytes;
    if ((m && m.tokens < 1) || (b && b.tokens < 1)) return { msgs: 0, bytes: 0 };
    const msgs = m ? Math.min(Math.max(0, Math.floor(wantMsgs)), Math.floor(m.tokens)) : Infinity;
    const bytes = b ? Math.min(Math.max(0, Math.floor(wantBytes)), Math.floor(b.tokens)) : Infinity;
    if (m) m.tokens -= msgs;
    if (b) b.tokens -= bytes;
    return { msgs, bytes };
  }

  /** Adds what the rate earned since the last refill; a clock that went back earns nothing (and does not move `last` back). */
  private refill(now: number): void {
    if (now <= this.last) return;
    const dt = (now - this.last) / 1000;
    this.last = now;
    for (const d of [this.msgs, this.bytes]) if (d) d.tokens = Math.min(d.rate * this.burstS, d.tokens + d.rate * dt);
  }
}
