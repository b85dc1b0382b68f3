/**
 * One push attempt (platform glue; docs/push.md "The request"): POSTs a
 * message's payload to the subscription's endpoint with the `mq9-*`
 * headers and the Standard Webhooks signature (webhook-id,
 * webhook-timestamp, webhook-signature; plus the deprecated
 * mq9-signature; wire/mq9/push-signature.ts), and reports how it ended. No retries
 * here, no storage: the driver records the outcome. Redirects are not
 * followed (`redirect: "manual"`, a 3xx is a failed attempt), and the
 * answer's body is not read. A 1xx interim answer is not the outcome: the
 * final answer behind it is (interim.ts). The timeout is the caller's: it aborts
 * `signal` with reason {@link ATTEMPT_TIMED_OUT} (the driver checks every
 * attempt's deadline from its one loop timer — a timer per attempt cost
 * more CPU in workerd than the rest of the attempt's JavaScript).
 */
import { checkPushUrl, pushSignatureHeaders, type PushUrlPolicy } from "../../../wire/mq9";
import { VERSION } from "../../../wire/version";
import { finalAnswer } from "./interim";
import { connectionErrorDetail, outcomeOfStatus, type AttemptOutcome } from "./state";

/** What to send. */
export interface AttemptRequest {
  url: string;
  /** The `mq9-*` headers and content-type (pushHeaders, wire/mq9/push.ts). */
  headers: Record<string, string>;
  body: Uint8Array;
  /** HMAC key of the subscription's secret (pushSigningKey). */
  key: CryptoKey;
  /** The subscription's timeout, ms (reported in the outcome when `signal` is aborted with ATTEMPT_TIMED_OUT). */
  timeoutMs: number;
}

/** The abort reason that makes an attempt a `timeout` (no answer — status line and headers — in time). */
export const ATTEMPT_TIMED_OUT = "push attempt timed out";

/**
 * Sends one attempt. Resolves (never rejects) with the outcome of the
 * final answer (1xx interim answers skipped): `ok` for a 2xx answer, `http_error` with its Retry-After for any other status,
 * `timeout` when `signal` was aborted with ATTEMPT_TIMED_OUT, or
 * `connection_error` (DNS, refused, reset, TLS, …; the platform's
 * internal-error text is replaced, connectionErrorDetail). Aborting `signal` for
 * another reason (the subscription was deleted, the mailbox purged) ends
 * the request; the outcome is then ignored by the caller.
 */
export async function sendAttempt(req: AttemptRequest, signal: AbortSignal): Promise<AttemptOutcome> {
  try {
    const t = Math.floor(Date.now() / 1000);
    const signature = await pushSignatureHeaders(req.key, req.headers, t, req.body);
    const res = await fetch(req.url, {
      method: "POST",
      headers: { ...req.headers, ...signature, "user-agent": `mortarmq-push/${VERSION}` },
      body: req.body,
      redirect: "manual",
      signal,
    });
    if (res.status >= 100 && res.status <= 199 && res.body) return await afterInterim(res.status, res.body);
    const outcome = outcomeOfStatus(res.status, res.headers.get("retry-after"), Date.now());
    res.body?.cancel().catch(() => {}); // the answer's body is not needed
    return outcome;
  } catch (e) {
    if (signal.aborted && signal.reason === ATTEMPT_TIMED_OUT) return { kind: "timeout", timeoutMs: req.timeoutMs };
    return { kind: "connection_error", detail: connectionErrorDetail(e instanceof Error ? e.message : String(e)) };
  }
}

/**
 * The outcome of the final answer behind a 1xx answer `status` whose body
 * `stream` is the rest of the connection (interim.ts): read up to the
 * final head, then the stream is cancelled. No final head (the connection
 * closed, or not HTTP) is a `connection_error`. Rejects when the attempt's
 * signal aborts the read (the caller's catch judges it).
 */
async function afterInterim(status: number, stream: ReadableStream<Uint8Array>): Promise<AttemptOutcome> {
  const reader = stream.getReader();
  let got = new Uint8Array(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (value) {
        const all = new Uint8Array(got.length + value.length);
        all.set(got);
        all.set(value, got.length);
        got = all;
      }
      const a = finalAnswer(got);
      if (a.kind === "final") return outcomeOfStatus(a.status, a.retryAfter, Date.now());
      if (a.kind === "malformed" || done) {
        return { kind: "connection_error", detail: `the endpoint answered HTTP ${status} (interim) and no valid final answer after it` };
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * Why the endpoint rules refuse `url` now (the Mq9Error's text, `push url
 * "…" refused: <rule>`), or null when they allow it: a subscription stored
 * under a looser policy (PUSH_ALLOW_LOOPBACK since unset, a narrower
 * PUSH_ALLOWED_HOSTS) sends nothing to a host the vars refuse.
 */
export function refusedByPolicy(url: string, policy: PushUrlPolicy): string | null {
  try {
    checkPushUrl(url, policy);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}
