/**
 * The `mq9-signature` header of a push request (docs/push.md "Verifying
 * the signature"), Stripe-style:
 *
 *   mq9-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
 *
 * The key is the UTF-8 bytes of the subscription's secret, the signed
 * bytes are the decimal timestamp, one ".", then the raw request body.
 * A receiver recomputes the HMAC, compares it in constant time with every
 * `v1` value (more than one may appear while a secret is rotated), and
 * rejects a timestamp too far from its clock (replays). Uses WebCrypto
 * (`crypto.subtle`), a global in workerd, Node ≥ 20 and browsers.
 */

/** Header carrying the signature. */
export const PUSH_SIGNATURE_HEADER = "mq9-signature";

/** Signature scheme version written by this broker. */
export const PUSH_SIGNATURE_SCHEME = "v1";

/** Default tolerance of {@link verifyPushSignature} between `t` and the receiver's clock, seconds. */
export const DEFAULT_SIGNATURE_TOLERANCE_S = 300;

const utf8 = new TextEncoder();

/** HMAC-SHA256 key of `secret` (its UTF-8 bytes), for sign and verify. */
export function pushSigningKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
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

/** The header value for `body` signed at unix second `t` with `key` (from {@link pushSigningKey}). */
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
 * Checks a push request: true when `header` carries a `v1` HMAC of
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
  for (const got of parsed.v1) {
    let diff = 0;
    for (let i = 0; i < want.length; i++) diff |= want.charCodeAt(i) ^ got.charCodeAt(i);
    ok = ok || diff === 0;
  }
  return ok;
}
