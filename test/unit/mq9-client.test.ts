/**
 * The mq9 client's pure parts and its HTTP handling without a broker:
 * error kinds from the broker's texts, URL → transport, request bodies,
 * backoff, the consume() loop (retryable errors, Retry-After, redelivery,
 * close), and the http transport against a plain HTTP server that answers
 * like a broker under a quota (429 + Retry-After) or like a proxy (502 HTML).
 * The real broker is exercised in test/e2e/mq9-client.test.ts.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Backoff } from "../../client/mq9/backoff";
import { fetchBody, queryBody, sendHeaders } from "../../client/mq9/client";
import { Mq9Consumer } from "../../client/mq9/consume";
import { parseRetryAfter } from "../../client/mq9/http";
import { Mq9Client, Mq9ClientError, Mq9Message, classifyMq9Error, verifyPushWebhook, type Mq9WireMessage } from "@mortarmq/mq9";
import type { MessageOwner } from "../../client/mq9/message";
import { resolveEndpoint } from "../../client/mq9/url";

describe("error kinds come from the broker's error texts (the same over HTTP and NATS)", () => {
  it.each([
    ["mailbox task.1 does not exist", "mailbox_not_found", false],
    ["mailbox task.1 already exists", "mailbox_exists", false],
    ["message not found", "message_not_found", false],
    ["unauthorized: missing bearer token", "unauthorized", false],
    ["unauthorized: token revoked", "unauthorized", false],
    ["publish rate limit exceeded (5 msg/s); nothing was stored, retry later", "quota_exceeded", true],
    ["storage quota exceeded: the tenant stores 10 bytes, quota 5; nothing was stored", "quota_exceeded", false],
    ["mailbox quota exceeded: the tenant has 3 mailboxes, quota 3; nothing was created", "quota_exceeded", false],
    ["mailbox a.b already holds 1000 waiting FETCH requests", "quota_exceeded", true],
    ["mailbox a.b already has 1000 consumer groups: reuse an existing group_name or FETCH without one (stateless)", "quota_exceeded", false],
    ["broker overloaded, retry later: x", "quota_exceeded", true],
    ["agent registry is full: 10000 agents", "quota_exceeded", false],
    ["unavailable: the tenant directory did not answer: x", "unavailable", true],
    ["mailbox temporarily unavailable, retry: x", "unavailable", true],
    ["semantic search is unavailable: x", "unavailable", true],
    ["internal error: x", "unavailable", true],
    ['invalid mail_address "Task.001": contains upper-case "T" (addresses are lower case)', "invalid_request", false],
    ["consumer group g has not fetched from mailbox a", "invalid_request", false],
    ["msg_id 3 has not been delivered to consumer group g: FETCH it before acknowledging it (highest normal msg_id delivered to the group: none)", "invalid_request", false],
    ['unknown mq9 subject "$mq9.AI.MSG.PUSH.x"', "invalid_request", false],
    ["payload of 2000000 bytes exceeds the limit of 1048576 bytes", "invalid_request", false],
    ["agent translator is not registered", "invalid_request", false],
  ])("%s → %s", (text, kind, retryable) => {
    expect(classifyMq9Error(text)).toEqual({ kind, retryable });
    expect(classifyMq9Error(text, 200)).toEqual({ kind, retryable }); // the text decides, not the status
  });

  it("an unknown text falls back on the HTTP status", () => {
    expect(classifyMq9Error("something new", 401)).toEqual({ kind: "unauthorized", retryable: false });
    expect(classifyMq9Error("something new", 429)).toEqual({ kind: "quota_exceeded", retryable: true });
    expect(classifyMq9Error("something new", 503)).toEqual({ kind: "unavailable", retryable: true });
    expect(classifyMq9Error("something new", 400)).toEqual({ kind: "invalid_request", retryable: false });
    expect(classifyMq9Error("something new", null)).toEqual({ kind: "invalid_request", retryable: false });
  });
});

describe("broker URL → transport", () => {
  it.each([
    ["http://127.0.0.1:8787", undefined, { transport: "http", target: "http://127.0.0.1:8787" }],
    ["https://mq.example.com/edge/", undefined, { transport: "http", target: "https://mq.example.com/edge" }],
    ["ws://127.0.0.1:8787/nats", "http", { transport: "http", target: "http://127.0.0.1:8787" }],
    ["ws://127.0.0.1:8787", undefined, { transport: "nats-ws", target: "ws://127.0.0.1:8787/nats" }],
    ["https://mq.example.com", "nats-ws", { transport: "nats-ws", target: "wss://mq.example.com/nats" }],
    ["nats://127.0.0.1:4222", undefined, { transport: "nats", target: "127.0.0.1:4222" }],
    ["tcp://broker", undefined, { transport: "nats", target: "broker:4222" }],
    ["127.0.0.1:4333", "nats", { transport: "nats", target: "127.0.0.1:4333" }],
  ] as const)("%s (%s)", (url, transport, endpoint) => {
    expect(resolveEndpoint(url, transport)).toEqual(endpoint);
  });

  it("refuses what it cannot connect to, with what to use instead", () => {
    expect(() => resolveEndpoint("http://127.0.0.1:8787", "nats")).toThrow("the nats transport needs the NATS TCP bridge's address (nats://host:port, e.g. nats://127.0.0.1:4222)");
    expect(() => resolveEndpoint("ftp://x")).toThrow("unsupported scheme ftp:");
    expect(() => resolveEndpoint("nats://x:1", "http")).toThrow("the http transport needs an http(s):// URL");
  });
});

describe("request bodies and headers", () => {
  it("SEND options become mq9-* headers; undefined ones are left out", () => {
    expect(sendHeaders({})).toEqual({});
    expect(sendHeaders({ key: "k", delay: 5, ttl: 60, tags: ["a", "b"], priority: "critical", replyTo: "r.box", correlationId: "c" })).toEqual({
      "mq9-key": "k", "mq9-delay": "5", "mq9-ttl": "60", "mq9-tags": "a,b", "mq9-priority": "critical", "mq9-reply-to": "r.box", "mq9-correlation-id": "c",
    });
  });
  it("FETCH: fromTime/fromId imply deliver; a Date is unix seconds", () => {
    expect(fetchBody({})).toEqual({});
    expect(fetchBody({ fromTime: new Date("2026-01-01T00:00:00Z") })).toEqual({ deliver: "from_time", from_time: 1767225600 });
    expect(fetchBody({ group: "g", fromId: 4, forceDeliver: true, numMsgs: 10, maxWaitMs: 0 }))
      .toEqual({ group_name: "g", deliver: "from_id", from_id: 4, force_deliver: true, config: { num_msgs: 10, max_wait_ms: 0 } });
  });
  it("QUERY", () => {
    expect(queryBody({ key: "k", limit: 3, since: new Date(2000), tags: ["x"], correlationId: "c" })).toEqual({ key: "k", limit: 3, since: 2, tags: ["x"], correlation_id: "c" });
  });
});

describe("Backoff", () => {
  it("doubles up to the maximum, each delay in [bound/2, bound]; reset starts over", () => {
    const low = new Backoff(100, 1000, () => 0);
    expect(Array.from({ length: 6 }, () => low.next())).toEqual([50, 100, 200, 400, 500, 500]);
    const high = new Backoff(100, 1000, () => 1);
    expect(Array.from({ length: 6 }, () => high.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    high.reset();
    expect(high.next()).toBe(100);
  });
  it("Retry-After: seconds or an HTTP date", () => {
    expect(parseRetryAfter("3")).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter("soon")).toBeNull();
  });
});

/** Messages of `address` as a FETCH for group `g` returns them. */
function batch(owner: MessageOwner, ids: number[]): Mq9Message[] {
  return ids.map((id) => new Mq9Message(owner, "a.box", "g", { msg_id: id, payload: btoa(`m${id}`), priority: "normal", create_time: 0, key: null, tags: [] } as Mq9WireMessage));
}

describe("consume() loop", () => {
  const acks: number[] = [];
  const owner: MessageOwner = {
    ack: async (_a, _g, id) => void acks.push(id),
    send: async () => ({ msgId: 0 }),
  };

  it("waits out a retryable error for its Retry-After, else with backoff; a non-retryable error ends the iteration", async () => {
    const rate = new Mq9ClientError("publish rate limit exceeded (1 msg/s); nothing was stored, retry later", { kind: "quota_exceeded", retryable: true, source: "broker", status: 429, retryAfterMs: 300 });
    const down = Mq9ClientError.connection("cannot reach the broker at http://x (ECONNREFUSED)", null);
    const gone = Mq9ClientError.fromReply("mailbox a.box does not exist", 404, null, "$mq9.AI.MSG.FETCH.a.box");
    const script: (Mq9ClientError | number[])[] = [rate, down, [0, 1], gone];
    const delays: [string, number][] = [];
    const started = Date.now();
    const consumer = new Mq9Consumer(owner, async (_s, o) => {
      const next = script.shift()!;
      if (next instanceof Mq9ClientError) throw next;
      return batch(o, next);
    }, { onError: (e, ms) => delays.push([e.kind, ms]) });
    const seen: number[] = [];
    let thrown: unknown;
    try {
      for await (const m of consumer) {
        seen.push(m.msgId);
        await m.ack();
      }
    } catch (e) {
      thrown = e;
    }
    expect(seen).toEqual([0, 1]);
    expect(acks.splice(0)).toEqual([0, 1]);
    expect(delays[0]).toEqual(["quota_exceeded", 300]);
    expect(delays[1]![0]).toBe("unavailable");
    expect(delays[1]![1]).toBeGreaterThanOrEqual(50);
    expect(delays[1]![1]).toBeLessThanOrEqual(100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(340);
    expect(thrown).toBe(gone);
    expect(consumer.closed).toBe(true);
  });

  it("messages handed out and not acknowledged come again only after the redelivery delay", async () => {
    const times: number[] = [];
    let n = 0;
    const consumer = new Mq9Consumer(owner, async (_s, o) => {
      times.push(Date.now());
      return batch(o, ++n <= 2 ? [5, 6] : [7]);
    }, { redeliveryDelayMs: 400 });
    const seen: number[] = [];
    const seenAt: number[] = [];
    for await (const m of consumer) {
      seen.push(m.msgId);
      seenAt.push(Date.now());
      if (m.msgId === 7) consumer.close(); // 5 and 6 never acknowledged
    }
    expect(seen).toEqual([5, 6, 5, 6, 7]);
    expect(times).toHaveLength(3);
    // the second FETCH came at once; it returned only messages handed out before and not acknowledged: handed out again 400 ms later
    expect(times[1]! - seenAt[1]!).toBeLessThan(200);
    expect(seenAt[2]! - times[1]!).toBeGreaterThanOrEqual(390);
    // the third FETCH had something new: no wait
    expect(seenAt[4]! - times[2]!).toBeLessThan(200);
  });

  it("close() and an aborted signal end the iteration cleanly, also during a held FETCH", async () => {
    const ac = new AbortController();
    const consumer = new Mq9Consumer(owner, (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))), { signal: ac.signal });
    const loop = (async () => {
      const seen: number[] = [];
      for await (const m of consumer) seen.push(m.msgId);
      return seen;
    })();
    setTimeout(() => ac.abort(), 100);
    expect(await loop).toEqual([]);
    expect(consumer.closed).toBe(true);
    expect(() => consumer[Symbol.asyncIterator]()).toThrow("can be iterated only once");
  });
});

describe("the http transport against plain HTTP servers", () => {
  let server: Server;
  let url: string;
  const answers: Record<string, (res: import("node:http").ServerResponse) => void> = {
    "/mq9/%24mq9.AI.MSG.SEND.rate.box": (res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "2" });
      res.end(JSON.stringify({ error: "publish rate limit exceeded (5 msg/s); nothing was stored, retry later" }));
    },
    "/mq9/%24mq9.AI.MSG.QUERY.proxy.box": (res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>bad gateway</html>");
    },
    "/mq9/%24mq9.AI.MSG.QUERY.slow.box": () => {
      /* never answers */
    },
  };
  beforeAll(async () => {
    server = createServer((req, res) => (answers[req.url ?? ""] ?? ((r) => r.writeHead(404).end()))(res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("a 429 carries the kind, the status and the Retry-After", async () => {
    const mq = await Mq9Client.connect(url);
    const e = await mq.send("rate.box", "x").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Mq9ClientError);
    expect(e).toMatchObject({ kind: "quota_exceeded", retryable: true, status: 429, retryAfterMs: 2000, source: "broker", subject: "$mq9.AI.MSG.SEND.rate.box" });
    expect((e as Mq9ClientError).error).toBe("publish rate limit exceeded (5 msg/s); nothing was stored, retry later");
  });

  it("an answer that is not an mq9 reply (a proxy's 502) is unavailable and retryable", async () => {
    const mq = await Mq9Client.connect(url);
    expect(await mq.query("proxy.box").catch((x: unknown) => x)).toMatchObject({ kind: "unavailable", retryable: true, status: 502, message: "HTTP 502: <html>bad gateway</html>" });
  });

  it("no answer in time is a timeout; nothing listening is a connection failure; an abort is the signal's reason", async () => {
    const mq = await Mq9Client.connect(url, { timeoutMs: 300 });
    expect(await mq.query("slow.box").catch((x: unknown) => x)).toMatchObject({ kind: "unavailable", source: "timeout", retryable: true, timeoutMs: 300, message: "no answer to $mq9.AI.MSG.QUERY.slow.box within 300 ms" });
    const reason = new Error("stop");
    const ac = new AbortController();
    setTimeout(() => ac.abort(reason), 50);
    expect(await (await Mq9Client.connect(url)).query("slow.box", { signal: ac.signal }).catch((x: unknown) => x)).toBe(reason);
    const closed = await Mq9Client.connect("http://127.0.0.1:9");
    expect(await closed.query("a.b").catch((x: unknown) => x)).toMatchObject({ kind: "unavailable", source: "connection", retryable: true });
  });

  it("a mail address that breaks the rules is refused before anything is sent", async () => {
    const mq = await Mq9Client.connect(url);
    expect(await mq.send("Bad Box", "x").catch((x: unknown) => x)).toMatchObject({ kind: "invalid_request", source: "client", message: 'invalid mail_address "Bad Box": contains upper-case "B" (addresses are lower case)' });
  });
});

describe("verifyPushWebhook (the client's Standard Webhooks check)", () => {
  // A push as the broker signs it (wire/mq9/push-signature.ts pushSignatureHeaders); the Python client's test holds the same vector.
  const secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
  const body = new TextEncoder().encode('{"hello":"push"}');
  const headers: Record<string, string> = {
    "mq9-mail-address": "task.001", "mq9-msg-id": "7", "mq9-priority": "urgent", "mq9-create-time": "1767225600", "mq9-correlation-id": "c-1",
    "Webhook-Id": "msg_IE5czpSmWjZ63oRGoDH0bWnp_N-dqVk061ILlywpgMg", "webhook-timestamp": "1767225600",
    "webhook-signature": "v1,yg7uh9T1Ejs3hmq/vrez9Vok7VH0XCf4Kmpnbo5+QcY=",
  };
  const at = { nowS: 1767225610 };

  it("verifies a plain object (any case) and a fetch Headers", async () => {
    expect(await verifyPushWebhook(secret, headers, body, at)).toBe(true);
    expect(await verifyPushWebhook(secret, new Headers(headers), body, at)).toBe(true);
  });

  it("refuses another mq9 header, body, secret or time", async () => {
    expect(await verifyPushWebhook(secret, { ...headers, "mq9-msg-id": "8" }, body, at)).toBe(false);
    expect(await verifyPushWebhook(secret, { ...headers, "mq9-reply-to": "evil.inbox" }, body, at)).toBe(false);
    expect(await verifyPushWebhook(secret, headers, new TextEncoder().encode("{}"), at)).toBe(false);
    expect(await verifyPushWebhook("whsec_" + "A".repeat(43) + "=", headers, body, at)).toBe(false);
    expect(await verifyPushWebhook(secret, headers, body, { nowS: 1767225600 + 301 })).toBe(false);
  });
});
