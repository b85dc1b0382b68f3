import { describe, expect, it } from "vitest";
import {
  DeclareCreated, DeclareFlags, Discard, ErrorCode, FrameDecoder, Op, RetentionFields, ServerFeatures,
  encodeDeclareResult, encodeFrame, encodePubResult, errFrame, okFrame, utf8Bytes,
  type Frame, type PubFrame,
} from "../../wire/mortar";
import { MortarClient, MortarClientError, type Transport } from "../../client/sdk";

/** An in-process broker stand-in: decodes what the client writes and answers through `answer`. */
class FakeBroker implements Transport {
  private data: (c: Uint8Array) => void = () => {};
  private closeCb: (r: string) => void = () => {};
  private readonly dec = new FrameDecoder();
  writes = 0;
  received: Frame[] = [];
  constructor(private readonly answer: (f: Frame, n: number) => Frame | null) {}
  write(bytes: Uint8Array): void {
    this.writes++;
    const out: Uint8Array[] = [];
    for (const f of this.dec.push(bytes).frames) {
      this.received.push(f);
      const a = this.answer(f, this.received.length);
      if (a) out.push(encodeFrame(a));
    }
    if (out.length) setTimeout(() => this.data(Buffer.concat(out)), 1);
  }
  onData(cb: (c: Uint8Array) => void): void {
    this.data = cb;
  }
  onClose(cb: (r: string) => void): void {
    this.closeCb = cb;
  }
  close(): void {
    this.closeCb("closed by test");
  }
  push(f: Frame): void {
    this.data(encodeFrame(f));
  }
  bufferedAmount = 0;
}

const pubOk = (sequence: bigint, resultFlags = 0) =>
  okFrame(Op.PUB, encodePubResult({ sequence, durability: 1, leaderEpoch: 1n, commitSeq: sequence, resultFlags }));

/** A client over a FakeBroker (constructed directly: no CONNECT is sent; `n` counts frames from 1). */
function clientOver(answer: (f: Frame, n: number) => Frame | null, retry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 }) {
  const broker = new FakeBroker(answer);
  const ctor = MortarClient as unknown as new (t: Transport, o: object) => MortarClient;
  return { broker, client: new ctor(broker, { keepaliveMs: 0, retry }) };
}

describe("MortarClient", () => {
  it("pipelines many publishes, batches them into few writes, and matches answers in order", async () => {
    let seq = 0n;
    const { broker, client } = clientOver((f) => (f.op === Op.PUB ? pubOk(++seq) : null));
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => client.publish(1, 0, null, `v${i}`)));
    expect(results.map((r) => Number(r.sequence))).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(broker.writes).toBeLessThanOrEqual(2);
  });

  it("keeps at most 1024 idempotent publishes of one (topic, partition, producer) in flight; others go ahead", async () => {
    let seq = 0n;
    let auto = false; // answer nothing at first, so the in-flight count is visible in what the broker received
    const { broker, client } = clientOver((f) => (auto && f.op === Op.PUB ? pubOk(++seq) : null));
    const idem = Array.from({ length: 1500 }, (_, i) => client.publish(1, 0, null, "v", { producerId: 9n, producerSeq: BigInt(i + 1) }));
    const other = client.publish(1, 1, null, "v", { producerId: 9n, producerSeq: 1n });
    await new Promise((r) => setTimeout(r, 10));
    const sent = () => broker.received.filter((f) => f.op === Op.PUB) as PubFrame[];
    expect(sent().filter((f) => f.partition === 0).length).toBe(1024);
    expect(sent().filter((f) => f.partition === 1).length).toBe(1);
    auto = true;
    for (let i = 0, n = sent().length; i < n; i++) broker.push(pubOk(++seq));
    await Promise.all([...idem, other]);
    const seqs = sent().filter((f) => f.partition === 0).map((f) => Number(f.producerSeq));
    expect(seqs).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1)); // sent in call order
  });

  it("turns an ERR into a MortarClientError with code, name and action", async () => {
    const { client } = clientOver((f) => errFrame(ErrorCode.PARTITION_OUT_OF_RANGE, f.op, "no such partition"));
    const e = await client.publish(1, 9, null, "x").catch((x) => x);
    expect(e).toBeInstanceOf(MortarClientError);
    expect(e).toMatchObject({ code: ErrorCode.PARTITION_OUT_OF_RANGE, name: "PARTITION_OUT_OF_RANGE", action: "refresh-metadata", source: "broker", requestOp: Op.PUB, message: "no such partition" });
  });

  it("retries retryable errors for an idempotent producer, with the same producer_seq", async () => {
    const { broker, client } = clientOver((f, n) => (n < 3 ? errFrame(ErrorCode.LEADER_CHANGED, f.op, "moved") : pubOk(7n)));
    const r = await client.publish(1, 0, null, "x", { producerId: 5n, producerSeq: 42n });
    expect(r.sequence).toBe(7n);
    const pubs = broker.received.filter((f): f is PubFrame => f.op === Op.PUB);
    expect(pubs.length).toBe(3);
    expect(pubs.every((p) => p.producerSeq === 42n)).toBe(true);
  });

  it("does not resend a non-idempotent PUB whose outcome is unknown, but does after BACKPRESSURE", async () => {
    const unknown = clientOver((f) => errFrame(ErrorCode.ELECTION_TIMEOUT, f.op, "slow"));
    expect(await unknown.client.publish(1, 0, null, "x").catch((e) => e.name)).toBe("ELECTION_TIMEOUT");
    expect(unknown.broker.received.filter((f) => f.op === Op.PUB).length).toBe(1);
    const busy = clientOver((f, n) => (n < 3 ? errFrame(ErrorCode.BACKPRESSURE, f.op, "busy") : pubOk(1n)));
    expect((await busy.client.publish(1, 0, null, "x")).sequence).toBe(1n);
  });

  it("fails every pending request, and later ones, with a closing ERR", async () => {
    const { broker, client } = clientOver(() => null);
    const a = client.ping().catch((e) => e);
    const b = client.publish(1, 0, null, "x", { retry: false }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 5));
    broker.push(errFrame(ErrorCode.CONNECTION_TIMEOUT, 0, "idle"));
    expect((await a).name).toBe("CONNECTION_TIMEOUT");
    expect((await b).name).toBe("CONNECTION_TIMEOUT");
    expect(client.closed).toBe(true);
    expect(await client.ping().catch((e) => [e.name, e.action])).toEqual(["CONNECTION_TIMEOUT", "reconnect"]);
  });

  it("declare() remembers names so publish() takes a topic name", async () => {
    const { client } = clientOver((f) =>
      f.op === Op.DECLARE ? okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 5, partitionCount: 2, created: 0 })) : pubOk(1n));
    await client.declare("orders", 2);
    expect(client.topic("orders")).toEqual({ name: "orders", topicId: 5, partitionCount: 2 });
    expect((await client.publish("orders", 1, "k", "v")).sequence).toBe(1n);
    expect(await client.publish("nope", 0, null, "v").catch((e) => e.name)).toBe("UNKNOWN_TOPIC");
  });

  it("a request that cannot be encoded fails alone: it takes no FIFO slot and the connection stays usable", async () => {
    let seq = 0n;
    const { broker, client } = clientOver((f) => (f.op === Op.PUB ? pubOk(++seq) : f.op === Op.PING ? okFrame(Op.PING) : null));
    const before = client.publish(1, 0, null, "before");
    expect(await client.publish(1, 70_000, null, "x").catch((e) => e)).toBeInstanceOf(RangeError); // partition is a u16
    expect(await client.publish(1, 0, new Uint8Array(70_000), "x").catch((e) => e)).toBeInstanceOf(RangeError); // key_len is a u16
    expect(client.inFlight).toBe(1);
    expect((await before).sequence).toBe(1n);
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    expect((await client.publish(1, 0, null, "after")).sequence).toBe(2n);
    expect(client.closed).toBe(false);
    expect(broker.received.map((f) => f.op)).toEqual([Op.PUB, Op.PING, Op.PUB]);
  });

  it("connect: a broker that cannot be reached, or a bridge that closes at once (its broker is down), says 'broker unreachable at …'", async () => {
    const refused = await MortarClient.connect("ws://127.0.0.1:1", { timeoutMs: 2000 }).catch((e) => e);
    expect(refused).toBeInstanceOf(MortarClientError);
    expect(refused.message).toMatch(/^broker unreachable at ws:\/\/127\.0\.0\.1:1: WebSocket .*ECONNREFUSED/);
    const { createServer } = await import("node:net");
    const srv = createServer((s) => s.destroy());
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    const port = (srv.address() as { port: number }).port;
    const closed = await MortarClient.connect(`tcp://127.0.0.1:${port}`, { timeoutMs: 2000 }).catch((e) => e);
    srv.close();
    expect(closed).toMatchObject({ name: "CONNECTION_CLOSED", action: "reconnect" });
    expect(closed.message).toBe(`broker unreachable at tcp://127.0.0.1:${port}: TCP connection closed before CONNECT was answered`);
  });

  it("close({ drain: true }) waits for requests in flight and publishes in retry; plain close() fails them", async () => {
    let seq = 0n;
    let n = 0;
    const { client } = clientOver((f) => {
      if (f.op !== Op.PUB) return null;
      return ++n === 2 ? errFrame(ErrorCode.BACKPRESSURE, f.op, "busy") : pubOk(++seq); // the 2nd is refused once, then resent
    });
    const pubs = [1, 2, 3].map((i) => client.publish(1, 0, null, `v${i}`));
    await client.close({ drain: true });
    expect((await Promise.all(pubs)).map((r) => Number(r.sequence))).toEqual([1, 3, 2]);
    expect(client.closed).toBe(true);

    const other = clientOver(() => null).client; // never answers
    const pending = other.publish(1, 0, null, "x", { retry: false });
    await other.close();
    await expect(pending).rejects.toMatchObject({ name: "CONNECTION_CLOSED" });
  });

  it("topic retention (extension): sends the DECLARE tail only with options and only to a broker that named the extension", async () => {
    const declareOk = (f: Frame) => {
      if (f.op !== Op.DECLARE) return null;
      const retention = f.retention ? { retentionMs: f.retention.retentionMs, retentionBytes: 0n, retentionMessages: 0n, discard: Discard.NEW } : undefined;
      return okFrame(Op.DECLARE, encodeDeclareResult({ topicId: 1, partitionCount: 2, created: f.retention ? DeclareCreated.ALTERED : 0, retention }));
    };
    // A broker whose CONNECT answer named no extensions (a v0 broker): nothing is sent, the call fails locally.
    const old = clientOver(declareOk);
    expect(old.client.supportsRetention).toBe(false);
    const refused = await old.client.declare("orders", 2, { retention: { retentionMs: 1000 } }).catch((e) => e);
    expect(refused).toMatchObject({ name: "UNSUPPORTED_BY_BROKER", action: "give-up" });
    expect(await old.client.alterTopic("orders", { discard: "new" }).catch((e) => e.name)).toBe("UNSUPPORTED_BY_BROKER");
    expect(await old.client.declare("orders", 2)).toEqual({ topicId: 1, partitionCount: 2, created: 0 });
    expect(old.broker.received).toEqual([{ op: Op.DECLARE, topic: utf8Bytes("orders"), partitionCount: 2, flags: 0 }]); // the v0 frame, no tail

    const cur = clientOver(declareOk);
    (cur.client as unknown as { brokerFeatures: number }).brokerFeatures = ServerFeatures.RETENTION;
    const r = await cur.client.alterTopic("orders", { retentionMs: 7 * 86_400_000, discard: "new" });
    expect(r).toEqual({ topicId: 1, partitionCount: 2, created: DeclareCreated.ALTERED, retention: { retentionMs: 604_800_000, retentionBytes: 0, retentionMessages: 0, discard: "new" } });
    expect(cur.broker.received[0]).toMatchObject({
      op: Op.DECLARE, partitionCount: 0, flags: DeclareFlags.RETENTION,
      retention: { fields: RetentionFields.MS | RetentionFields.DISCARD, retentionMs: 604_800_000n, discard: Discard.NEW },
    });
    await expect(cur.client.declare("orders", 2, { retention: { retentionBytes: -1 } })).rejects.toThrow(RangeError);
  });

  it("does not retry PARTITION_FULL (a discard-new partition at its limit): the application decides", async () => {
    const { broker, client } = clientOver((f) => errFrame(ErrorCode.PARTITION_FULL, f.op, "full"));
    expect(await client.publish(1, 0, null, "x", { producerId: 3n, producerSeq: 1n }).catch((e) => [e.name, e.action])).toEqual(["PARTITION_FULL", "give-up"]);
    expect(broker.received.filter((f) => f.op === Op.PUB).length).toBe(1);
  });
});
