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

/** A body within the limit, or the refusal of one over it. */
export type LimitedBody =
  | { ok: true; bytes: Uint8Array }
  /** `size`: the declared length, or "more than <max>" for a streamed body; `rest`: what is left unread. */
  | { ok: false; size: string; rest: ReadableStreamDefaultReader<Uint8Array> | null };

/**
 * Reads `req`'s body when it is at most `maxBytes` (declared or counted
 * while streaming). Over the limit it stops reading and returns the size as
 * text and the unread rest, for `answerDiscardingRest`.
 */
export async function readLimitedBody(req: Request, maxBytes: number): Promise<LimitedBody> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    return { ok: false, size: declared.trim(), rest: req.body ? req.body.getReader() : null };
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
