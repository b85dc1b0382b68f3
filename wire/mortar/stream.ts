/**
 * Streaming MortarMQ v0 frame decoder (spec §1): bytes arrive in arbitrary
 * chunks (WebSocket message boundaries are not frame boundaries); whole
 * frames come out.
 *
 * - A frame that lies inside one chunk is decoded in place: its byte fields
 *   are views of that chunk (do not mutate a chunk after pushing it).
 * - A frame split across chunks is copied into one buffer of exactly its
 *   declared `length`; nothing beyond one frame is ever buffered.
 * - `length` = 0 or > MAX_FRAME_LEN → FRAME_LENGTH_INVALID; op 0x00/0xFF →
 *   ILLEGAL_OP; op 0x10–0xFE → UNKNOWN_OP (both reported as soon as the op
 *   byte arrives, without waiting for the payload); a payload that does not
 *   parse → MALFORMED_PAYLOAD.
 * - After the first error the decoder is dead: it never resynchronises and
 *   every later push reports the same error.
 */
import { FRAME_HEADER_LEN, MAX_FRAME_LEN } from "./constants";
import { decodeFrame, opError } from "./codec";
import { ErrorCode, MortarError } from "./errors";
import type { Frame } from "./frames";

/** What one push produced: the whole frames, in order, then the error (if any) that stopped decoding. */
export interface DecodeOutcome {
  frames: Frame[];
  /**
   * Each frame's body as received (op byte + payload, without the length
   * prefix), parallel to `frames`: a view of the pushed chunk, or of the
   * decoder's copy of a frame split across chunks. Lets a caller forward a
   * frame without encoding it again.
   */
  bodies: Uint8Array[];
  error: MortarError | null;
}

export class FrameDecoder {
  /** Header bytes of a length prefix split across chunks. */
  private readonly header = new Uint8Array(FRAME_HEADER_LEN);
  private headerFill = 0;
  /** Declared `length` of the frame being read; 0 while reading a header. */
  private length = 0;
  /** Op byte + payload of a frame split across chunks. */
  private body: Uint8Array | null = null;
  private bodyFill = 0;
  private failure: MortarError | null = null;

  /**
   * Feeds the next chunk of the byte stream.
   * Never throws: every problem is returned as a MortarError in `error`.
   */
  push(chunk: Uint8Array): DecodeOutcome {
    const frames: Frame[] = [];
    const bodies: Uint8Array[] = [];
    if (this.failure) return { frames, bodies, error: this.failure };
    const n = chunk.length;
    let i = 0;
    while (i < n && !this.failure) {
      if (this.length === 0) {
        i = this.readHeader(chunk, i);
      } else if (this.body === null) {
        // First byte of the frame body is in this chunk: check the op now.
        const bad = opError(chunk[i]!);
        if (bad) {
          this.failure = bad;
        } else if (n - i >= this.length) {
          this.emit(frames, bodies, chunk.subarray(i, i + this.length));
          i += this.length;
          this.length = 0;
        } else {
          this.body = new Uint8Array(this.length);
          this.body.set(chunk.subarray(i), 0);
          this.bodyFill = n - i;
          i = n;
        }
      } else {
        const take = Math.min(this.length - this.bodyFill, n - i);
        this.body.set(chunk.subarray(i, i + take), this.bodyFill);
        this.bodyFill += take;
        i += take;
        if (this.bodyFill === this.length) {
          const body = this.body;
          this.body = null;
          this.bodyFill = 0;
          this.length = 0;
          this.emit(frames, bodies, body);
        }
      }
    }
    return { frames, bodies, error: this.failure };
  }

  /** True while part of a frame (even one header byte) is buffered: the half-frame timer runs. */
  get hasPartialFrame(): boolean {
    return !this.failure && (this.headerFill > 0 || this.length > 0);
  }

  /** Bytes of the current partial frame received so far (header included). */
  get bufferedBytes(): number {
    if (this.length === 0) return this.headerFill;
    return FRAME_HEADER_LEN + this.bodyFill;
  }

  /** The error that killed the decoder, or null while it is healthy. */
  get error(): MortarError | null {
    return this.failure;
  }

  /** Reads (part of) a length prefix starting at chunk[i]; returns the next index. */
  private readHeader(chunk: Uint8Array, i: number): number {
    let len: number;
    if (this.headerFill === 0 && chunk.length - i >= FRAME_HEADER_LEN) {
      len = ((chunk[i]! << 24) | (chunk[i + 1]! << 16) | (chunk[i + 2]! << 8) | chunk[i + 3]!) >>> 0;
      i += FRAME_HEADER_LEN;
    } else {
      const take = Math.min(FRAME_HEADER_LEN - this.headerFill, chunk.length - i);
      this.header.set(chunk.subarray(i, i + take), this.headerFill);
      this.headerFill += take;
      i += take;
      if (this.headerFill < FRAME_HEADER_LEN) return i;
      const h = this.header;
      len = ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
      this.headerFill = 0;
    }
    if (len === 0 || len > MAX_FRAME_LEN) {
      this.failure = new MortarError(
        ErrorCode.FRAME_LENGTH_INVALID,
        `frame length ${len} outside 1..${MAX_FRAME_LEN}`,
      );
    } else {
      this.length = len;
    }
    return i;
  }

  /** Decodes one whole body (op + payload) into `frames`, or records the error. */
  private emit(frames: Frame[], bodies: Uint8Array[], body: Uint8Array): void {
    try {
      frames.push(decodeFrame(body[0]!, body.subarray(1)));
      bodies.push(body);
    } catch (e) {
      this.failure = e instanceof MortarError
        ? e
        : new MortarError(ErrorCode.MALFORMED_PAYLOAD, `payload does not parse: ${String(e)}`, body[0]!);
    }
  }
}
