import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../wire/mq9";
import {
  MAX_PUSH_SOURCE_ADDRESS_CHARS, Mq9Error, assertPushSource, parseMq9Subject, parsePushCreateRequest, parsePushDeleteRequest,
  parsePushSignature, pushHeaders, pushSigningKey, signPush, verifyPushSignature, DEFAULT_PUSH_BACKOFF,
} from "../../wire/mq9";
import {
  MAX_RETRY_AFTER_MS, UNREACHABLE_DETAIL, connectionErrorDetail, afterFailure, backoffMs, describeOutcome, newPushId, newPushSecret, nextPositions, outcomeOfStatus,
  parseRetryAfter, pushFloors, pushStartCursor, takeMessage, admitsBytes, startSlots, PUSH_MAX_CONNECTIONS, type OpenMessage,
} from "../../objects/mailbox/push/state";
import { cursorAt } from "../../objects/mailbox/cursor";
import { MAX_INTERIM_BYTES, finalAnswer } from "../../objects/mailbox/push/interim";

const te = new TextEncoder();
const json = (v: unknown) => te.encode(JSON.stringify(v));

function mq9Error(fn: () => unknown): Mq9Error {
  try {
    fn();
  } catch (e) {
    if (e instanceof Mq9Error) return e;
    throw e;
  }
  throw new Error("did not throw");
}

describe("PUSH subjects and requests", () => {
  it("parses the three PUSH subjects", () => {
    expect(parseMq9Subject("$mq9.AI.PUSH.CREATE.agent.inbox")).toEqual({ kind: "PUSH.CREATE", mailAddress: "agent.inbox" });
    expect(parseMq9Subject("$mq9.AI.PUSH.LIST.a")).toEqual({ kind: "PUSH.LIST", mailAddress: "a" });
    expect(parseMq9Subject("$mq9.AI.PUSH.DELETE.task.001")).toEqual({ kind: "PUSH.DELETE", mailAddress: "task.001" });
    expect(mq9Error(() => parseMq9Subject("$mq9.AI.PUSH.PAUSE.a")).code).toBe("unknown_subject");
    expect(mq9Error(() => parseMq9Subject("$mq9.AI.PUSH.CREATE")).message).toContain("missing mail_address");
    expect(mq9Error(() => parseMq9Subject("$mq9.AI.PUSH.LIST.Bad")).code).toBe("bad_request");
  });

  it("CREATE: defaults, ranges, the deliver policy and the secret's length", () => {
    expect(parsePushCreateRequest(json({ group_name: "g", url: "https://h.example.com/" }))).toEqual({
      group: "g", url: "https://h.example.com/", secret: null, maxAttempts: 8, deliver: { kind: "latest" }, concurrency: 1, timeoutMs: 10_000,
    });
    const s = "s".repeat(32);
    expect(parsePushCreateRequest(json({ group_name: "g", url: "u", secret: s, max_attempts: 3, deliver: "from_id", from_id: 7, concurrency: 16, timeout_ms: 500 })))
      .toMatchObject({ secret: s, maxAttempts: 3, deliver: { kind: "from_id", fromId: 7 }, concurrency: 16, timeoutMs: 500 });
    expect(mq9Error(() => parsePushCreateRequest(json({ url: "u" }))).message).toContain("field group_name");
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g" }))).message).toContain("field url");
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", secret: "short" }))).message).toContain("must be 32–256 bytes");
    expect(parsePushCreateRequest(json({ group_name: "g", url: "u", secret: "é".repeat(16) })).secret).toBe("é".repeat(16)); // 32 UTF-8 bytes
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", max_attempts: 0 }))).message).toContain("max_attempts");
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", concurrency: 33 }))).message).toContain("from 1 to 32");
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", timeout_ms: 50 }))).message).toContain("timeout_ms");
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", deliver: "from_time" }))).message).toContain("needs the from_time field");
    // a misspelt option is refused, not silently replaced by its default
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", timeout: 500 }))).message).toBe('invalid request body: unknown field "timeout"');
    expect(mq9Error(() => parsePushCreateRequest(json({ group_name: "g", url: "u", a: 1, b: 2 }))).message).toBe('invalid request body: unknown fields "a", "b"');
    expect(parsePushDeleteRequest(json({ push_id: "push_1" }))).toBe("push_1");
    expect(mq9Error(() => parsePushDeleteRequest(json({}))).message).toContain("field push_id");
  });

  it("refuses a source mailbox whose .dlq address would be too long", () => {
    expect(() => assertPushSource("a".repeat(MAX_PUSH_SOURCE_ADDRESS_CHARS))).not.toThrow();
    expect(mq9Error(() => assertPushSource("a".repeat(MAX_PUSH_SOURCE_ADDRESS_CHARS + 1))).message).toContain("would be longer than 128");
  });

  it("push request headers: percent-encoded key and tags, absent when empty", () => {
    const h = pushHeaders({ mailAddress: "box", msgId: 4, priority: "urgent", key: "état 1", tags: ["a,b", "c"], createMs: 1_700_000_000_999 }, 2, "push_x");
    expect(h).toEqual({
      "content-type": "application/octet-stream", "mq9-mail-address": "box", "mq9-msg-id": "4", "mq9-priority": "urgent",
      "mq9-create-time": "1700000000", "mq9-attempt": "2", "mq9-push-id": "push_x", "mq9-key": "%C3%A9tat%201", "mq9-tags": "a%2Cb,c",
    });
    expect(decodeURIComponent(h["mq9-key"]!)).toBe("état 1");
    const plain = pushHeaders({ mailAddress: "box", msgId: 0, priority: "normal", key: null, tags: [], createMs: 0 }, 1, "p");
    expect("mq9-key" in plain || "mq9-tags" in plain).toBe(false);
  });
});

describe("mq9-signature", () => {
  it("is HMAC-SHA256(secret, '<t>.<body>') in hex, as node:crypto computes it", async () => {
    const secret = "mq9s_" + "ab".repeat(32);
    const body = new Uint8Array([0, 1, 2, 255, 10, 13]);
    const header = await signPush(await pushSigningKey(secret), 1_700_000_123, body);
    const want = createHmac("sha256", secret).update("1700000123.").update(body).digest("hex");
    expect(header).toBe(`t=1700000123,v1=${want}`);
    expect(parsePushSignature(header)).toEqual({ t: 1_700_000_123, v1: [want] });
  });

  it("verifies, and rejects another secret, another body, an old timestamp and malformed headers", async () => {
    const secret = "x".repeat(40);
    const body = te.encode("hello");
    const header = await signPush(await pushSigningKey(secret), 1000, body);
    expect(await verifyPushSignature(secret, header, body, { nowS: 1100 })).toBe(true);
    expect(await verifyPushSignature(secret, `${header},v1=${"0".repeat(64)}`, body, { nowS: 1000 })).toBe(true); // several v1 during rotation
    expect(await verifyPushSignature("y".repeat(40), header, body, { nowS: 1000 })).toBe(false);
    expect(await verifyPushSignature(secret, header, te.encode("hellp"), { nowS: 1000 })).toBe(false);
    expect(await verifyPushSignature(secret, header, body, { nowS: 1000 + 301 })).toBe(false);
    expect(await verifyPushSignature(secret, header, body, { nowS: 1000 + 301, toleranceS: 600 })).toBe(true);
    for (const bad of ["", "t=1000", "v1=abc", "t=x,v1=" + "a".repeat(64), "garbage"]) expect(parsePushSignature(bad)).toBeNull();
  });
});

describe("backoff and attempt outcomes", () => {
  it("doubles from the base up to the cap, jittered into [d/2, d]", () => {
    const p = DEFAULT_PUSH_BACKOFF;
    expect([1, 2, 3, 4, 10, 11, 12, 50].map((n) => backoffMs(n, p, () => 0.999999))).toEqual([1000, 2000, 4000, 8000, 512_000, 600_000, 600_000, 600_000]);
    expect([1, 2, 3].map((n) => backoffMs(n, p, () => 0))).toEqual([500, 1000, 2000]);
    fc.assert(fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 0.9999, noNaN: true }), (n, r) => {
      const d = Math.min(p.maxMs, p.baseMs * 2 ** (n - 1));
      const w = backoffMs(n, p, () => r);
      return w >= d / 2 - 1 && w <= d + 1;
    }));
  });

  it("finds the final answer behind 1xx interim answers (the rest of the connection workerd's fetch hands over)", () => {
    const b = (t: string) => te.encode(t);
    expect(finalAnswer(b("HTTP/1.1 201 Created\r\nx-a: 1\r\n\r\nbody"))).toEqual({ kind: "final", status: 201, retryAfter: null });
    expect(finalAnswer(b("HTTP/1.1 103 Early Hints\r\nLink: </y>\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nRetry-After:  30 \r\n\r\n")))
      .toEqual({ kind: "final", status: 503, retryAfter: "30" });
    expect(finalAnswer(b("HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 O"))).toEqual({ kind: "more" });
    expect(finalAnswer(b(""))).toEqual({ kind: "more" });
    expect(finalAnswer(b("SSH-2.0-OpenSSH\r\n\r\n"))).toEqual({ kind: "malformed" });
    expect(finalAnswer(new Uint8Array(MAX_INTERIM_BYTES).fill(65))).toEqual({ kind: "malformed" });
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(parseRetryAfter("3", 0)).toBe(3000);
    expect(parseRetryAfter(" 0 ", 0)).toBe(0);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(parseRetryAfter(new Date(1_000).toUTCString(), 4_000)).toBe(0);
    expect(parseRetryAfter("soon", 0)).toBeNull();
    expect(parseRetryAfter(null, 0)).toBeNull();
  });

  it("2xx acknowledges; anything else fails, with a readable last_error", () => {
    expect(outcomeOfStatus(204, null, 0)).toEqual({ kind: "ok", status: 204 });
    expect(outcomeOfStatus(500, null, 0)).toEqual({ kind: "http_error", status: 500, retryAfterMs: null });
    expect(describeOutcome(outcomeOfStatus(429, "2", 0))).toBe("HTTP 429 (Retry-After 2 s)");
    expect(describeOutcome(outcomeOfStatus(503, "3600", 0))).toBe("HTTP 503 (Retry-After 3600 s)");
    expect(outcomeOfStatus(503, "99999999", 0)).toEqual({ kind: "http_error", status: 503, retryAfterMs: MAX_RETRY_AFTER_MS, capped: true });
    expect(describeOutcome(outcomeOfStatus(503, "99999999", 0))).toBe("HTTP 503 (Retry-After capped to 3600 s)");
    expect(describeOutcome(outcomeOfStatus(302, null, 0))).toBe("HTTP 302 (redirects are not followed)");
    expect(describeOutcome({ kind: "timeout", timeoutMs: 10_000 })).toBe("no answer within 10000 ms");
    expect(describeOutcome({ kind: "connection_error", detail: "refused" })).toBe("connection failed: refused");
    expect(connectionErrorDetail("internal error; reference = 711rc1pmqkc49jg645ss0trf")).toBe(UNREACHABLE_DETAIL);
    expect(connectionErrorDetail("Network connection lost.")).toBe("Network connection lost.");
  });

  it("retries after the backoff or a longer Retry-After (capped), and dead-letters after max_attempts", () => {
    const p = { baseMs: 100, maxMs: 10_000 };
    const half = () => 0.5;
    expect(afterFailure(1, 3, { kind: "timeout", timeoutMs: 1 }, 1000, p, half)).toEqual({ kind: "retry", atMs: 1075 });
    expect(afterFailure(1, 3, outcomeOfStatus(429, "5", 0), 1000, p, half)).toEqual({ kind: "retry", atMs: 6000 });
    expect(afterFailure(1, 3, outcomeOfStatus(503, "0", 0), 1000, p, half)).toEqual({ kind: "retry", atMs: 1075 });
    expect(afterFailure(1, 3, outcomeOfStatus(503, "99999999", 0), 1000, p, half)).toEqual({ kind: "retry", atMs: 1000 + MAX_RETRY_AFTER_MS });
    expect(afterFailure(3, 3, outcomeOfStatus(500, null, 0), 1000, p, half)).toEqual({ kind: "dead_letter" });
  });
});

describe("push group position", () => {
  it("a new group starts at the deliver position, an existing one re-delivers from its ack floors", () => {
    expect(pushStartCursor(null, 5)).toEqual({ floors: [5, 5, 5], delivered: [4, 4, 4], batch: null });
    expect(pushStartCursor({ floors: [1, 2, 9], delivered: [3, 3, 12], batch: [null, null, [10, 12]] }, 99))
      .toEqual({ floors: [1, 2, 9], delivered: [0, 1, 8], batch: null });
  });

  it("takes messages in FETCH order positions and keeps floors below open messages", () => {
    let c = pushStartCursor(null, 0);
    c = takeMessage(c, { lane: 2, msgId: 0 });
    c = takeMessage(c, { lane: 2, msgId: 1 });
    c = takeMessage(c, { lane: 0, msgId: 2 });
    expect(nextPositions(c)).toEqual([3, 0, 2]);
    expect(pushFloors(c, [{ lane: 2, msgId: 0 }, { lane: 0, msgId: 2 }])).toEqual([2, 0, 0]);
    expect(pushFloors(c, [{ lane: 2, msgId: 0 }])).toEqual([3, 0, 0]); // 1 settled before 0: the floor stays at 0
    expect(pushFloors(c, [])).toEqual([3, 0, 2]);
  });

  it("property: a floor only covers settled messages and never moves backwards", () => {
    const arb = fc.array(fc.record({ lane: fc.integer({ min: 0, max: 2 }), settle: fc.array(fc.nat(), { maxLength: 3 }) }), { minLength: 1, maxLength: 40 });
    fc.assert(fc.property(arb, (steps) => {
      let c = cursorAt(0);
      c = { ...c, delivered: [-1, -1, -1] };
      const open = new Map<number, OpenMessage>();
      const settled = new Set<number>();
      steps.forEach((s, msgId) => {
        const m = { lane: s.lane as Lane, msgId };
        c = takeMessage(c, m);
        open.set(msgId, m);
        for (const k of s.settle) {
          const ids = [...open.keys()];
          if (ids.length === 0) break;
          const id = ids[k % ids.length]!;
          open.delete(id);
          settled.add(id);
        }
        const floors = pushFloors(c, open.values());
        for (let lane = 0; lane < 3; lane++) {
          if (floors[lane]! < c.floors[lane]!) throw new Error("floor moved backwards");
          for (let id = 0; id <= msgId; id++) {
            if (steps[id]!.lane === lane && id < floors[lane]! && !settled.has(id)) throw new Error(`floor passed open ${id}`);
          }
        }
        c = { ...c, floors };
      });
    }));
  });

  it("in-flight byte budget admits the first attempt always", () => {
    expect(admitsBytes(0, 10_000, 100)).toBe(true);
    expect(admitsBytes(50, 50, 100)).toBe(true);
    expect(admitsBytes(51, 50, 100)).toBe(false);
  });

  it("ids and generated secrets", () => {
    const fill = (b: Uint8Array) => b.fill(0xab);
    expect(newPushId(fill)).toBe(`push_${"ab".repeat(12)}`);
    expect(newPushSecret(fill)).toBe(`whsec_${Buffer.alloc(32, 0xab).toString("base64")}`); // Standard Webhooks: the 32 bytes are the key
    expect(te.encode(newPushSecret(fill)).length).toBeGreaterThanOrEqual(32);
  });
});

describe("push run budget (startSlots)", () => {
  const use = (inFlight: number, copying: number, leasing: boolean, spent: number) => ({ inFlight, copying, leasing, spent });
  it("keeps at most 6 connections open at once", () => {
    expect(PUSH_MAX_CONNECTIONS).toBe(6);
    expect(startSlots(use(0, 0, false, 0), 500)).toBe(6);
    expect(startSlots(use(4, 1, false, 0), 500)).toBe(1);
    expect(startSlots(use(4, 1, true, 0), 500)).toBe(0);
    expect(startSlots(use(6, 3, true, 0), 500)).toBe(0);
  });
  it("starts no more subrequests in a run than its budget", () => {
    expect(startSlots(use(0, 0, false, 498), 500)).toBe(2);
    expect(startSlots(use(0, 0, false, 500), 500)).toBe(0);
    expect(startSlots(use(0, 0, false, 600), 500)).toBe(0);
  });
  it("never exceeds either bound, for any use (property)", () => {
    fc.assert(fc.property(fc.nat(10), fc.nat(10), fc.boolean(), fc.nat(1200), fc.integer({ min: 1, max: 1000 }), (i, c, l, s, b) => {
      const n = startSlots(use(i, c, l, s), b);
      expect(n).toBeGreaterThanOrEqual(0);
      if (n > 0) {
        expect(i + c + (l ? 1 : 0) + n).toBeLessThanOrEqual(PUSH_MAX_CONNECTIONS);
        expect(s + n).toBeLessThanOrEqual(b);
      }
    }));
  });
});
