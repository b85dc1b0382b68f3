/**
 * The final answer behind 1xx interim answers (pure; docs/push.md
 * "Answers, timeouts and retries"). workerd's `fetch` does not skip an
 * interim answer (`100 Continue`, `102 Processing`, `103 Early Hints`): it
 * resolves with the 1xx status, and the answer's body stream is the rest
 * of the connection — the raw bytes of any further interim heads and of the
 * final head (`HTTP/1.1 200 OK\r\n…\r\n\r\n`) and body. Only the final
 * status judges an attempt, so attempt.ts reads those bytes up to the
 * final head and asks {@link finalAnswer} what it says.
 */

/** The most bytes of interim and final heads read after a 1xx answer; an endpoint sending more has no usable final status. */
export const MAX_INTERIM_BYTES = 16 * 1024;

/** What the bytes after a 1xx answer say so far. */
export type FinalAnswer =
  | { kind: "final"; status: number; retryAfter: string | null }
  | { kind: "more" }
  | { kind: "malformed" };

const STATUS_LINE = /^HTTP\/1\.[01] ([0-9]{3})(?: [^\r\n]*)?$/;
const latin1 = new TextDecoder("latin1");

/**
 * Reads `bytes` (everything after the first 1xx head so far) as HTTP/1.x
 * response heads: skips further 1xx heads, and answers the first non-1xx
 * head's status and `Retry-After` value; `more` when no complete final
 * head is there yet (fewer than MAX_INTERIM_BYTES read: the attempt's
 * timeout bounds the wait); `malformed` when a complete head is not an
 * HTTP/1.x status line and headers, or MAX_INTERIM_BYTES were read
 * without a final head.
 */
export function finalAnswer(bytes: Uint8Array): FinalAnswer {
  const text = latin1.decode(bytes.subarray(0, MAX_INTERIM_BYTES));
  let at = 0;
  for (;;) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end < 0) return bytes.length >= MAX_INTERIM_BYTES ? { kind: "malformed" } : { kind: "more" };
    const lines = text.slice(at, end).split("\r\n");
    const m = STATUS_LINE.exec(lines[0]!);
    if (!m) return { kind: "malformed" };
    const status = Number(m[1]);
    at = end + 4;
    if (status >= 100 && status <= 199) continue;
    let retryAfter: string | null = null;
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === "retry-after") retryAfter = line.slice(colon + 1).trim();
    }
    return { kind: "final", status, retryAfter };
  }
}
