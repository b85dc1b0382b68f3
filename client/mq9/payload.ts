/**
 * Message payloads: what `send` accepts and how replies' base64 payloads
 * become bytes. mq9 payloads are opaque bytes (mq9 spec, SEND).
 */
import { base64ToBytes } from "../../wire/mq9/base64"; // not the index: that loads zod

/**
 * A payload to send: a string (sent as its UTF-8 bytes), bytes
 * (Uint8Array, ArrayBuffer or any ArrayBufferView, sent as they are), or
 * any other JSON value (sent as its JSON text).
 */
export type Mq9Payload = string | Uint8Array | ArrayBuffer | ArrayBufferView | object | number | boolean | null;

const te = new TextEncoder();

/** The bytes of `p` (see {@link Mq9Payload}). */
export function encodePayload(p: Mq9Payload): Uint8Array {
  if (typeof p === "string") return te.encode(p);
  if (p instanceof Uint8Array) return p;
  if (p instanceof ArrayBuffer) return new Uint8Array(p);
  if (ArrayBuffer.isView(p)) return new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
  return te.encode(JSON.stringify(p));
}

/** The bytes of a reply's base64 `payload`. */
export function decodePayload(base64: string): Uint8Array {
  return base64ToBytes(base64);
}
