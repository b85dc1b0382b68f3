/**
 * MortarMQ v0 frame encoder/decoder (spec §1–§2).
 *
 * Frame = u32_be length || u8 op || payload[length − 1]; every integer is
 * big-endian; length is 1..=MAX_FRAME_LEN.
 *
 * Each op's payload is stated once, as a field table (layouts.ts); its
 * size, encode and decode are generated from it (codec.gen.ts).
 *
 * Encoding writes each frame straight into one buffer of its exact size (or
 * into a caller's buffer), with no per-field allocation. Decoding returns
 * byte fields as zero-copy `subarray` views of the payload given to it, so
 * the caller must not reuse that memory while the frame is in use.
 */
import { payloadLength, readPayload, writePayload } from "./codec.gen";
import { FRAME_HEADER_LEN, MAX_FRAME_LEN, OP_NAMES, classifyOp } from "./constants";
import { Reader, Writer } from "./cursor";
import { ErrorCode, MortarError } from "./errors";
import type { Frame } from "./frames";
import { FRAME_LAYOUTS, tailBytes } from "./layouts";

// ---------------------------------------------------------------- sizes

export { payloadLength };

/** Bytes of the DECLARE retention tail (fields:u8, retention_ms:u64, retention_bytes:u64, retention_messages:u64, discard:u8). */
export const DECLARE_RETENTION_TAIL_LEN = tailBytes(FRAME_LAYOUTS.DECLARE);

/** Total encoded bytes of `f`, including the 4-byte length prefix. @throws RangeError for an op without a layout */
export function frameSize(f: Frame): number {
  return FRAME_HEADER_LEN + 1 + payloadLength(f);
}

// ---------------------------------------------------------------- encode

/** Writes `f` (header included) at `w.p`; `len` is its payload length. */
function writeFrame(w: Writer, f: Frame, len: number): void {
  if (len + 1 > MAX_FRAME_LEN) {
    throw new RangeError(`${OP_NAMES[f.op]} frame length ${len + 1} exceeds MAX_FRAME_LEN ${MAX_FRAME_LEN}`);
  }
  w.u32(len + 1, "length");
  w.u8(f.op, "op");
  writePayload(w, f);
}

/**
 * Encodes one frame (length prefix included) into a new buffer of exactly
 * frameSize(f) bytes.
 * @throws RangeError when a field does not fit its wire width or the frame
 *   would exceed MAX_FRAME_LEN (a programming error, not a protocol error).
 */
export function encodeFrame(f: Frame): Uint8Array {
  const len = payloadLength(f);
  const b = new Uint8Array(FRAME_HEADER_LEN + 1 + len);
  writeFrame(new Writer(new DataView(b.buffer), b, 0), f, len);
  return b;
}

/**
 * Encodes `f` into `target` at `offset`; returns the offset after it.
 * @throws RangeError as encodeFrame, or when `target` is too small.
 */
export function encodeFrameInto(f: Frame, target: Uint8Array, offset = 0): number {
  const len = payloadLength(f);
  if (offset < 0 || offset + FRAME_HEADER_LEN + 1 + len > target.length) {
    throw new RangeError(`target too small: need ${FRAME_HEADER_LEN + 1 + len} bytes at offset ${offset}`);
  }
  const w = new Writer(new DataView(target.buffer, target.byteOffset, target.byteLength), target, offset);
  writeFrame(w, f, len);
  return w.p;
}

/**
 * Encodes many frames back to back into one buffer of their exact total size
 * (for batching MSG/OK responses into one WebSocket message).
 * @throws RangeError as encodeFrame.
 */
export function encodeFrames(frames: readonly Frame[]): Uint8Array {
  let total = 0;
  for (const f of frames) total += FRAME_HEADER_LEN + 1 + payloadLength(f);
  const b = new Uint8Array(total);
  const w = new Writer(new DataView(b.buffer), b, 0);
  for (const f of frames) writeFrame(w, f, payloadLength(f));
  return b;
}

// ---------------------------------------------------------------- decode

/**
 * The error for an op byte that is not one of the 15 v0 ops, or null when it is.
 * 0x00/0xFF → ILLEGAL_OP; 0x10–0xFE → UNKNOWN_OP.
 */
export function opError(op: number): MortarError | null {
  const cls = classifyOp(op);
  if (cls === "known") return null;
  const hex = "0x" + op.toString(16).padStart(2, "0");
  if (cls === "illegal") return new MortarError(ErrorCode.ILLEGAL_OP, `op ${hex} is illegal`, op);
  return new MortarError(ErrorCode.UNKNOWN_OP, `op ${hex} is reserved (${cls})`, op);
}

/**
 * Decodes the payload of a frame whose op byte is `op`. Byte fields are views
 * into `payload`.
 * @throws MortarError ILLEGAL_OP / UNKNOWN_OP for a bad op byte;
 *   MALFORMED_PAYLOAD when the payload is short, has trailing bytes, or an
 *   inner length field overruns it. Never throws anything else.
 */
export function decodeFrame(op: number, payload: Uint8Array): Frame {
  const bad = opError(op);
  if (bad) throw bad;
  return readPayload(new Reader(payload, op), op);
}

/**
 * Decodes exactly one whole frame (length prefix included).
 * @throws MortarError FRAME_LENGTH_INVALID when the prefix is 0, above
 *   MAX_FRAME_LEN, or disagrees with `bytes.length`; otherwise as decodeFrame.
 */
export function decodeFrameBytes(bytes: Uint8Array): Frame {
  if (bytes.length < FRAME_HEADER_LEN + 1) {
    throw new MortarError(ErrorCode.FRAME_LENGTH_INVALID, `frame is ${bytes.length} bytes, shorter than header + op`);
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = v.getUint32(0);
  if (length === 0 || length > MAX_FRAME_LEN || length !== bytes.length - FRAME_HEADER_LEN) {
    throw new MortarError(
      ErrorCode.FRAME_LENGTH_INVALID,
      `length prefix ${length} does not match ${bytes.length - FRAME_HEADER_LEN} bytes (valid 1..${MAX_FRAME_LEN})`,
    );
  }
  return decodeFrame(bytes[FRAME_HEADER_LEN]!, bytes.subarray(FRAME_HEADER_LEN + 1));
}
