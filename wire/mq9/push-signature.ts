/**
 * The signature of a push request (docs/push.md "Verifying the
 * signature"): Standard Webhooks (https://www.standardwebhooks.com), so a
 * receiver verifies with the `standardwebhooks` library of its language:
 *
 *   webhook-id: msg_<base64url SHA-256 of the message's signed mq9 headers>
 *   webhook-timestamp: <unix seconds>
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, "<webhook-id>.<timestamp>.<body>")>
 *
 * The mq9 headers that describe the message (SIGNED_PUSH_HEADERS) are
 * covered through the id: it is a hash of them, so a receiver that
 * recomputes it (pushWebhookId) from the headers it got knows they are
 * the ones signed. The id is stable across the attempts of a message (the
 * attempt number is not in it): it is the message's idempotency key.
 *
 * The key: for a `whsec_` secret, the base64-decoded bytes after the
 * prefix (Standard Webhooks); for any other secret, its UTF-8 bytes.
 *
 * Deprecated, sent for one more release: `mq9-signature: t=<unix
 * seconds>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>` (timestamp and body
 * only). Uses WebCrypto (`crypto.subtle`), a global in workerd, Node ≥ 20
 * and browsers.
 */

import { base64ToBytes, bytesToBase64 } from "./base64";

/** Standard Webhooks headers of a push request. */
export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

/** Prefix of a Standard Webhooks secret: the rest is the key, base64. */
export const WEBHOOK_SECRET_PREFIX = "whsec_";

/**
 * The push request headers the webhook-id covers, in the order they are
 * hashed: everything that describes the message. Not covered: the
 * attempt number (it changes per attempt, and the id must not),
 * `mq9-push-id` (a subscription has its own secret, so a request cannot
 * be replayed to another one) and `content-type` (always
 * application/octet-stream).
 */
export const SIGNED_PUSH_HEADERS = [
  "mq9-mail-address", "mq9-msg-id", "mq9-priority", "mq9-key", "mq9-tags", "mq9-create-time", "mq9-reply-to", "mq9-correlation-id",
] as const;

/** First line of the hashed text of pushWebhookId (the version of the rule). */
const WEBHOOK_ID_SCHEME = "mq9-push-v1";

/** Header carrying the deprecated signature (timestamp and body only; sent until the next release). */
export const PUSH_SIGNATURE_HEADER = "mq9-signature";

/** Signature scheme version written by this broker. */
export const PUSH_SIGNATURE_SCHEME = "v1";

/** Default tolerance of {@link verifyPushSignature} between `t` and the receiver's clock, seconds. */
export const DEFAULT_SIGNATURE_TOLERANCE_S = 300;

const utf8 = new TextEncoder();

/**
 * The key bytes of `secret`: for `whsec_<base64>` the decoded bytes (a
 * malformed base64 part falls back to the UTF-8 bytes of the whole
 * secret; PUSH.CREATE refuses one), else the secret's UTF-8 bytes.
 */
export function pushKeyBytes(secret: string): Uint8Array {
  const key = whsecKey(secret);
  return key !== null && key.length > 0 ? key : utf8.encode(secret);
}

/** The key of a `whsec_<base64>` secret (the decoded bytes), or null when `secret` is not one. */
export function whsecKey(secret: string): Uint8Array | null {
  return secret.startsWith(WEBHOOK_SECRET_PREFIX) ? decodeBase64(secret.slice(WEBHOOK_SECRET_PREFIX.length)) : null;
}

/** HMAC-SHA256 key of `secret` (pushKeyBytes), for both signature headers. */
export function pushSigningKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", pushKeyBytes(secret) as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/** Standard padded base64 → bytes, or null when it is not that (atob alone also takes whitespace and missing padding). */
function decodeBase64(text: string): Uint8Array | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return null;
  return base64ToBytes(text);
}

const base64 = (bytes: ArrayBuffer): string => bytesToBase64(new Uint8Array(bytes));

/** Reads one request header by lower-case name: undefined/null when absent. */
export type HeaderLookup = (name: string) => string | null | undefined;

/**
 * The webhook-id of a push request with these headers: `msg_` + base64url
 * (no padding) of SHA-256 over the UTF-8 text "mq9-push-v1" followed, for
 * each of SIGNED_PUSH_HEADERS in order, by "\n<name>:<value>" (the value
 * as sent; empty when the header is absent). Header values never hold a
 * line break, so the text is unambiguous.
 */
export async function pushWebhookId(header: HeaderLookup): Promise<string> {
  let text = WEBHOOK_ID_SCHEME;
  for (const name of SIGNED_PUSH_HEADERS) text += `\n${name}:${header(name) ?? ""}`;
  const digest = await crypto.subtle.digest("SHA-256", utf8.encode(text));
  return `msg_${base64(digest).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** The bytes Standard Webhooks signs: `"<id>.<t>."` followed by the body. */
function webhookSignedBytes(id: string, t: number, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const prefix = utf8.encode(`${id}.${t}.`);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix, 0);
  out.set(body, prefix.length);
  return out;
}

/** `webhook-signature` for `body` with id `id` at unix second `t`: `v1,<base64 HMAC-SHA256>`. */
export async function signWebhook(key: CryptoKey, id: string, t: number, body: Uint8Array): Promise<string> {
  return `v1,${base64(await crypto.subtle.sign("HMAC", key, webhookSignedBytes(id, t, body)))}`;
}

/**
 * The signature headers of a push request with the mq9 headers `headers`
 * (lower-case names) and `body`, sent at unix second `t`: webhook-id,
 * webhook-timestamp, webhook-signature, and the deprecated mq9-signature.
 */
export async function pushSignatureHeaders(key: CryptoKey, headers: Readonly<Record<string, string>>, t: number, body: Uint8Array): Promise<Record<string, string>> {
  const id = await pushWebhookId((name) => headers[name]);
  const [standard, legacy] = await Promise.all([signWebhook(key, id, t, body), signPush(key, t, body)]);
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(t),
    [WEBHOOK_SIGNATURE_HEADER]: standard,
    [PUSH_SIGNATURE_HEADER]: legacy,
  };
}

/**
 * Checks a push request the Standard Webhooks way and that its mq9
 * headers are the signed ones: true when `webhook-signature` holds a `v1`
 * signature of "<webhook-id>.<webhook-timestamp>.<body>" under `secret`,
 * the timestamp is within `toleranceS` of `nowS` (unix seconds), and
 * webhook-id equals pushWebhookId of the request's headers. Constant-time
 * in the signature bytes.
 */
export async function verifyPushWebhook(
  secret: string, header: HeaderLookup, body: Uint8Array,
  opts: { nowS?: number; toleranceS?: number } = {},
): Promise<boolean> {
  const id = header(WEBHOOK_ID_HEADER);
  const ts = header(WEBHOOK_TIMESTAMP_HEADER);
  const sigs = header(WEBHOOK_SIGNATURE_HEADER);
  if (!id || !ts || !sigs || !/^[0-9]{1,12}$/.test(ts)) return false;
  const t = Number(ts);
  const now = opts.nowS ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceS ?? DEFAULT_SIGNATURE_TOLERANCE_S)) return false;
  const want = await signWebhook(await pushSigningKey(secret), id, t, body);
  let ok = false;
  for (const got of sigs.split(" ")) ok = constantTimeEqual(want, got) || ok;
  return ok && id === (await pushWebhookId(header));
}

/** Whether two strings are equal, in time independent of where they differ. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The bytes that are signed: `"<t>."` followed by the body. */
export function signedPayload(t: number, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const prefix = utf8.encode(`${t}.`);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix, 0);
  out.set(body, prefix.length);
  return out;
}

function hex(bytes: ArrayBuffer): string {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += b.toString(16).padStart(2, "0");
  return s;
}

/** The deprecated `mq9-signature` value for `body` signed at unix second `t` with `key` (from {@link pushSigningKey}). */
export async function signPush(key: CryptoKey, t: number, body: Uint8Array): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", key, signedPayload(t, body));
  return `t=${t},${PUSH_SIGNATURE_SCHEME}=${hex(mac)}`;
}

/** A parsed header: the timestamp and every `v1` signature (hex), or null when malformed. */
export function parsePushSignature(header: string): { t: number; v1: string[] } | null {
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return null;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t") {
      if (!/^[0-9]{1,12}$/.test(v)) return null;
      t = Number(v);
    } else if (k === PUSH_SIGNATURE_SCHEME) {
      if (/^[0-9a-f]{64}$/.test(v)) v1.push(v);
    }
  }
  return t === null || v1.length === 0 ? null : { t, v1 };
}

/**
 * Checks the deprecated `mq9-signature` of a push request (it covers the
 * timestamp and body only; prefer verifyPushWebhook): true when `header` carries a `v1` HMAC of
 * `"<t>." + body` under `secret` and `t` is within `toleranceS` of `nowS`
 * (unix seconds). Comparison is constant-time in the signature bytes.
 */
export async function verifyPushSignature(
  secret: string, header: string, body: Uint8Array,
  opts: { nowS?: number; toleranceS?: number } = {},
): Promise<boolean> {
  const parsed = parsePushSignature(header);
  if (!parsed) return false;
  const now = opts.nowS ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - parsed.t) > (opts.toleranceS ?? DEFAULT_SIGNATURE_TOLERANCE_S)) return false;
  const want = (await signPush(await pushSigningKey(secret), parsed.t, body)).split("=").pop()!;
  let ok = false;
  for (const got of parsed.v1) ok = constantTimeEqual(want, got) || ok;
  return ok;
}
