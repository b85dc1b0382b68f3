/**
 * Byte-buffer helpers shared by the protocols (pure): joining encoded
 * frames or operations into one buffer, and cutting output into messages of
 * bounded size (the WebSocket sessions send at most 1 MiB per message:
 * objects/session-base/SocketSession.ts).
 */

/**
 * Largest WebSocket message either side sends, bytes: Workers limit received
 * WebSocket messages to 1 MiB, and `ws` clients refuse far larger ones. The
 * MortarMQ and NATS streams do not care where messages split, so bigger
 * writes are cut (chunkBytes).
 */
export const MAX_WS_MESSAGE_BYTES = 1024 * 1024;

/** Concatenates `parts` into one buffer (the part itself when there is one). */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Cuts output into messages of at most `max` bytes: consecutive parts share
 * a message, and a part larger than `max` is cut (MortarMQ and NATS over
 * WebSocket are byte streams; message boundaries mean nothing to clients).
 * Parts are never copied when one fits alone.
 */
export function* chunkBytes(parts: Uint8Array[], max: number): Generator<Uint8Array> {
  let batch: Uint8Array[] = [];
  let size = 0;
  for (const p of parts) {
    let part = p;
    while (part.length > 0) {
      const n = Math.min(part.length, max - size);
      batch.push(n === part.length ? part : part.subarray(0, n));
      size += n;
      part = part.subarray(n);
      if (size === max) {
        yield concatBytes(batch);
        batch = [];
        size = 0;
      }
    }
  }
  if (size > 0) yield concatBytes(batch);
}
