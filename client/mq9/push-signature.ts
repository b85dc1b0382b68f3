/**
 * Push receivers' signature checks, as the client exports them
 * (docs/push.md "Verifying the signature"). Each scheme the broker signs
 * with gets its own verifier here, beside the others:
 *
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 *   `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<t>.<body>")>`, the
 *   id derived from the message's mq9 headers) — {@link verifyPushWebhook},
 *   the current scheme.
 * - `mq9-signature: t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>`
 *   — {@link verifyPushSignature}, deprecated (timestamp and body only).
 *
 * The key of a `whsec_<base64>` secret (what the broker generates) is its
 * decoded bytes, of any other secret its UTF-8 bytes (wire/mq9/push-signature.ts).
 * The signatures are spelled out here so that the published declarations
 * need no DOM or WebCrypto types (`CryptoKey`).
 */
import {
  DEFAULT_SIGNATURE_TOLERANCE_S,
  parsePushSignature as parseWire,
  verifyPushSignature as verifyWire,
  verifyPushWebhook as verifyWebhookWire,
} from "../../wire/mq9/push-signature";

/** A push request's headers: a fetch `Headers` (or anything with `get`), or a plain object (names matched case-insensitively). */
export type PushHeaders = { get(name: string): string | null } | Readonly<Record<string, string | string[] | undefined>>;

/**
 * Checks a push request the Standard Webhooks way, and that its mq9 headers
 * are the ones the broker signed: true when `webhook-signature` holds a `v1`
 * HMAC-SHA256 of `"<webhook-id>.<webhook-timestamp>." + body` under the key
 * of `secret`, the timestamp is within the tolerance of the clock, and
 * `webhook-id` is the id of the request's mq9 headers (so a captured request
 * replayed with another msg-id or reply-to fails). `body` is the raw request
 * body, unparsed. Constant-time; never throws for malformed headers (false).
 * (docs/push.md "Verifying the signature".)
 */
export function verifyPushWebhook(secret: string, headers: PushHeaders, body: Uint8Array, opts: VerifyPushOptions = {}): Promise<boolean> {
  const lookup = typeof (headers as { get?: unknown }).get === "function"
    ? (name: string) => (headers as { get(n: string): string | null }).get(name)
    : lowerCaseLookup(headers as Readonly<Record<string, string | string[] | undefined>>);
  return verifyWebhookWire(secret, lookup, body, opts);
}

function lowerCaseLookup(record: Readonly<Record<string, string | string[] | undefined>>): (name: string) => string | undefined {
  const lower = new Map<string, string>();
  for (const [k, v] of Object.entries(record)) if (v !== undefined) lower.set(k.toLowerCase(), Array.isArray(v) ? v.join(", ") : v);
  return (name) => lower.get(name);
}

/** Header carrying the broker's signature. */
export const PUSH_SIGNATURE_HEADER = "mq9-signature";

/** Options of {@link verifyPushSignature}. */
export interface VerifyPushOptions {
  /** The receiver's clock, unix seconds (default: now). */
  nowS?: number;
  /** Largest accepted distance between the header's `t` and `nowS`, seconds (default 300). */
  toleranceS?: number;
}

/** Default {@link VerifyPushOptions.toleranceS}, seconds. */
export const PUSH_SIGNATURE_TOLERANCE_S: number = DEFAULT_SIGNATURE_TOLERANCE_S;

/**
 * Checks a push request's `mq9-signature` header: true when it carries a `v1`
 * HMAC-SHA256 of `"<t>." + body` under `secret` (its UTF-8 bytes) and `t` is
 * within the tolerance of the clock; compared in constant time. `body` is
 * the raw request body, unparsed. Never throws for a malformed header (false).
 */
export function verifyPushSignature(secret: string, header: string, body: Uint8Array, opts: VerifyPushOptions = {}): Promise<boolean> {
  return verifyWire(secret, header, body, opts);
}

/** A parsed `mq9-signature` header: its timestamp (unix seconds) and every `v1` signature (hex), or null when malformed. */
export function parsePushSignature(header: string): { t: number; v1: string[] } | null {
  return parseWire(header);
}
