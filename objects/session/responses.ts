/**
 * Strict request-order responses with pipelining (spec §2.1 "single
 * connection FIFO"), pure.
 *
 * Every request frame reserves a slot when it is decoded, in arrival order.
 * Slots are filled whenever their answer is ready (possibly out of order:
 * a PING may be ready before the PUB in front of it is committed); `drain()`
 * hands out the longest run of filled slots at the head, concatenated, so
 * one socket write carries many responses. A slot may also carry `close`:
 * draining stops after it and reports it, so "ERR then close" happens in
 * order, after every earlier answer was written.
 *
 * The queue also tracks the bytes of requests whose slot is not filled yet
 * (`pendingBytes`) and the bytes of answers filled but not yet drained
 * (`readyBytes`, e.g. waiting behind a slow head): the Session bounds both
 * (backpressure).
 *
 * A slot may carry an `onWritten` callback, returned by the `drain()` that
 * hands out its bytes, to be run after they were written (a SUB's pushes
 * wait for its OK).
 */

/** How to close the connection after a slot's bytes are written. */
export interface CloseAction {
  /** WebSocket close code (1000 normal, 1002 protocol error, 1008 policy). */
  code: number;
  reason: string;
}

interface Slot {
  bytes: Uint8Array | undefined;
  requestBytes: number;
  close: CloseAction | undefined;
  onWritten: (() => void) | undefined;
}

/** What `drain()` returns. */
export interface Drained {
  /** Concatenated frames ready to write, or null when none. */
  bytes: Uint8Array | null;
  /** Set when a closing slot was reached (its bytes are included in `bytes`). */
  close: CloseAction | null;
  /** Callbacks of the drained slots, to run after `bytes` were written. */
  written: (() => void)[];
}

export class ResponseQueue {
  private slots: Slot[] = [];
  private head = 0;
  /** Slot id of slots[0]. */
  private base = 0;
  private pendingReqBytes = 0;
  private readyAnswerBytes = 0;
  private closed = false;

  /** Reserves the next slot for a request of `requestBytes` bytes; returns its id. */
  reserve(requestBytes: number): number {
    this.slots.push({ bytes: undefined, requestBytes, close: undefined, onWritten: undefined });
    this.pendingReqBytes += requestBytes;
    return this.base + this.slots.length - 1;
  }

  /**
   * Fills slot `id` with encoded frame bytes (empty for "no answer"), and
   * optionally a close action. Filling a slot twice, or one already drained,
   * is ignored (a late answer after a timeout).
   */
  fill(id: number, bytes: Uint8Array, close?: CloseAction, onWritten?: () => void): void {
    const s = this.slots[id - this.base];
    if (id < this.base + this.head || !s || s.bytes !== undefined) return;
    s.bytes = bytes;
    s.close = close;
    s.onWritten = onWritten;
    this.pendingReqBytes -= s.requestBytes;
    this.readyAnswerBytes += bytes.length;
  }

  /** Whether slot `id` is still waiting for its answer. */
  isPending(id: number): boolean {
    const s = this.slots[id - this.base];
    return id >= this.base + this.head && !!s && s.bytes === undefined;
  }

  /** Takes the filled slots at the head (stopping after a closing slot). */
  drain(): Drained {
    if (this.closed) return { bytes: null, close: null, written: [] };
    const parts: Uint8Array[] = [];
    const written: (() => void)[] = [];
    let total = 0;
    let close: CloseAction | null = null;
    while (this.head < this.slots.length) {
      const s = this.slots[this.head];
      if (s.bytes === undefined) break;
      this.head++;
      if (s.onWritten) written.push(s.onWritten);
      if (s.bytes.length) {
        parts.push(s.bytes);
        total += s.bytes.length;
        this.readyAnswerBytes -= s.bytes.length;
      }
      if (s.close) {
        close = s.close;
        this.closed = true;
        break;
      }
    }
    if (this.head > 1024 && this.head * 2 > this.slots.length) {
      this.slots = this.slots.slice(this.head);
      this.base += this.head;
      this.head = 0;
    }
    if (parts.length === 0) return { bytes: null, close, written };
    if (parts.length === 1) return { bytes: parts[0], close, written };
    const out = new Uint8Array(total);
    let off = 0;
    for (const p of parts) {
      out.set(p, off);
      off += p.length;
    }
    return { bytes: out, close, written };
  }

  /** Reserved slots not yet drained. */
  get pending(): number {
    return this.slots.length - this.head;
  }

  /** Bytes of requests whose answer is not filled yet. */
  get pendingBytes(): number {
    return this.pendingReqBytes;
  }

  /** Bytes of answers filled but not drained yet. */
  get readyBytes(): number {
    return this.readyAnswerBytes;
  }
}
