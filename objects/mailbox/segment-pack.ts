/**
 * A mailbox segment's body, pure (no storage, no platform): the messages
 * of one SEND group commit (or a run of delayed messages coming due, or
 * migrated legacy rows) packed into ONE blob, so a commit writes one row
 * however many messages it carries (issue #26 (c)–(e); docs/mq9.md
 * "Storage"). segment-store.ts stores the blobs; this file encodes,
 * decodes and cuts runs of messages into segments of at most
 * {@link SEGMENT_MAX_BYTES}.
 *
 * Layout (little-endian): u8 version (1), u32 count, then per message:
 * u32 id − first id of the segment, u8 lane, u8 flags, f64 create_ms,
 * [f64 expires_ms], [key], [tags], [reply_to], [correlation_id],
 * [dead_letter] (each a u32 byte length + UTF-8, present when its flag is
 * set), u32 payload length + payload bytes.
 */
import type { Lane } from "../../wire/mq9";

/** One stored, visible message as a segment holds it. */
export interface SegmentEntry {
  msgId: number;
  lane: Lane;
  createMs: number;
  expiresMs: number | null;
  key: string | null;
  /** Tags as stored: ",a,b," (encodeTags), or null. */
  tags: string | null;
  replyTo: string | null;
  correlationId: string | null;
  /** A dead-letter copy's DeadLetterInfo JSON, or null. */
  deadLetter: string | null;
  /** The payload: on decode a view into the segment's body (copy it to keep it past the body). */
  payload: Uint8Array;
}

/** Most bytes of messages one segment takes; a single larger message (≤ MAX_PAYLOAD_BYTES + headers) gets a segment alone. */
export const SEGMENT_MAX_BYTES = 1024 * 1024;

const VERSION = 1;
const F_EXPIRES = 1;
const F_KEY = 2;
const F_TAGS = 4;
const F_REPLY = 8;
const F_CORR = 16;
const F_DEAD = 32;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Fixed bytes per entry: id, lane, flags, create_ms, payload length. */
const ENTRY_FIXED = 4 + 1 + 1 + 8 + 4;

/** Bytes `e` takes in a body (an upper bound: strings counted at 3 bytes per UTF-16 unit). */
export function entryBound(e: Omit<SegmentEntry, "msgId">): number {
  let n = ENTRY_FIXED + e.payload.byteLength;
  if (e.expiresMs !== null) n += 8;
  for (const s of [e.key, e.tags, e.replyTo, e.correlationId, e.deadLetter]) if (s !== null) n += 4 + 3 * s.length;
  return n;
}

/**
 * Encodes `entries` (msg_id ascending, all ≥ `firstId` and < firstId + 2³²)
 * as a segment body starting at msg_id `firstId`.
 */
export function encodeSegment(firstId: number, entries: readonly SegmentEntry[]): Uint8Array {
  const strings: (Uint8Array | null)[] = [];
  let size = 1 + 4;
  for (const e of entries) {
    size += ENTRY_FIXED + e.payload.byteLength + (e.expiresMs !== null ? 8 : 0);
    for (const s of [e.key, e.tags, e.replyTo, e.correlationId, e.deadLetter]) {
      const b = s === null ? null : encoder.encode(s);
      strings.push(b);
      if (b) size += 4 + b.byteLength;
    }
  }
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out[0] = VERSION;
  view.setUint32(1, entries.length, true);
  let o = 5;
  let si = 0;
  for (const e of entries) {
    const own = strings.slice(si, si + 5);
    si += 5;
    let flags = e.expiresMs !== null ? F_EXPIRES : 0;
    [F_KEY, F_TAGS, F_REPLY, F_CORR, F_DEAD].forEach((f, i) => { if (own[i]) flags |= f; });
    view.setUint32(o, e.msgId - firstId, true);
    out[o + 4] = e.lane;
    out[o + 5] = flags;
    view.setFloat64(o + 6, e.createMs, true);
    o += 14;
    if (e.expiresMs !== null) {
      view.setFloat64(o, e.expiresMs, true);
      o += 8;
    }
    for (const b of own) {
      if (!b) continue;
      view.setUint32(o, b.byteLength, true);
      out.set(b, o + 4);
      o += 4 + b.byteLength;
    }
    view.setUint32(o, e.payload.byteLength, true);
    out.set(e.payload, o + 4);
    o += 4 + e.payload.byteLength;
  }
  return out;
}

/**
 * Decodes a segment body written by {@link encodeSegment} for `firstId`.
 * Payloads are views into `body`.
 * @throws Error on an unknown version or a truncated body
 */
export function decodeSegment(firstId: number, body: ArrayBuffer | Uint8Array): SegmentEntry[] {
  const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== VERSION) throw new Error(`mailbox segment: unknown version ${bytes[0]}`);
  const count = view.getUint32(1, true);
  const out: SegmentEntry[] = new Array(count);
  let o = 5;
  const str = (): string => {
    const n = view.getUint32(o, true);
    const s = decoder.decode(bytes.subarray(o + 4, o + 4 + n));
    o += 4 + n;
    return s;
  };
  for (let i = 0; i < count; i++) {
    const msgId = firstId + view.getUint32(o, true);
    const lane = bytes[o + 4] as Lane;
    const flags = bytes[o + 5]!;
    const createMs = view.getFloat64(o + 6, true);
    o += 14;
    let expiresMs: number | null = null;
    if (flags & F_EXPIRES) {
      expiresMs = view.getFloat64(o, true);
      o += 8;
    }
    const key = flags & F_KEY ? str() : null;
    const tags = flags & F_TAGS ? str() : null;
    const replyTo = flags & F_REPLY ? str() : null;
    const correlationId = flags & F_CORR ? str() : null;
    const deadLetter = flags & F_DEAD ? str() : null;
    const n = view.getUint32(o, true);
    if (o + 4 + n > bytes.byteLength) throw new Error("mailbox segment: truncated body");
    const payload = bytes.subarray(o + 4, o + 4 + n);
    o += 4 + n;
    out[i] = { msgId, lane, createMs, expiresMs, key, tags, replyTo, correlationId, deadLetter, payload };
  }
  return out;
}

/**
 * Cuts `entries` (msg_id ascending) into runs of at most
 * {@link SEGMENT_MAX_BYTES} encoded bytes each (a larger entry is a run
 * alone), in order.
 */
export function cutSegments<E extends Omit<SegmentEntry, "msgId">>(entries: readonly E[]): E[][] {
  const out: E[][] = [];
  let run: E[] = [];
  let bytes = 0;
  for (const e of entries) {
    const b = entryBound(e);
    if (run.length > 0 && bytes + b > SEGMENT_MAX_BYTES) {
      out.push(run);
      run = [];
      bytes = 0;
    }
    run.push(e);
    bytes += b;
  }
  if (run.length > 0) out.push(run);
  return out;
}
