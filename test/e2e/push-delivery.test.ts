/**
 * Push delivery end to end (issue 17, docs/push.md): a real local broker
 * (PUSH_ALLOW_LOOPBACK=1, short backoff) pushing to node:http receivers on
 * 127.0.0.1 started by the test, every signature verified independently of
 * the broker's code (standardwebhooks and node:crypto, fixtures/push-receiver.ts).
 */
import { connect } from "nats";
import { Mq9Client, Mq9ClientError, verifyPushSignature } from "@mortarmq/mq9";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../client/local/broker";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { PushReceiver, verifyStandard, type PushRequest } from "../fixtures/push-receiver";
import { until } from "../fixtures/until";
import { createServer as createNetServer, type AddressInfo } from "node:net";

/** last_error of an endpoint that is unreachable or answers no valid HTTP (the platform's own text is not shown). */
const UNREACHABLE = "connection failed: the endpoint could not be reached or did not answer valid HTTP (DNS, TLS, routing or a malformed answer)";

const BACKOFF_BASE_MS = 100;
const ctx = useLocalBroker("push", {
  vars: { PUSH_ALLOW_LOOPBACK: "1", PUSH_BACKOFF_BASE_MS: String(BACKOFF_BASE_MS), PUSH_BACKOFF_MAX_MS: "800", TELEMETRY_FLUSH_MS: "200" },
  natsBridge: true,
});

type Reply = { status: number; body: { error: string } & Record<string, any> };

async function mq9(subject: string, payload: unknown = {}, headers: Record<string, string> = {}): Promise<Reply> {
  const body = typeof payload === "string" ? payload : payload instanceof Uint8Array ? new Blob([new Uint8Array(payload)]) : JSON.stringify(payload);
  const res = await fetch(`${ctx.broker.url}/mq9/${subject}`, { method: "POST", body, headers });
  return { status: res.status, body: (await res.json()) as Reply["body"] };
}

let n = 0;
async function mailbox(ttl = 0): Promise<string> {
  const name = `push.${Date.now().toString(36)}.${n++}`;
  expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name, ttl })).body.error).toBe("");
  return name;
}

async function send(address: string, payload: string | Uint8Array, headers: Record<string, string> = {}): Promise<number> {
  const r = await mq9(`$mq9.AI.MSG.SEND.${address}`, payload, headers);
  expect(r.body.error).toBe("");
  return r.body.msg_id as number;
}

/** Creates a push subscription; registers its secret with `receiver` for signature checks. */
async function push(address: string, receiver: PushReceiver, fields: Record<string, unknown> = {}): Promise<string> {
  const r = await mq9(`$mq9.AI.PUSH.CREATE.${address}`, { group_name: "hook", url: receiver.url(), deliver: "earliest", ...fields });
  expect(r.body.error).toBe("");
  receiver.secrets.set(r.body.push_id, (fields.secret as string | undefined) ?? r.body.secret);
  return r.body.push_id as string;
}

async function list(address: string): Promise<Record<string, any>[]> {
  const r = await mq9(`$mq9.AI.PUSH.LIST.${address}`);
  expect(r.body.error).toBe("");
  return r.body.pushes as Record<string, any>[];
}

let receiver: PushReceiver;
beforeAll(async () => {
  receiver = await new PushReceiver().start();
});
afterAll(async () => {
  await receiver?.close();
});

describe("push delivery", () => {
  it("delivers 1,000 messages in order, once each, every signature valid (node:crypto)", async () => {
    const box = await mailbox();
    const pushId = await push(box, receiver, { secret: "a-receiver-chosen-secret-of-32+-bytes!" });
    const payloads = Array.from({ length: 1000 }, (_, i) => Buffer.concat([Buffer.from(`m${i}:`), Buffer.from([0, 255, i % 256, 10, 13])]));
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < payloads.length) {
        const i = next++;
        await send(box, payloads[i]!);
      }
    }));
    await receiver.until(() => receiver.of(box).length >= 1000, 60_000);
    const got = receiver.of(box);
    expect(got.length).toBe(1000);
    expect(got.map((r) => r.msgId)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(got.filter((r) => r.signatureOk !== true)).toEqual([]);
    // msg_ids follow SEND order; each body is exactly the payload sent with that id
    const stored = (await mq9(`$mq9.AI.MSG.QUERY.${box}`, { limit: 1000 })).body.messages as { msg_id: number; payload: string }[];
    const byId = new Map(stored.map((m) => [m.msg_id, Buffer.from(m.payload, "base64")]));
    expect(got.filter((r) => !r.body.equals(byId.get(r.msgId)!))).toEqual([]);
    expect(got.every((r) => r.attempt === 1 && r.headers["mq9-push-id"] === pushId && r.headers["content-type"] === "application/octet-stream")).toBe(true);
    const [info] = await list(box);
    expect(info).toMatchObject({ push_id: pushId, delivered: 1000, failed: 0, dead_lettered: 0, backlog: 0, in_flight: 0, state: "active", last_error: "" });
    expect(info).not.toHaveProperty("secret");
  });

  it("carries priority lanes in FETCH order, key and tags; concurrency 1 keeps one in flight", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.msgId === 0 && q.attempt === 1 ? "hold" : { status: 204 });
      await push(box, r);
      await send(box, "n0");
      await r.until(() => r.holding === 1);
      await send(box, "n1");
      await send(box, "n2", { "mq9-key": Buffer.from("état/1").toString("latin1"), "mq9-tags": "billing,vip" }); // UTF-8 bytes as a header ByteString
      await send(box, "c3", { "mq9-priority": "critical" });
      await send(box, "u4", { "mq9-priority": "urgent" });
      await new Promise((res) => setTimeout(res, 300));
      expect(r.requests.length).toBe(1); // nothing else while the first is held
      r.release(200);
      await r.until(() => r.of(box).length === 5);
      expect(r.requests.map((q) => q.body.toString())).toEqual(["n0", "c3", "u4", "n1", "n2"]);
      const n2 = r.requests[4]!;
      expect([n2.headers["mq9-priority"], decodeURIComponent(String(n2.headers["mq9-key"])), String(n2.headers["mq9-tags"]).split(",").map(decodeURIComponent)])
        .toEqual(["normal", "état/1", ["billing", "vip"]]);
      expect(r.requests[1]!.headers["mq9-priority"]).toBe("critical");
      expect(Number(n2.headers["mq9-create-time"])).toBeCloseTo(Date.now() / 1000, -1);
    } finally {
      await r.close();
    }
  });

  it("concurrency 16 keeps at most 6 in flight (one invocation's connections) and delivers each message once", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = () => "hold";
      await push(box, r, { concurrency: 16 });
      await Promise.all(Array.from({ length: 40 }, (_, i) => send(box, `m${i}`)));
      await r.until(() => r.holding === 6);
      await new Promise((res) => setTimeout(res, 300));
      expect(r.holding).toBe(6); // Cloudflare: 6 simultaneous open connections per invocation
      r.respond = () => ({ status: 200 });
      r.release(200);
      await r.until(() => r.of(box).length === 40);
      expect(new Set(r.requests.map((q) => q.msgId)).size).toBe(40);
      await until(async () => (await list(box))[0]!.backlog === 0, 10_000, 100);
      expect((await list(box))[0]).toMatchObject({ delivered: 40, failed: 0, in_flight: 0 });
    } finally {
      await r.close();
    }
  });
});

/** Gaps between consecutive attempts of one message, ms. */
function gaps(reqs: PushRequest[]): number[] {
  return reqs.slice(1).map((q, i) => q.at - reqs[i]!.at);
}

describe("retries", () => {
  it("HTTP 500 three times: delivered once, at the 4th attempt, after growing backoff", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.attempt <= 3 ? { status: 500 } : { status: 200 });
      await push(box, r);
      await send(box, "x");
      await r.until(() => r.requests.some((q) => q.attempt === 4));
      await new Promise((res) => setTimeout(res, 500));
      expect(r.requests.map((q) => q.attempt)).toEqual([1, 2, 3, 4]);
      expect(r.requests.every((q) => q.msgId === 0 && q.signatureOk)).toBe(true);
      // equal jitter: the k-th wait is at least half of base × 2^(k-1)
      gaps(r.requests).forEach((g, k) => expect(g).toBeGreaterThanOrEqual((BACKOFF_BASE_MS * 2 ** k) / 2 - 5));
      expect((await list(box))[0]).toMatchObject({ delivered: 1, failed: 3, last_error: "HTTP 500", state: "active", backlog: 0 });
    } finally {
      await r.close();
    }
  });

  it("no answer within timeout_ms twice: the third attempt is delivered", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.attempt <= 2 ? "hold" : { status: 200 });
      await push(box, r, { timeout_ms: 300 });
      await send(box, "slow");
      await r.until(() => r.requests.some((q) => q.attempt === 3));
      expect(r.requests.map((q) => q.attempt)).toEqual([1, 2, 3]);
      // the broker gave up each held attempt (closed its request) before it made the next
      for (let i = 0; i < 2; i++) expect(r.requests[i]!.closedAt).toBeLessThan(r.requests[i + 1]!.at);
      await until(async () => (await list(box))[0]!.delivered === 1, 5_000, 50);
      expect((await list(box))[0]).toMatchObject({ failed: 2, last_error: "no answer within 300 ms" });
    } finally {
      await r.close();
    }
  });

  it("connection refused until the receiver starts: delivered at the first attempt after", async () => {
    const box = await mailbox();
    const port = await freePort();
    const r = new PushReceiver();
    r.port = port;
    const pushId = (await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: r.url(), deliver: "earliest" })).body.push_id as string;
    await send(box, "hello");
    await until(async () => (await list(box))[0]!.failed >= 2, 10_000, 50);
    const before = (await list(box))[0]!;
    expect(before).toMatchObject({ push_id: pushId, delivered: 0, state: "retrying", in_flight: 1, backlog: 1 });
    expect(before.last_error).toMatch(/^connection failed/);
    expect(before.last_failure_time).toBeGreaterThan(0);
    expect(before.last_success_time).toBeNull();
    await r.start(port);
    try {
      await r.until(() => r.requests.length === 1);
      await until(async () => (await list(box))[0]!.delivered === 1, 5_000, 50);
      const after = (await list(box))[0]!;
      expect(r.requests[0]!.attempt).toBe(after.failed + 1);
      expect(after).toMatchObject({ state: "active", backlog: 0, in_flight: 0 });
      // the failure stays on record, and its time says the success came after it (what the console shows as the status)
      expect(after.last_error).toBe(before.last_error);
      expect(after.last_failure_time).toBeGreaterThanOrEqual(before.last_failure_time);
      expect(after.last_success_time).toBeGreaterThanOrEqual(after.last_failure_time);
    } finally {
      await r.close();
    }
  });

  it("429 with Retry-After: the next attempt waits for it, not for the (shorter) backoff", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.attempt === 1 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 });
      await push(box, r);
      await send(box, "later");
      await r.until(() => r.requests.length === 2);
      expect(gaps(r.requests)[0]).toBeGreaterThanOrEqual(990);
      expect((await list(box))[0]).toMatchObject({ last_error: "HTTP 429 (Retry-After 1 s)" });
    } finally {
      await r.close();
    }
  });

  it("a Retry-After beyond the longest honoured wait: last_error shows the capped wait the broker uses", async () => {
    const r = await new PushReceiver().start();
    try {
      const inAYear = () => new Date(Date.now() + 365 * 86_400_000).toUTCString();
      r.respond = (q) => ({ status: 503, headers: { "retry-after": String(q.headers["mq9-mail-address"]).endsWith("d") ? inAYear() : "99999999" } });
      const a = await mailbox();
      const dated = `${a}d`;
      expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: dated, ttl: 0 })).body.error).toBe("");
      for (const box of [a, dated]) {
        await push(box, r);
        await send(box, "later");
      }
      for (const box of [a, dated]) {
        await until(async () => (await list(box))[0]!.failed === 1, 10_000, 50);
        expect((await list(box))[0]).toMatchObject({ state: "retrying", last_error: "HTTP 503 (Retry-After capped to 3600 s)" });
      }
    } finally {
      await r.close();
    }
  });

  it("1xx interim answers (100, 102, 103) before the final one: only the final status counts", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.msgId === 0 ? { status: 200, interim: [103] }
        : q.msgId === 1 ? { status: 204, interim: [100, 102, 103] }
        : { status: q.attempt === 1 ? 503 : 200, interim: [102], headers: q.attempt === 1 ? { "retry-after": "1" } : ({} as Record<string, string>) });
      await push(box, r, { concurrency: 1 });
      for (const p of ["hinted", "three interims", "interim then 503"]) await send(box, p);
      await until(async () => (await list(box))[0]!.delivered === 3, 10_000, 50);
      expect(r.requests.map((q) => [q.msgId, q.attempt])).toEqual([[0, 1], [1, 1], [2, 1], [2, 2]]);
      expect((await list(box))[0]).toMatchObject({ delivered: 3, failed: 1, dead_lettered: 0, last_error: "HTTP 503 (Retry-After 1 s)", backlog: 0 });
      expect(gaps(r.requests)[2]).toBeGreaterThanOrEqual(990); // the final answer's Retry-After, not the interim one's headers
    } finally {
      await r.close();
    }
  });

  it("a receiver that always fails: exactly one dead-letter copy after max_attempts, then the group moves on", async () => {
    const box = await mailbox(3600);
    const r = await new PushReceiver().start();
    try {
      r.respond = (q) => (q.msgId === 0 ? { status: 503 } : { status: 200 });
      const pushId = await push(box, r, { max_attempts: 3 });
      await send(box, "doomed", { "mq9-key": "k1", "mq9-tags": "a,b", "mq9-priority": "urgent" });
      await send(box, "fine");
      await r.until(() => r.requests.some((q) => q.msgId === 1));
      await new Promise((res) => setTimeout(res, 1000)); // nothing more comes, no second copy
      expect(r.requests.map((q) => [q.msgId, q.attempt])).toEqual([[0, 1], [0, 2], [0, 3], [1, 1]]);
      const dlq = (await mq9(`$mq9.AI.MSG.QUERY.${box}.dlq`)).body;
      expect(dlq.error).toBe("");
      expect(dlq.messages).toHaveLength(1);
      const copy = dlq.messages[0];
      expect(Buffer.from(copy.payload, "base64").toString()).toBe("doomed");
      expect(copy).toMatchObject({ key: "k1", tags: ["a", "b"], priority: "urgent" });
      expect(copy.dead_letter).toMatchObject({ mail_address: box, msg_id: 0, push_id: pushId, group_name: "hook", reason: "HTTP 503", attempts: 3 });
      expect((await list(box))[0]).toMatchObject({ delivered: 1, failed: 3, dead_lettered: 1, backlog: 0, state: "active" });
      // the dead-letter mailbox is a mailbox: FETCH works on it
      expect((await mq9(`$mq9.AI.MSG.FETCH.${box}.dlq`, { deliver: "earliest", config: { max_wait_ms: 0 } })).body.messages).toHaveLength(1);
    } finally {
      await r.close();
    }
  });

  it("an endpoint that answers something other than HTTP: last_error and the dead-letter reason say so without the platform's text", async () => {
    const box = await mailbox(3600);
    const answered: string[] = [];
    const garbage = createNetServer((sock) => {
      sock.on("error", () => {});
      sock.once("data", () => {
        answered.push("garbage");
        sock.end("THIS IS NOT HTTP\r\n\r\n");
      });
    });
    await new Promise<void>((res) => garbage.listen(0, "127.0.0.1", res));
    try {
      const url = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}/hook`;
      const created = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url, deliver: "earliest", max_attempts: 2 });
      expect(created.body.error).toBe("");
      await send(box, "to a broken endpoint");
      await until(async () => (await list(box))[0]!.dead_lettered === 1, 10_000, 50);
      const sub = (await list(box))[0]!;
      expect(answered).toEqual(["garbage", "garbage"]);
      expect(sub).toMatchObject({ failed: 2, delivered: 0, last_error: UNREACHABLE });
      const dlq = (await mq9(`$mq9.AI.MSG.QUERY.${box}.dlq`)).body;
      expect(dlq.messages[0].dead_letter).toMatchObject({ reason: UNREACHABLE, attempts: 2 });
    } finally {
      await new Promise((res) => garbage.close(res));
    }
  });
});

describe("SENDs and a slow or dead endpoint", () => {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

  it("SENDs are answered while the receiver holds a request, as fast as to a mailbox without push", async () => {
    const pushed = await mailbox();
    const plain = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = () => "hold";
      await push(pushed, r, { timeout_ms: 60_000 });
      await send(pushed, "first");
      await r.until(() => r.holding === 1);
      const a: number[] = [];
      const b: number[] = [];
      const timed = async (box: string, into: number[], i: number) => {
        const t = performance.now();
        await send(box, `m${i}`);
        into.push(performance.now() - t);
      };
      for (let i = 0; i < 40; i++) {
        // interleaved, alternating which goes first
        if (i % 2) await timed(plain, a, i).then(() => timed(pushed, b, i));
        else await timed(pushed, b, i).then(() => timed(plain, a, i));
      }
      // every SEND was answered while the first push was still held, and nothing else was pushed
      // (the medians are in the message for the curious; speed is measured by `npm run bench -- push`)
      const medians = `SEND p50 without push ${median(a).toFixed(2)} ms, with a held push ${median(b).toFixed(2)} ms`;
      expect(r.holding, medians).toBe(1);
      expect(r.requests.length, medians).toBe(1);
      const [info] = await list(pushed);
      expect(info).toMatchObject({ in_flight: 1, backlog: 41 });
      expect((await mq9(`$mq9.AI.PUSH.DELETE.${pushed}`, { push_id: info!.push_id })).body.error).toBe("");
    } finally {
      await r.close();
    }
  });

  it("SENDs to a mailbox whose endpoint refuses connections are all stored", async () => {
    const box = await mailbox();
    const port = await freePort();
    await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url: `http://127.0.0.1:${port}/x`, deliver: "earliest", concurrency: 4 });
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => send(box, `d${i}`)));
    expect(ids.sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    const [info] = await list(box);
    expect(info!.backlog).toBe(50);
    expect(info!.delivered).toBe(0);
    expect((await mq9(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: info!.push_id })).body.error).toBe("");
  });
});

describe("subscriptions", () => {
  it("LIST shows every subscription without its secret; DELETE stops it and leaves the group for pull at its ack floors", async () => {
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      const created = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "a", url: r.url() });
      expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/); // Standard Webhooks: base64 of 32 random bytes
      const chosen = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "b", url: r.url("/b"), secret: "s".repeat(32), max_attempts: 2, concurrency: 3 });
      expect(chosen.body).toEqual({ error: "", push_id: expect.stringMatching(/^push_[0-9a-f]{24}$/) }); // no secret echoed back
      const l = await list(box);
      expect(l.map((p) => [p.group_name, p.url, p.max_attempts, p.concurrency, p.timeout_ms])).toEqual([
        ["a", r.url(), 8, 1, 10_000], ["b", r.url("/b"), 2, 3, 10_000],
      ]);
      expect(JSON.stringify(l)).not.toContain("secret");
      expect((await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "a", url: r.url() })).body.error).toContain("already has push subscription");

      await send(box, "one");
      await r.until(() => r.requests.length === 2); // one per group
      await until(async () => (await list(box)).every((p) => p.delivered === 1), 5_000, 50);
      expect((await mq9(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: created.body.push_id })).body).toEqual({ error: "" });
      const gone = await mq9(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: created.body.push_id });
      expect(gone).toEqual({ status: 404, body: { error: "push subscription not found" } });
      expect((await list(box)).map((p) => p.group_name)).toEqual(["b"]);
      await send(box, "two");
      await r.until(() => r.requests.length === 3);
      await new Promise((res) => setTimeout(res, 300));
      const seen = r.requests.map((q) => [q.headers["mq9-push-id"] === chosen.body.push_id ? "b" : "a", q.body.toString()]);
      expect(seen.sort()).toEqual([["a", "one"], ["b", "one"], ["b", "two"]]);
      // group a continues by pull from its ack floor: "one" was acknowledged by the push, "two" was not pushed
      const fetched = await mq9(`$mq9.AI.MSG.FETCH.${box}`, { group_name: "a", config: { max_wait_ms: 0 } });
      expect(fetched.body.messages.map((m: { payload: string }) => Buffer.from(m.payload, "base64").toString())).toEqual(["two"]);
    } finally {
      await r.close();
    }
  });

  it("refuses pull FETCH and ACK on a pushed group, and a push on a missing mailbox", async () => {
    const box = await mailbox();
    const pushId = await push(box, receiver);
    const f = await mq9(`$mq9.AI.MSG.FETCH.${box}`, { group_name: "hook" });
    expect(f.status).toBe(409);
    expect(f.body.error).toBe(`consumer group hook of mailbox ${box} is delivered by push subscription ${pushId}: FETCH on it is refused while the push exists (DELETE the push, or FETCH with another group_name)`);
    await send(box, "m");
    const a = await mq9(`$mq9.AI.MSG.ACK.${box}`, { group_name: "hook", mail_address: box, msg_id: 0 });
    expect(a.status).toBe(409);
    expect(a.body.error).toContain("ACK on it is refused");
    expect((await mq9(`$mq9.AI.MSG.FETCH.${box}`, { group_name: "other", deliver: "earliest", config: { max_wait_ms: 0 } })).body.messages).toHaveLength(1);
    const missing = await mq9("$mq9.AI.PUSH.CREATE.no.such.box", { group_name: "g", url: receiver.url() });
    expect(missing).toEqual({ status: 404, body: { error: "mailbox no.such.box does not exist" } });
    expect((await mq9("$mq9.AI.PUSH.LIST.no.such.box")).body.error).toBe("mailbox no.such.box does not exist");
  });

  it("SSRF: with loopback allowed, still only loopback over http, no private or link-local hosts", async () => {
    const box = await mailbox();
    for (const [url, why] of [
      ["http://example.com/hook", "http:// only to loopback hosts"],
      ["http://10.1.2.3/hook", "is a private address"],
      ["https://169.254.169.254/latest/meta-data/", "is a link-local address"],
      ["https://[fe80::1]/", "is a link-local address"],
      ["https://192.168.0.10/", "is a private address"],
      ["ftp://127.0.0.1/", "the scheme must be https"],
    ] as const) {
      const r = await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "g", url });
      expect([r.status, r.body.error], url).toEqual([400, expect.stringContaining(why)]);
    }
    expect(await list(box)).toEqual([]);
  });

  it("works over NATS too (the same subjects through the NATS bridge)", async () => {
    const nc = await connect({ servers: `127.0.0.1:${ctx.natsBridge.port}`, reconnect: false });
    try {
      const box = await mailbox();
      const req = async (subject: string, body: unknown) => JSON.parse(new TextDecoder().decode((await nc.request(subject, new TextEncoder().encode(JSON.stringify(body)), { timeout: 10_000 })).data));
      const created = await req(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: "n", url: receiver.url("/nats") });
      expect(created.error).toBe("");
      receiver.secrets.set(created.push_id, created.secret);
      expect((await req(`$mq9.AI.PUSH.LIST.${box}`, {})).pushes.map((p: { push_id: string }) => p.push_id)).toEqual([created.push_id]);
      nc.publish(`$mq9.AI.MSG.SEND.${box}`, new TextEncoder().encode("via nats"));
      await receiver.until(() => receiver.of(box).length === 1);
      expect(receiver.of(box)[0]).toMatchObject({ signatureOk: true, msgId: 0 });
      expect(await req(`$mq9.AI.PUSH.DELETE.${box}`, { push_id: created.push_id })).toEqual({ error: "" });
    } finally {
      await nc.close();
    }
  });

  it("Standard Webhooks: standardwebhooks verifies every attempt, the message's mq9 headers are signed through webhook-id, and a retry keeps its webhook-id", async () => {
    const r = await new PushReceiver().start();
    try {
      const box = await mailbox();
      let first = true;
      r.respond = () => (first ? ((first = false), { status: 503 }) : { status: 200 });
      await push(box, r); // a generated whsec_ secret
      const conversation = { "mq9-reply-to": "caller.inbox", "mq9-correlation-id": "c-77", "mq9-priority": "urgent", "mq9-key": "k 1", "mq9-tags": "a,b" };
      await send(box, "hello", conversation);
      await r.until(() => r.requests.length >= 2);
      const [a, b] = r.requests;
      expect([a!.standardSignatureOk, b!.standardSignatureOk, a!.signatureOk, b!.signatureOk]).toEqual([true, true, true, true]);
      expect([a!.attempt, b!.attempt]).toEqual([1, 2]);
      expect(b!.headers["webhook-id"]).toBe(a!.headers["webhook-id"]);
      expect(a!.headers["webhook-id"]).toMatch(/^msg_[A-Za-z0-9_-]{43}$/);
      expect([a!.headers["mq9-reply-to"], a!.headers["mq9-correlation-id"], a!.headers["mq9-priority"], a!.headers["mq9-key"]]).toEqual(["caller.inbox", "c-77", "urgent", "k%201"]);
      // a capture replayed with another msg-id, reply-to or correlation-id no longer matches its webhook-id
      const secret = [...r.secrets.values()][0]!;
      for (const [name, value] of [["mq9-msg-id", "1"], ["mq9-reply-to", "attacker.inbox"], ["mq9-correlation-id", "c-78"]] as const) {
        expect(verifyStandard(secret, { ...a!.headers, [name]: value }, a!.body), name).toBe(false);
      }
    } finally {
      await r.close();
    }
  });

  it("the mq9 client: createPush / listPushes / deletePush, and verifyPushSignature on the receiving side", async () => {
    const client = await Mq9Client.connect(ctx.broker.url);
    const r = await new PushReceiver().start();
    try {
      const box = await mailbox();
      const { pushId, secret } = await client.createPush(box, { group: "c", url: r.url(), concurrency: 2, maxAttempts: 3 });
      expect(secret).toMatch(/^whsec_/);
      expect((await client.listPushes(box)).map((p) => [p.push_id, p.concurrency, p.max_attempts])).toEqual([[pushId, 2, 3]]);
      await client.send(box, "from the client");
      await r.until(() => r.requests.length === 1);
      const q = r.requests[0]!;
      expect(await verifyPushSignature(secret!, String(q.headers["mq9-signature"]), new Uint8Array(q.body))).toBe(true);
      expect(await verifyPushSignature("another secret of at least 32 bytes", String(q.headers["mq9-signature"]), new Uint8Array(q.body))).toBe(false);
      await client.deletePush(box, pushId);
      const gone = await client.deletePush(box, pushId).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(Mq9ClientError);
      expect((gone as Mq9ClientError).message).toBe("push subscription not found");
    } finally {
      await r.close();
      await client.close();
    }
  });

  it("/metrics counts attempts by outcome, dead letters, and the subscriptions", async () => {
    const text = async () => (await (await fetch(`${ctx.broker.url}/metrics`)).text());
    const value = (t: string, series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, "\\$&")} (\\S+)$`, "m").exec(t)?.[1] ?? NaN);
    let t = "";
    await until(async () => {
      t = await text();
      return value(t, 'mortarmq_push_attempts_total{tenant="default",outcome="ok"}') >= 1000 && value(t, 'mortarmq_push_dead_lettered_total{tenant="default"}') >= 1;
    }, 10_000, 200);
    expect(value(t, 'mortarmq_push_attempts_total{tenant="default",outcome="http_error"}')).toBeGreaterThanOrEqual(7);
    expect(value(t, 'mortarmq_push_attempts_total{tenant="default",outcome="timeout"}')).toBeGreaterThanOrEqual(2);
    expect(value(t, 'mortarmq_push_attempts_total{tenant="default",outcome="connection_error"}')).toBeGreaterThanOrEqual(2);
    expect(value(t, 'mortarmq_push_subscriptions{tenant="default"}')).toBeGreaterThanOrEqual(8);
    expect(value(t, 'mortarmq_mq9_messages_returned_total{tenant="default",verb="push"}')).toBeGreaterThanOrEqual(1000);
    // the in-flight gauge: up while a receiver holds the attempt, down after its answer
    const box = await mailbox();
    const r = await new PushReceiver().start();
    try {
      r.respond = () => "hold";
      await push(box, r);
      const inFlight = async () => value(await text(), 'mortarmq_push_in_flight{tenant="default"}');
      const before = await inFlight();
      await send(box, "held");
      await until(async () => (await inFlight()) === before + 1, 10_000, 100);
      r.release(200);
      await until(async () => (await inFlight()) === before, 10_000, 100);
    } finally {
      await r.close();
    }
  });
});
