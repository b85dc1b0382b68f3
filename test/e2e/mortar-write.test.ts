/**
 * End-to-end MortarMQ write path against a real local broker (mortarmq dev,
 * its own state dir), through raw TCP via the bridge: CONNECT, DECLARE,
 * 10,000 lines of a generated log file published by an idempotent producer,
 * 100 retries deduplicated with their original sequences, then a broker
 * restart on the same state dir: sequences continue, dedupe state survives.
 * Plus a WebSocket client and tokens (AUTH_FAILED).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient, MortarClientError } from "../../client/sdk";
import WebSocket from "ws";
import { ErrorCode, FrameDecoder, Op, WIRE_VERSION, decodePubResult, encodeFrames, utf8Bytes, type Frame } from "../../wire/mortar";

const TOKEN = "e2e-mortar-token";
const PRODUCER = 0x1234_5678_9abcn;
let stateDir: string;
let broker: LocalBroker;
let bridge: Tunnel;

async function start(): Promise<void> {
  broker = await startLocalBroker({ stateDir: join(stateDir, "state"), port: 0, vars: { AUTH_TOKENS: `${TOKEN}:acme` } });
  bridge = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(broker.url, "v0/mortar") });
}

async function stop(): Promise<void> {
  await bridge?.close();
  await broker?.stop();
}

/** A raw WebSocket to the broker's /v0/mortar; `got` collects the decoded frames it receives. */
async function rawWebSocket(): Promise<{ ws: WebSocket; got: Frame[] }> {
  const ws = new WebSocket(`${broker.url.replace(/^http/, "ws")}/v0/mortar`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const got: Frame[] = [];
  const dec = new FrameDecoder();
  ws.on("message", (d: Buffer) => got.push(...dec.push(new Uint8Array(d)).frames));
  return { ws, got };
}

/** Writes a 10,000-line access log and reads it back as lines. */
function logLines(): string[] {
  const path = join(stateDir, "access.log");
  const methods = ["GET", "POST", "PUT", "DELETE"];
  const paths = ["/v0/mortar", "/healthz", "/mq9/orders", "/stats", "/nats"];
  const out: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    const t = new Date(Date.UTC(2026, 10, 30, 12, 0, 0) + i * 137).toISOString();
    out.push(`${t} 10.0.${(i * 7) % 256}.${(i * 13) % 256} ${methods[i % 4]} ${paths[i % 5]}?n=${i} ${200 + (i % 7 === 0 ? 304 : 0)} ${(i * 7919) % 65536}B "mortarmq-e2e/${i % 3}"`);
  }
  writeFileSync(path, out.join("\n") + "\n");
  return readFileSync(path, "utf8").split("\n").filter((l) => l.length > 0);
}

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-write-"));
  await start();
});

afterAll(async () => {
  await stop();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("MortarMQ write path, real broker", () => {
  it("publishes a log over raw TCP, deduplicates retries, and continues after a restart", async () => {
    const lines = logLines();
    expect(lines.length).toBe(10_000);
    const tcp = `tcp://127.0.0.1:${bridge.port}`;
    let client = await MortarClient.connect(tcp, { token: TOKEN });
    const topic = await client.declare("access-log", 1);
    expect(topic).toEqual({ topicId: 1, partitionCount: 1, created: 0 });

    const results = await Promise.all(lines.map((line, i) =>
      client.publish(topic.topicId, 0, null, line, { producerId: PRODUCER, producerSeq: BigInt(i + 1) })));
    expect(results.map((r) => Number(r.sequence))).toEqual(lines.map((_, i) => i + 1));
    expect(results.every((r) => !r.deduplicated && r.durability === 1)).toBe(true);
    const epochBefore = results[0].leaderEpoch;

    // 100 retries of lines inside the dedupe window (values 8977..10000): original sequences, nothing appended.
    const retried = Array.from({ length: 100 }, (_, k) => 9_000 + ((k * 97) % 1_000));
    const dups = await Promise.all(retried.map((i) =>
      client.publish(topic.topicId, 0, null, lines[i], { producerId: PRODUCER, producerSeq: BigInt(i + 1) })));
    expect(dups.map((r) => [Number(r.sequence), r.deduplicated])).toEqual(retried.map((i) => [i + 1, true]));
    expect(dups.every((r) => r.commitSeq === 10_000n)).toBe(true);
    // a retry at or below highest − 1024 cannot be told apart from a new message: refused
    const old = await client.publish(topic.topicId, 0, null, lines[5], { producerId: PRODUCER, producerSeq: 6n }).catch((e) => e);
    expect(old).toBeInstanceOf(MortarClientError);
    expect(old).toMatchObject({ code: ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW, name: "PRODUCER_SEQ_OUT_OF_WINDOW", action: "give-up" });
    await client.close();

    // Restart the broker process on the same state directory.
    await stop();
    await start();
    client = await MortarClient.connect(`tcp://127.0.0.1:${bridge.port}`, { token: TOKEN });
    expect(await client.declare("access-log", 1)).toEqual({ topicId: 1, partitionCount: 1, created: 1 });
    const replay = await client.publish(1, 0, null, lines[9_999], { producerId: PRODUCER, producerSeq: 10_000n });
    expect([replay.sequence, replay.deduplicated, replay.commitSeq]).toEqual([10_000n, true, 10_000n]);
    expect(replay.leaderEpoch).toBeGreaterThan(epochBefore);
    expect(replay.durability).toBe(1); // still one local SQLite file after the restart
    const more = await Promise.all(Array.from({ length: 50 }, (_, k) =>
      client.publish(1, 0, null, `after restart ${k}`, { producerId: PRODUCER, producerSeq: BigInt(10_001 + k) })));
    expect(more.map((r) => Number(r.sequence))).toEqual(Array.from({ length: 50 }, (_, k) => 10_001 + k));
    await client.close();
  }, 180_000);

  it("serves WebSocket clients too, and refuses an unknown token with AUTH_FAILED", async () => {
    const ws = await MortarClient.connect(broker.url, { token: TOKEN });
    const t = await ws.declare("ws-topic", 2);
    const r = await ws.publish("ws-topic", 1, "key", "hello over WebSocket");
    expect([r.sequence, r.deduplicated]).toEqual([1n, false]);
    expect(await ws.ping()).toBeGreaterThan(0);
    const del = await ws.deleteTopic("ws-topic");
    expect(del.topicId).toBe(t.topicId);
    await ws.close();
    const refused = await MortarClient.connect(broker.url, { token: "nope" }).catch((e) => e);
    expect(refused).toBeInstanceOf(MortarClientError);
    expect(refused).toMatchObject({ code: ErrorCode.AUTH_FAILED, name: "AUTH_FAILED", action: "give-up", source: "broker" });
  }, 60_000);

  it("reassembles a stream cut into 1–7 byte WebSocket messages (message boundaries are not frame boundaries)", async () => {
    const { ws, got } = await rawWebSocket();
    const frames: Frame[] = [
      { op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags: 0, token: utf8Bytes(TOKEN), reserved: 0 },
      { op: Op.DECLARE, topic: utf8Bytes("split"), partitionCount: 1, flags: 0 },
    ];
    for (let i = 0; i < 20; i++) {
      frames.push({ op: Op.PUB, topicId: 0, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: utf8Bytes(`piece ${i}`) });
    }
    const bytes = encodeFrames(frames.slice(0, 2));
    const sendCut = (b: Uint8Array) => {
      for (let o = 0, k = 0; o < b.length; k++) {
        const n = 1 + (k % 7);
        ws.send(b.subarray(o, o + n));
        o += n;
      }
    };
    sendCut(bytes);
    for (let i = 0; i < 100 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(got.map((f) => f.op)).toEqual([Op.OK, Op.OK]);
    const topicId = new DataView((got[1] as { result: Uint8Array }).result.buffer, (got[1] as { result: Uint8Array }).result.byteOffset).getUint16(0);
    const pubs = encodeFrames(frames.slice(2).map((f) => ({ ...f, topicId }) as Frame));
    sendCut(pubs);
    for (let i = 0; i < 200 && got.length < 22; i++) await new Promise((r) => setTimeout(r, 20));
    expect(got.slice(2).map((f) => Number(decodePubResult((f as { result: Uint8Array }).result).sequence))).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1));
    ws.close();
  }, 60_000);

  it("10,000 one-byte WebSocket messages sent back to back reach the session in order (stored values match)", async () => {
    const { ws, got } = await rawWebSocket();
    const bytewise = (b: Uint8Array) => {
      for (let i = 0; i < b.length; i++) ws.send(b.subarray(i, i + 1)); // no pacing: back to back
    };
    const answers = async (n: number) => {
      for (let i = 0; i < 1500 && got.length < n; i++) await new Promise((r) => setTimeout(r, 20));
      return got.splice(0, n);
    };
    bytewise(encodeFrames([
      { op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags: 0, token: utf8Bytes(TOKEN), reserved: 0 },
      { op: Op.DECLARE, topic: utf8Bytes("bytewise"), partitionCount: 1, flags: 0 },
    ]));
    const [conn, decl] = await answers(2);
    expect([conn?.op, decl?.op]).toEqual([Op.OK, Op.OK]);
    const topicId = new DataView((decl as { result: Uint8Array }).result.buffer, (decl as { result: Uint8Array }).result.byteOffset).getUint16(0);
    const values: string[] = [];
    const pubs: Frame[] = [];
    let stream: Uint8Array = new Uint8Array(0);
    while (stream.length < 10_000) {
      values.push(`record ${values.length} ${"abcdefghij".slice(0, values.length % 11)}`);
      pubs.push({ op: Op.PUB, topicId, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0), value: utf8Bytes(values.at(-1)!) });
      stream = encodeFrames(pubs);
    }
    bytewise(stream);
    const acks = await answers(values.length);
    expect(acks.map((f) => (f.op === Op.OK ? Number(decodePubResult(f.result).sequence) : -1))).toEqual(values.map((_, i) => i + 1));
    ws.close();
    // read the partition back: every value byte-for-byte, in the order sent
    const reader = await MortarClient.connect(broker.url, { token: TOKEN });
    const sub = await reader.subscribe(topicId, "order-check");
    const stored = new Map<bigint, string>();
    while (stored.size < values.length) {
      const m = await sub.next(5000);
      if (!m) break;
      stored.set(m.sequence, m.text());
      await m.ack();
    }
    expect([...stored.entries()].sort((a, b) => Number(a[0] - b[0])).map(([, v]) => v)).toEqual(values);
    await sub.close();
    await reader.close();
  }, 60_000);

  it("100,000 pipelined idempotent PUBs (100 producers): those refused with BACKPRESSURE are appended when resent, exactly once (raw, then the SDK's retry)", async () => {
    // Raw: what the SDK does on the wire (QA scenario bpretry). 100 producers × 1000 seqs, so a resent seq is
    // within its producer's dedupe window (a single producer with more than 1024 in flight cannot be deduplicated).
    const { ws, got } = await rawWebSocket();
    const until = async (n: number) => {
      for (let i = 0; i < 3000 && got.length < n; i++) await new Promise((r) => setTimeout(r, 20));
      return got.splice(0, n);
    };
    ws.send(encodeFrames([
      { op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags: 0, token: utf8Bytes(TOKEN), reserved: 0 },
      { op: Op.DECLARE, topic: utf8Bytes("bp-retry-raw"), partitionCount: 1, flags: 0 },
    ]));
    const [, declared] = await until(2);
    const topicId = new DataView((declared as { result: Uint8Array }).result.buffer, (declared as { result: Uint8Array }).result.byteOffset).getUint16(0);
    const N = 100_000;
    const PRODUCERS = 100;
    const pub = (i: number): Frame => ({
      op: Op.PUB, topicId, partition: 0, producerId: BigInt(1 + (i % PRODUCERS)), producerSeq: BigInt(1 + Math.floor(i / PRODUCERS)),
      flags: 0, key: new Uint8Array(0), value: utf8Bytes("v"),
    });
    const all = encodeFrames(Array.from({ length: N }, (_, i) => pub(i)));
    for (let o = 0; o < all.length; o += 1 << 20) ws.send(all.subarray(o, o + (1 << 20)));
    const first = await until(N);
    expect(first.length).toBe(N);
    const refused = first.flatMap((f, i) => (f.op === Op.ERR && f.code === ErrorCode.BACKPRESSURE ? [i] : []));
    expect(refused.length).toBeGreaterThan(0); // the scenario needs some refused PUBs
    const sequences = new Set(first.flatMap((f) => (f.op === Op.OK ? [Number(decodePubResult(f.result).sequence)] : [])));
    expect(sequences.size + refused.length).toBe(N);
    ws.send(encodeFrames(refused.map(pub)));
    const again = await until(refused.length);
    expect(again.map((f) => (f.op === Op.ERR ? f.code : decodePubResult((f as { result: Uint8Array }).result).resultFlags)).filter((x) => x !== 0)).toEqual([]);
    for (const f of again) sequences.add(Number(decodePubResult((f as { result: Uint8Array }).result).sequence));
    expect(sequences.size).toBe(N); // every PUB got its own sequence: appended exactly once
    expect(Math.max(...sequences)).toBe(N);
    ws.close();

    // The SDK: retry-with-backoff of BACKPRESSURE resends the same producer_seq.
    const client = await MortarClient.connect(broker.url, { token: TOKEN, retry: { attempts: 10 } });
    await client.declare("bp-retry-sdk", 1);
    const results = await Promise.all(Array.from({ length: N }, (_, i) => {
      const f = pub(i) as { producerId: bigint; producerSeq: bigint };
      return client.publish("bp-retry-sdk", 0, null, "v", { producerId: f.producerId, producerSeq: f.producerSeq });
    }));
    const seqs = new Set(results.map((r) => Number(r.sequence)));
    expect(seqs.size).toBe(N);
    expect(Math.max(...seqs)).toBe(N);
    // One producer with 30,000 publishes at once: the SDK keeps 1024 in flight, all appended once, in order.
    const one = await Promise.all(Array.from({ length: 30_000 }, (_, i) =>
      client.publish("bp-retry-sdk", 0, null, "w", { producerId: 999n, producerSeq: BigInt(i + 1) })));
    expect(one.map((r) => Number(r.sequence))).toEqual(Array.from({ length: 30_000 }, (_, i) => N + i + 1));
    await client.close();
  }, 120_000);

  it("answers every request sent before a TCP client's FIN (half-close through the bridge)", async () => {
    const { connect: netConnect } = await import("node:net");
    const sock = netConnect({ host: "127.0.0.1", port: bridge.port, allowHalfOpen: true });
    await new Promise((r) => sock.once("connect", r));
    const dec = new FrameDecoder();
    const got: Frame[] = [];
    sock.on("data", (d: Buffer) => got.push(...dec.push(new Uint8Array(d)).frames));
    const closed = new Promise((r) => sock.once("close", r));
    sock.end(encodeFrames([
      { op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags: 0, token: utf8Bytes(TOKEN), reserved: 0 },
      { op: Op.DECLARE, topic: utf8Bytes("half-close"), partitionCount: 1, flags: 0 },
      { op: Op.PING },
    ]));
    await Promise.race([closed, new Promise((r) => setTimeout(r, 20_000))]);
    expect(got.map((f) => f.op === Op.OK && f.requestOp)).toEqual([Op.CONNECT, Op.DECLARE, Op.PING]);
  }, 30_000);
});
