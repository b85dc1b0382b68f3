/**
 * Request bodies with a size limit (docs/mq9.md, "Request bodies over the
 * limit"). A body is read up to the limit and no further: a declared
 * `Content-Length` over it is refused unread, a streamed (chunked) body as
 * soon as the count crosses it, and the refusal is answered at once.
 *
 * The client's unread bytes cannot simply be abandoned: workerd then closes
 * the connection with data unread, TCP resets it and the client often loses
 * the answer (and `wrangler dev`'s proxy, whose pooled connection is broken,
 * answers its own 503 — workerd issue #1741). So the answer's status,
 * headers and JSON go out at once, while the rest of the body is read and
 * dropped, unbuffered; the response ends when the body has ended or after a
 * bounded time and size (a "lingering close", as nginx does).
 */

import { concatBytes } from "../wire/nats/encoder";

/** Longest the rest of a refused body is discarded after the answer, ms. */
export const DISCARD_MAX_MS = 30_000;

/** Most bytes of a refused body discarded after the answer. */
export const DISCARD_MAX_BYTES = 256 * 1024 * 1024;

/** A body within the limit, or the refusal of one over it, or of one the broker cannot decode. */
export type LimitedBody =
  | { ok: true; bytes: Uint8Array }
  /** `size`: the declared length, or "more than <max>" for a streamed body; `rest`: what is left unread. */
  | { ok: false; size: string; rest: ReadableStreamDefaultReader<Uint8Array> | null; encoding?: undefined }
  /**
   * A body with a `Content-Encoding` (docs/operations.md "Compressed request
   * bodies"): 415 for an encoding other than gzip / deflate, 400 for data
   * that is not valid in its encoding. `rest`: what is left unread.
   */
  | { ok: false; encoding: { status: 400 | 415; error: string }; rest: ReadableStreamDefaultReader<Uint8Array> | null; size?: undefined };

/** `Content-Encoding` values decoded, by the DecompressionStream format that decodes them. */
const DECODED_ENCODINGS: Readonly<Record<string, "gzip" | "deflate">> = { gzip: "gzip", "x-gzip": "gzip", deflate: "deflate" };

/**
 * Reads `req`'s body when it is at most `maxBytes` (declared or counted
 * while streaming). Over the limit it stops reading and returns the size as
 * text and the unread rest, for `answerDiscardingRest`.
 *
 * A body sent with `Content-Encoding: gzip` (or `x-gzip`, `deflate`) is
 * decoded: `maxBytes` bounds both what is read and what decoding yields —
 * decoding stops as soon as it yields more (a small "zip bomb" never
 * inflates beyond the limit), and the body is refused as over the limit.
 * Any other encoding (`br`, `zstd`, several) is refused (415) unread; data
 * that is not valid gzip / deflate is refused (400). `identity` or none:
 * the bytes as sent.
 */
export async function readLimitedBody(req: Request, maxBytes: number): Promise<LimitedBody> {
  const coding = (req.headers.get("content-encoding") ?? "").trim().toLowerCase();
  if (coding === "" || coding === "identity") return readRaw(req, maxBytes);
  const format = DECODED_ENCODINGS[coding];
  if (format === undefined) {
    const rest = req.body && !waitsForContinue(req) ? req.body.getReader() : null;
    const error = `Content-Encoding ${JSON.stringify(coding.slice(0, 64))} is not supported: send the body uncompressed, or with gzip or deflate`;
    return { ok: false, encoding: { status: 415, error }, rest };
  }
  const raw = await readRaw(req, maxBytes);
  if (!raw.ok) return raw;
  return decodeBounded(raw.bytes, format, maxBytes, coding);
}

/**
 * `bytes` decoded from `format`, when that yields at most `maxBytes`; stops
 * decoding as soon as it yields more. `coding` names the encoding in errors.
 */
async function decodeBounded(bytes: Uint8Array, format: "gzip" | "deflate", maxBytes: number, coding: string): Promise<LimitedBody> {
  const reader = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream(format)).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        reader.cancel().catch(() => {});
        return { ok: false, size: `more than ${maxBytes}`, rest: null };
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, encoding: { status: 400, error: `body is not valid ${coding} data (Content-Encoding: ${coding})` }, rest: null };
  }
  return { ok: true, bytes: concatBytes(chunks) };
}

/** The body's bytes as sent, within `maxBytes` (see readLimitedBody). */
async function readRaw(req: Request, maxBytes: number): Promise<LimitedBody> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    // A client that asked `Expect: 100-continue` sends no body after an early final answer
    // (RFC 9110 §10.1.1; curl does so above 1 MiB): nothing to discard, the answer ends at once.
    const rest = req.body && !waitsForContinue(req) ? req.body.getReader() : null;
    return { ok: false, size: declared.trim(), rest };
  }
  if (declared !== null) return { ok: true, bytes: new Uint8Array(await req.arrayBuffer()) };
  if (!req.body) return { ok: true, bytes: new Uint8Array() };
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) return { ok: false, size: `more than ${maxBytes}`, rest: reader };
    chunks.push(value);
  }
  return { ok: true, bytes: concatBytes(chunks) };
}

/**
 * Reads and drops what is left of `req`'s body (bounded like a refused
 * body's rest: DISCARD_MAX_BYTES, DISCARD_MAX_MS) when the app answered
 * without reading it — a wrong token, no such route. workerd closes a
 * connection whose request body is unread without saying so; where no proxy
 * stands in front of it (the local runtime) the client's next request on
 * that keep-alive connection then fails with ECONNRESET. A body the app read,
 * or is reading (locked: e.g. the rest of a refused one), is left alone.
 */
export async function drainUnreadBody(req: Request): Promise<void> {
  if (req.body && !req.bodyUsed && !req.body.locked && !waitsForContinue(req)) await discard(req.body.getReader());
}

/**
 * True when the client sent `Expect: 100-continue`: it holds its body until
 * told to go on, and sends none after a final answer that came first — so
 * an unread body of such a request is not waited for.
 */
function waitsForContinue(req: Request): boolean {
  return (req.headers.get("expect") ?? "").trim().toLowerCase() === "100-continue";
}

/**
 * The response `body` with `status` and `headers`. Without `rest` a plain
 * response; with it, the body is written at once and the response stays
 * open while `rest` is read and dropped — at most `DISCARD_MAX_BYTES`, for
 * at most `DISCARD_MAX_MS` — then ends (the reader is cancelled).
 * `waitUntil` keeps the invocation alive meanwhile (when there is one).
 */
export function answerDiscardingRest(
  body: Uint8Array,
  init: { status: number; headers: Record<string, string> },
  rest: ReadableStreamDefaultReader<Uint8Array> | null,
  waitUntil?: (p: Promise<unknown>) => void,
): Response {
  if (!rest) return new Response(body as Uint8Array<ArrayBuffer>, init);
  const out = new TransformStream<Uint8Array, Uint8Array>();
  const writer = out.writable.getWriter();
  const finished = Promise.all([writer.write(body), discard(rest)]).then(() => writer.close()).catch(() => {
    /* the client went away: nothing left to answer */
  });
  waitUntil?.(finished);
  return new Response(out.readable, init);
}

/**
 * Reads and drops `reader` until it ends, `DISCARD_MAX_BYTES` were read or
 * `DISCARD_MAX_MS` passed (also while the client sends nothing), then
 * cancels it. Never throws.
 */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let expire = (_: "expired") => {};
  const expired = new Promise<"expired">((res) => (expire = res));
  const timer = setTimeout(() => expire("expired"), DISCARD_MAX_MS);
  let dropped = 0;
  try {
    while (dropped <= DISCARD_MAX_BYTES) {
      const r = await Promise.race([reader.read(), expired]);
      if (r === "expired" || r.done) break;
      dropped += r.value.byteLength;
    }
  } catch {
    /* the client went away */
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
}
