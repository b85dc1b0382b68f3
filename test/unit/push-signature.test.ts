/**
 * Push signatures (wire/mq9/push-signature.ts, docs/push.md "Verifying the
 * signature"): Standard Webhooks headers checked by the `standardwebhooks`
 * library — the real peer receivers use — with the webhook-id recomputed
 * independently (node:crypto) from the mq9 headers it covers, and the
 * deprecated mq9-signature kept for one release.
 */
import { createHash, createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  SIGNED_PUSH_HEADERS, parsePushCreateRequest, pushHeaders, pushSignatureHeaders, pushSigningKey, pushWebhookId, verifyPushSignature, verifyPushWebhook,
} from "../../wire/mq9";

const te = new TextEncoder();
const WHSEC = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const body = new Uint8Array([0, 1, 2, 255, 10, 13]);
const now = Math.floor(Date.now() / 1000);
const headersOf = (over: Partial<Parameters<typeof pushHeaders>[0]> = {}) => pushHeaders({
  mailAddress: "agent.inbox", msgId: 42, priority: "urgent", key: "état", tags: ["a", "b"], createMs: 1_700_000_000_000,
  replyTo: "caller.inbox", correlationId: "c-1", ...over,
}, 2, "push_x");

/** The id as docs/push.md defines it, with node:crypto. */
function docId(h: Record<string, string>): string {
  const text = ["mq9-push-v1", ...SIGNED_PUSH_HEADERS.map((n) => `${n}:${h[n] ?? ""}`)].join("\n");
  return `msg_${createHash("sha256").update(text).digest("base64url")}`;
}

/** What a receiver does with the library: verify (throws when it does not), then compare the id with its mq9 headers. */
function receive(secret: string, h: Record<string, string>, b: Uint8Array): "ok" | "bad signature" | "headers not signed" {
  try {
    new Webhook(secret).verify(b, h, { jsonParse: false });
  } catch {
    return "bad signature";
  }
  return h["webhook-id"] === docId(h) ? "ok" : "headers not signed";
}

describe("Standard Webhooks signature of a push request", () => {
  it("verifies with the standardwebhooks library; webhook-id is the documented hash of the mq9 headers, the same on every attempt", async () => {
    const h = headersOf();
    const sig = await pushSignatureHeaders(await pushSigningKey(WHSEC), h, now, body);
    expect(Object.keys(sig).sort()).toEqual(["mq9-signature", "webhook-id", "webhook-signature", "webhook-timestamp"]);
    expect(sig["webhook-timestamp"]).toBe(String(now));
    expect(sig["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(sig["webhook-id"]).toBe(docId(h));
    expect(receive(WHSEC, { ...h, ...sig }, body)).toBe("ok");
    expect(await verifyPushWebhook(WHSEC, (n) => ({ ...h, ...sig })[n], body)).toBe(true);
    // a later attempt of the same message: same id (the receiver's idempotency key)
    const again = await pushSignatureHeaders(await pushSigningKey(WHSEC), { ...h, "mq9-attempt": "3" }, now + 5, body);
    expect(again["webhook-id"]).toBe(sig["webhook-id"]);
  });

  it.each([
    ["mq9-msg-id", "43"], ["mq9-mail-address", "other.inbox"], ["mq9-reply-to", "attacker.inbox"],
    ["mq9-correlation-id", "c-2"], ["mq9-priority", "critical"], ["mq9-key", "x"], ["mq9-tags", "a"], ["mq9-create-time", "1"],
  ])("a captured push replayed with another %s does not verify", async (name, value) => {
    const h = headersOf();
    const sig = await pushSignatureHeaders(await pushSigningKey(WHSEC), h, now, body);
    const replay = { ...h, ...sig, [name]: value };
    expect(receive(WHSEC, replay, body)).toBe("headers not signed");
    expect(await verifyPushWebhook(WHSEC, (n) => replay[n], body)).toBe(false);
    // and the id recomputed for the forged headers breaks the signature
    expect(receive(WHSEC, { ...replay, "webhook-id": docId(replay) }, body)).toBe("bad signature");
  });

  it("rejects another secret, another body and an old timestamp", async () => {
    const h = headersOf({ replyTo: undefined, correlationId: undefined, key: null, tags: [] });
    const sig = await pushSignatureHeaders(await pushSigningKey(WHSEC), h, now - 1000, body);
    const all = { ...h, ...sig };
    expect(receive(WHSEC, all, body)).toBe("bad signature"); // 1000 s old: the library's tolerance is 300 s
    expect(await verifyPushWebhook(WHSEC, (n) => all[n], body, { nowS: now - 1000 })).toBe(true);
    expect(await verifyPushWebhook(`whsec_${Buffer.alloc(32, 8).toString("base64")}`, (n) => all[n], body, { nowS: now - 1000 })).toBe(false);
    expect(await verifyPushWebhook(WHSEC, (n) => all[n], te.encode("x"), { nowS: now - 1000 })).toBe(false);
  });

  it("a secret that is not whsec_: the key is its UTF-8 bytes (the library takes it as base64 of them); mq9-signature is unchanged", async () => {
    const secret = "a-receiver-chosen-secret-of-32+-bytes!";
    const h = headersOf();
    const sig = await pushSignatureHeaders(await pushSigningKey(secret), h, now, body);
    expect(receive(Buffer.from(secret).toString("base64"), { ...h, ...sig }, body)).toBe("ok");
    expect(new Webhook(secret, { format: "raw" }).verify(body, { ...h, ...sig }, { jsonParse: false })).toBeUndefined(); // ASCII secrets: raw works too
    const legacy = createHmac("sha256", secret).update(`${now}.`).update(body).digest("hex");
    expect(sig["mq9-signature"]).toBe(`t=${now},v1=${legacy}`);
    expect(await verifyPushSignature(secret, sig["mq9-signature"]!, body)).toBe(true);
  });

  it("a whsec_ secret: both headers use its decoded bytes as the key", async () => {
    const sig = await pushSignatureHeaders(await pushSigningKey(WHSEC), headersOf(), now, body);
    const legacy = createHmac("sha256", Buffer.alloc(32, 7)).update(`${now}.`).update(body).digest("hex");
    expect(sig["mq9-signature"]).toBe(`t=${now},v1=${legacy}`);
    expect(await pushWebhookId((n) => headersOf()[n])).toBe(sig["webhook-id"]);
  });

  it("PUSH.CREATE takes a whsec_ secret only when it is base64 of 24–64 bytes", () => {
    const create = (secret: string) => () => parsePushCreateRequest(te.encode(JSON.stringify({ group_name: "g", url: "https://x.example/h", secret })));
    expect(create(WHSEC)().secret).toBe(WHSEC);
    expect(create(`whsec_${Buffer.alloc(64, 1).toString("base64")}`)().secret).toMatch(/^whsec_/);
    for (const bad of [`whsec_${"!".repeat(40)}`, `whsec_${Buffer.alloc(20, 1).toString("base64")}xxxxxx`, `whsec_${Buffer.alloc(23, 1).toString("base64")}`, `whsec_${Buffer.alloc(65, 1).toString("base64")}`]) {
      expect(create(bad), bad).toThrow(/whsec_ secret must be whsec_ \+ standard base64 of 24–64 bytes/);
    }
  });
});
