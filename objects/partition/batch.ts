/**
 * The Session → Partition append batch: whole PUB frames (spec §1–§2 byte
 * format) back to back. The Session copies each accepted PUB into the batch
 * exactly as the client sent it (`addFrameBody`: no re-encoding); the
 * Partition decodes the batch once, with the streaming frame decoder. One
 * format, one codec. The same builder packs (`add`) the MSG frames a
 * Partition returns from `deliver`.
 */
import { FRAME_HEADER_LEN, Op } from "../../wire/mortar/constants";
import { encodeFrameInto, frameSize } from "../../wire/mortar/codec";
import type { Frame, PubFrame } from "../../wire/mortar/frames";
import { FrameDecoder } from "../../wire/mortar/stream";

/** Growable buffer of frames (PUB frames for one partition, or MSG frames of one delivery). */
export class PubBatchBuilder {
  private buf: Uint8Array;
  /** Bytes used. */
  length = 0;
  /** Records added. */
  count = 0;

  constructor(initialBytes = 16 * 1024) {
    this.buf = new Uint8Array(initialBytes);
  }

  /** Encodes one frame into the batch (copies key and value). */
  add(f: Frame): void {
    this.reserve(this.length + frameSize(f));
    this.length = encodeFrameInto(f, this.buf, this.length);
    this.count++;
  }

  /**
   * Appends one frame given as its body (op byte + payload, as a decoder
   * read it): writes the u32 length prefix, then copies the body.
   */
  addFrameBody(body: Uint8Array): void {
    this.reserve(this.length + FRAME_HEADER_LEN + body.length);
    const b = this.buf;
    const n = body.length;
    let o = this.length;
    b[o++] = n >>> 24;
    b[o++] = (n >>> 16) & 0xff;
    b[o++] = (n >>> 8) & 0xff;
    b[o++] = n & 0xff;
    b.set(body, o);
    this.length = o + n;
    this.count++;
  }

  /** A copy of the packed batch (exactly `length` bytes, safe to send over RPC). */
  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }

  /** Grows the buffer to hold at least `need` bytes (keeping what it holds). */
  private reserve(need: number): void {
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  /** Empties the builder, keeping its buffer for reuse. */
  reset(): void {
    this.length = 0;
    this.count = 0;
  }
}

/**
 * Packs `frames` into one batch of exactly their size: one allocation, no
 * growth and no final copy — a 16 MiB value is held twice at most (its
 * frame's value and the batch), never in a doubled buffer.
 */
export function packFrames(frames: readonly Frame[]): Uint8Array {
  let size = 0;
  for (const f of frames) size += frameSize(f);
  const out = new Uint8Array(size);
  let o = 0;
  for (const f of frames) o = encodeFrameInto(f, out, o);
  return out;
}

/**
 * Decodes every record of a packed batch, in order.
 * @throws MortarError when the batch does not decode as whole PUB frames.
 */
export function readPubBatch(batch: Uint8Array): PubFrame[] {
  const dec = new FrameDecoder();
  const { frames, error } = dec.push(batch);
  if (error) throw error;
  if (dec.hasPartialFrame) throw new RangeError("append batch ends inside a frame");
  for (const f of frames) if (f.op !== Op.PUB) throw new RangeError(`append batch holds op ${f.op}`);
  return frames as PubFrame[];
}
