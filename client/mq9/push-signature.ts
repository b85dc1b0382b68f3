/**
 * Push receivers' signature checks, as the client exports them
 * (docs/push.md "Verifying the signature"). Each scheme the broker signs
 * with gets its own verifier here, beside the others:
 *
 * - `mq9-signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`
 *   — {@link verifyPushSignature}, the broker's scheme (wire/mq9/push-signature.ts).
 *
 * A Standard Webhooks verifier (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64>`) belongs beside it as its own function
 * taking the three headers. The signatures are spelled out here so that the
 * published declarations need no DOM or WebCrypto types (`CryptoKey`).
 */
import {
  DEFAULT_SIGNATURE_TOLERANCE_S,
  parsePushSignature as parseWire,
  verifyPushSignature as verifyWire,
} from "../../wire/mq9/push-signature";

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
