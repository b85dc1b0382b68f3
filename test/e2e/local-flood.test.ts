/**
 * The local runtime under a flood (#14 items 3 and 4), against a real local
 * broker with short limits so the test needs no long waits:
 * - one tenant floods mailbox CREATEs at its limit (MQ9_MAILBOX_CREATES_PER_S,
 *   here 2/s in bursts of 20) from 24 concurrent clients: every answer is
 *   200 or 429 with Retry-After, never more created than the limit allows;
 *   meanwhile another tenant's MortarMQ PUBs and mq9 SENDs all succeed;
 * - one tenant declares topics up to its partition quota (here
 *   MORTAR_PARTITIONS_PER_TENANT = 256) and PUBs a record to every partition,
 *   and is refused the next topic with QUOTA_EXCEEDED; meanwhile the other
 *   tenant's PUBs and HTTP SENDs all succeed (#28 item 1: unbounded, ~2,170
 *   written partitions exhausted workerd's SQLite heap for every tenant);
 * - a MortarMQ connection that never sends CONNECT gets CONNECTION_TIMEOUT
 *   at the CONNECT deadline (MORTAR_CONNECT_TIMEOUT_MS, here 1.5 s) and
 *   the WebSocket close frame right after it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { httpOnce } from "../harness/http-once";
import { ErrorCode, FrameDecoder, Op, type Frame } from "../../wire/mortar";

const CONNECT_TIMEOUT_MS = 1_500;
const CREATES_PER_S = 2;
const FLOODER = "flood-token";
const BYSTANDER = "bystander-token";
const FLOOD_MS = 8_000;
const PARTITION_QUOTA = 256;
let stateDir: string;
let broker: LocalBroker;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-flood-"));
  broker = await startLocalBroker({
    stateDir, port: 0,
    vars: { MORTAR_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS), MQ9_MAILBOX_CREATES_PER_S: String(CREATES_PER_S), AUTH_TOKENS: `${FLOODER}:flooder,${BYSTANDER}:bystander`,
      MORTAR_PARTITIONS_PER_TENANT: String(PARTITION_QUOTA) },
  });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** `POST /mq9/<subject>` with a bearer token. */
async function mq9(token: string, subject: string, body: unknown) {
  const res = await fetch(`${broker.url}/mq9/${subject}`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as { error: string; [k: string]: unknown } };
}

describe("a mailbox flood of one tenant (#14 item 3)", () => {
  it("is held at its creation rate with 429 + Retry-After, and another tenant's PUBs and SENDs keep succeeding", async () => {
    const box = "bystander.inbox";
    expect((await mq9(BYSTANDER, "$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 600 })).status).toBe(200);
    const client = await MortarClient.connect(broker.url, { token: BYSTANDER });
    const { topicId } = await client.declare("bystander.events", 1);
    const end = Date.now() + FLOOD_MS;
    const t0 = Date.now();
    const answers = new Map<string, number>();
    let created = 0;
    const refusals: { retryAfter: string | null; error: string }[] = [];
    const flooder = async (w: number) => {
      for (let i = 0; Date.now() < end; i++) {
        const r = await mq9(FLOODER, "$mq9.AI.MAILBOX.CREATE", { name: `flood.${w}.${i}`, ttl: 600 });
        answers.set(String(r.status), (answers.get(String(r.status)) ?? 0) + 1);
        if (r.status === 200) created++;
        else refusals.push({ retryAfter: r.retryAfter, error: r.body.error });
      }
    };
    let pubs = 0;
    let sends = 0;
    const bystander = async () => {
      for (let i = 0; Date.now() < end; i++) {
        const p = await client.publish(topicId, 0, null, `event ${i}`);
        expect(p.sequence).toBe(BigInt(i + 1));
        pubs++;
        const r = await mq9(BYSTANDER, `$mq9.AI.MSG.SEND.${box}`, { n: i });
        expect([r.status, r.body.error]).toEqual([200, ""]);
        sends++;
      }
    };
    await Promise.all([...Array.from({ length: 24 }, (_, w) => flooder(w)), bystander()]);
    const elapsedS = (Date.now() - t0) / 1000;
    await client.close();

    expect([...answers.keys()].sort()).toEqual(["200", "429"]); // nothing else: no 500, no 503
    expect(refusals.length).toBeGreaterThan(0);
    for (const r of refusals) {
      expect(r.error).toMatch(/^mailbox creation rate exceeded: 2 CREATEs per second per tenant \(bursts of 20\); nothing was created, retry later$/);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(created).toBeLessThanOrEqual(10 * CREATES_PER_S + Math.ceil(CREATES_PER_S * elapsedS) + 1);
    expect(pubs).toBeGreaterThan(0);
    expect(sends).toBe(pubs);
    const q = await mq9(BYSTANDER, `$mq9.AI.MSG.QUERY.${box}`, {});
    expect((q.body.messages as unknown[]).length).toBe(sends);
  });
});

describe("a partition flood of one tenant (#28 item 1)", () => {
  it("stops at the tenant's partition quota, and another tenant's PUBs and SENDs all succeed meanwhile", async () => {
    const box = "bystander.parts";
    expect((await mq9(BYSTANDER, "$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 600 })).status).toBe(200);
    const by = await MortarClient.connect(broker.url, { token: BYSTANDER });
    const { topicId: byTopic } = await by.declare("bystander.parts", 1);
    const flood = await MortarClient.connect(broker.url, { token: FLOODER });
    let flooding = true;
    const flooder = async () => {
      try {
        for (let t = 0; t < PARTITION_QUOTA / 64; t++) {
          const { topicId } = await flood.declare(`flood.${t}`, 64);
          await Promise.all(Array.from({ length: 64 }, (_, p) => flood.publish(topicId, p, null, `r${p}`)));
        }
        const past = await flood.declare("flood.more", 1).then(() => null, (e: Error & { code?: number }) => e);
        expect(past?.code).toBe(ErrorCode.QUOTA_EXCEEDED);
      } finally {
        flooding = false;
      }
    };
    let pubs = 0;
    const failures: string[] = [];
    const bystander = async () => {
      while (flooding || pubs < 5) {
        const p = await by.publish(byTopic, 0, null, `event ${pubs}`).then((r) => r.sequence, (e: Error) => e.message);
        if (p !== BigInt(pubs + 1)) failures.push(`PUB ${pubs}: ${String(p)}`);
        // a connection per SEND: see test/harness/http-once.ts
        const r = await httpOnce(`${broker.url}/mq9/$mq9.AI.MSG.SEND.${box}`, {
          method: "POST", headers: { authorization: `Bearer ${BYSTANDER}` }, body: JSON.stringify({ n: pubs }),
        }).then((a) => ({ status: a.status, error: (JSON.parse(a.text) as { error: string }).error }), (e: Error) => ({ status: 0, error: e.message }));
        if (r.status !== 200 || r.error !== "") failures.push(`SEND ${pubs}: ${r.status} ${r.error}`);
        pubs++;
      }
    };
    await Promise.all([flooder(), bystander()]);
    await Promise.all([by.close(), flood.close()]);
    expect(failures).toEqual([]);
    expect(pubs).toBeGreaterThanOrEqual(5);
  });
});

describe("CONNECT deadline (#14 item 4)", () => {
  it("a connection that never sends CONNECT gets CONNECTION_TIMEOUT at the deadline, then the close frame", async () => {
    const opened = Date.now();
    const ws = new WebSocket(`${broker.url.replace(/^http/, "ws")}/v0/mortar`, { perMessageDeflate: false });
    const dec = new FrameDecoder();
    const got: { frame: Frame; at: number; state: number }[] = [];
    ws.on("message", (d: Buffer) => {
      for (const frame of dec.push(new Uint8Array(d)).frames) got.push({ frame, at: Date.now(), state: ws.readyState });
    });
    // ws emits "close" once the server also ended the TCP connection; readyState is CLOSING from the close frame on
    let closeFrameAt = 0;
    const watch = setInterval(() => { if (!closeFrameAt && ws.readyState >= WebSocket.CLOSING) closeFrameAt = Date.now(); }, 10);
    const closed = await new Promise<{ code: number; at: number }>((resolve, reject) => {
      ws.once("error", reject);
      ws.once("close", (code) => resolve({ code, at: Date.now() }));
    }).finally(() => clearInterval(watch));
    expect(got).toHaveLength(1);
    const { frame: err, at: errAt } = got[0]!;
    expect(err.op).toBe(Op.ERR);
    if (err.op !== Op.ERR) return;
    expect(err.code).toBe(ErrorCode.CONNECTION_TIMEOUT);
    expect(new TextDecoder().decode(err.message)).toMatch(/no CONNECT within 1\.5 s/);
    expect(errAt - opened).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS);
    expect(got[0]!.state).toBe(WebSocket.OPEN); // the ERR comes before the close frame
    expect(closeFrameAt).toBeGreaterThanOrEqual(errAt);
    expect(closed.code).toBe(1008);
    expect(closed.at).toBeGreaterThanOrEqual(closeFrameAt);
  });
});
