/**
 * Ways around the quotas and the metering found by breaking the hosted
 * broker (issue 9, second round): bytes a SEND stores outside its payload
 * (key, tags) count as storage; every `POST /mq9/…` of an authenticated
 * caller is a metered request, and the byte-rate quota charges the bytes a
 * publish stores (MortarMQ key + value, mq9 payload + key + tags), those refused before the handler (413, bad
 * path encoding) included. docs/tenants.md, docs/operations.md.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../../wire/mortar";
import { parseMetrics, sampleValue } from "../../fixtures/prometheus";
import { WsConn, pubFrame } from "../helpers/mortar-ws";
import { ADMIN, mq9As, sleep, tenantWithToken } from "./helpers";

/** The tenant's /metrics samples (operator token; the Worker reports before answering). */
async function metrics(tenant: string) {
  const text = await (await SELF.fetch("http://broker/metrics", { headers: { Authorization: `Bearer ${ADMIN}` } })).text();
  return (name: string, labels: Record<string, string> = {}) => sampleValue(parseMetrics(text), name, { tenant, ...labels });
}

/** Retries `fn` every 50 ms until it returns true (at most `ms`). */
async function eventually(fn: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await sleep(50);
  }
}

/** `POST /mq9/<subject>` with `mq9-*` headers. */
async function send(token: string, subject: string, payload: string, headers: Record<string, string>) {
  const res = await SELF.fetch(`http://broker/mq9/${subject}`, { method: "POST", body: payload, headers: { Authorization: `Bearer ${token}`, ...headers } });
  return { status: res.status, body: (await res.json()) as { error: string } };
}

describe("storage quota: mq9 keys and tags", () => {
  it("empty-payload SENDs carrying a 512-char key and 32 tags count their metadata as stored bytes and trip the quota", async () => {
    const { tenant, token } = await tenantWithToken("meta", { storage_bytes: 20_000 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "meta.box", ttl: 0 })).body.error).toBe("");
    const tags = Array.from({ length: 32 }, (_, i) => `${"t".repeat(120)}${i}`);
    const metaBytes = 512 + tags.join(",").length + 2; // key + tags as stored (",a,…,")
    // One message: exactly its metadata is stored (payload 0 bytes).
    const one = await send(token, "$mq9.AI.MSG.SEND.meta.box", "", { "mq9-key": `k${"k".repeat(511)}`, "mq9-tags": tags.join(",") });
    expect(one.status).toBe(200);
    await eventually(async () => (await metrics(tenant))("mortarmq_stored_bytes", { system: "mq9" }) === metaBytes);
    // More of them (distinct keys) reach the 20 kB quota within the pipeline's staleness: SEND → 429 quota_exceeded.
    let refused: { status: number; body: { error: string } } | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const key = `${i}`.padEnd(512, "k");
      const r = await send(token, "$mq9.AI.MSG.SEND.meta.box", "", { "mq9-key": key, "mq9-tags": tags.join(",") });
      if (r.status !== 200) refused = r;
      else await sleep(20);
    }
    expect(refused?.status).toBe(429);
    expect(refused?.body.error).toMatch(/^storage quota exceeded/);
  });
});

describe("metering: mq9 HTTP requests refused before the handler", () => {
  it("a 413 (body over 1 MiB) and a 400 (bad percent-encoding in the path) are counted as requests", async () => {
    const { tenant, token } = await tenantWithToken("refused");
    const big = await SELF.fetch("http://broker/mq9/$mq9.AI.MSG.SEND.x.box", { method: "POST", body: new Uint8Array(1024 * 1024 + 1), headers: { Authorization: `Bearer ${token}` } });
    expect(big.status).toBe(413);
    await big.text();
    const bad = await SELF.fetch("http://broker/mq9/%E0%A4%A", { method: "POST", body: "x", headers: { Authorization: `Bearer ${token}` } });
    expect(bad.status).toBe(400);
    await bad.text();
    const v = await metrics(tenant);
    expect(v("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "payload_too_large", transport: "http" })).toBe(1);
    expect(v("mortarmq_mq9_requests_total", { verb: "unknown", outcome: "bad_request", transport: "http" })).toBe(1);
  });
});

describe("publish byte rate: keys and tags are charged", () => {
  it("MortarMQ PUBs with a 255-byte key and an empty value are held to publish_bytes_per_s", async () => {
    const { token } = await tenantWithToken("keyrate", { publish_bytes_per_s: 1000 });
    const c = await WsConn.open();
    await c.connect(token);
    const { topicId } = await c.declare("keyed", 1);
    const key = new Uint8Array(255).fill(0x6b);
    c.send(Array.from({ length: 20 }, () => pubFrame(topicId, 0, new Uint8Array(0), { key })));
    const answers = await c.take(20, 10_000);
    const ok = answers.filter((f) => f.op === Op.OK).length;
    // One second of the rate (1000 bytes) admits 3 records of 255 bytes (a lease in flight may add one chunk, 100 bytes).
    expect(ok).toBeLessThanOrEqual(5);
    const refused = answers.find((f) => f.op === Op.ERR);
    expect(refused && refused.op === Op.ERR && refused.code).toBe(ErrorCode.QUOTA_EXCEEDED);
    c.close();
  });

  it("mq9 SENDs with an empty payload and 4 kB of key and tags are held to publish_bytes_per_s", async () => {
    const { token } = await tenantWithToken("tagrate", { publish_bytes_per_s: 10_000 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "tag.box", ttl: 0 })).body.error).toBe("");
    const tags = Array.from({ length: 32 }, (_, i) => `${"t".repeat(120)}${i}`).join(",");
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await send(token, "$mq9.AI.MSG.SEND.tag.box", "", { "mq9-key": `${i}`.padEnd(512, "k"), "mq9-tags": tags })).status);
    // ~4.4 kB each: one second of the rate (10 kB) admits 2, a lease in flight at most one more.
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3);
    expect(statuses).toContain(429);
  });
});
