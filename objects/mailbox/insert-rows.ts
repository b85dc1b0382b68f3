/**
 * Many plain messages as few SQL parameters (pure: no platform imports).
 *
 * workerd binds every SQL parameter at a cost of its own (its bind wrapper
 * formats an error-message string for each value, success or not: ~12 % of
 * workerd's CPU for a NATS client pipelining 32 SENDs, measured with
 * bench/tools/profile-mq9.ts and perf). A multi-row `INSERT … VALUES`
 * binds 9 values per message. Here a run of messages becomes four values:
 * the small columns of every row as one JSON array (read back with
 * `json_each`), all payloads back to back in one blob (each row cuts its
 * own out with `substr`), and the numbers every row shares. The rows stored
 * are the VALUES form's (store.ts `INSERT_FROM_JSON`).
 */

/** What one stored row needs (a NewMessage without key, as appendVisibleMany stores it). */
export interface PlainRow {
  lane: number;
  tags: readonly string[];
  payload: Uint8Array;
  expiresMs: number | null;
  replyTo: string | null;
  correlationId: string | null;
}

/** One INSERT: rows `first` … `first + count - 1` of the run. */
export interface InsertChunk {
  /** Index of the chunk's first row in the run (its msg_id is the run's first id + this). */
  first: number;
  count: number;
  /** `[[lane, tags, offset + 1, size, expires_ms, reply_to, correlation_id], …]` (offset into `payloads`, 1-based as substr counts). */
  json: string;
  /** The chunk's payloads back to back. */
  payloads: Uint8Array;
}

/**
 * Payload bytes per chunk. A Durable Object SQL value may be at most 2 MB;
 * a single larger payload (up to MAX_PAYLOAD_BYTES, 1 MiB) goes alone.
 */
export const CHUNK_PAYLOAD_BYTES = 1024 * 1024;
/** JSON characters per chunk, as bounded by {@link jsonBound} (the same 2 MB limit, with room to spare). */
export const CHUNK_JSON_CHARS = 1024 * 1024;

/** Tags column form: ",a,b," (so `instr(tags, ',a,')` matches whole tags), or null. */
export function encodeTags(tags: readonly string[]): string | null {
  return tags.length ? `,${tags.join(",")},` : null;
}

/** An upper bound of a row's JSON length: numbers ≤ 16 characters, a string character ≤ 6 (`\u001f`). */
function jsonBound(r: PlainRow): number {
  let n = 0;
  for (const t of r.tags) n += t.length + 1;
  return 128 + 6 * (n + (r.replyTo?.length ?? 0) + (r.correlationId?.length ?? 0));
}

/**
 * Where `rows` are cut into chunks: `[start, end)` index pairs, in order,
 * each within CHUNK_PAYLOAD_BYTES of payload and CHUNK_JSON_CHARS of JSON
 * (a row over either limit alone is a chunk of its own).
 */
export function chunkBounds(rows: readonly PlainRow[]): [number, number][] {
  const out: [number, number][] = [];
  let start = 0;
  let bytes = 0;
  let chars = 0;
  for (let i = 0; i < rows.length; i++) {
    const size = rows[i]!.payload.byteLength;
    const json = jsonBound(rows[i]!);
    if (i > start && (bytes + size > CHUNK_PAYLOAD_BYTES || chars + json > CHUNK_JSON_CHARS)) {
      out.push([start, i]);
      start = i;
      bytes = 0;
      chars = 0;
    }
    bytes += size;
    chars += json;
  }
  if (rows.length > start) out.push([start, rows.length]);
  return out;
}

/** The chunks of `rows` (see {@link chunkBounds}) with their JSON and payload blob. */
export function insertChunks(rows: readonly PlainRow[]): InsertChunk[] {
  return chunkBounds(rows).map(([start, end]) => {
    const parts: string[] = [];
    let bytes = 0;
    for (let i = start; i < end; i++) bytes += rows[i]!.payload.byteLength;
    const payloads = new Uint8Array(bytes);
    let at = 0;
    for (let i = start; i < end; i++) {
      const r = rows[i]!;
      parts.push(JSON.stringify([r.lane, encodeTags(r.tags), at + 1, r.payload.byteLength, r.expiresMs, r.replyTo, r.correlationId]));
      payloads.set(r.payload, at);
      at += r.payload.byteLength;
    }
    return { first: start, count: end - start, json: `[${parts.join(",")}]`, payloads };
  });
}
