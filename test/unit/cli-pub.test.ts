/** `mortarmq pub` and `sub` parts: partition routing, the pipelined publish loop, line input, summaries, message lines (client/cli/). */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../wire/mortar";
import { MortarClientError } from "../../client/sdk";
import { lineToMessage, linesAsMessages } from "../../client/cli/input";
import { PartitionRouter, fnv1a32, partitionForKey } from "../../client/cli/partition";
import { publishAll, type OutgoingMessage, type SendFn } from "../../client/cli/publisher";
import { summaryJson, summaryLine } from "../../client/cli/pub";
import { messageJson, messageLine } from "../../client/cli/sub";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

function msgs(n: number, key: (i: number) => string | null = () => null): OutgoingMessage[] {
  return Array.from({ length: n }, (_, i) => ({ line: i + 1, key: key(i) === null ? null : enc(key(i)!), value: enc(`v${i}`) }));
}

/** A broker stand-in: answers after a macrotask, numbers per partition, records what was sent. */
function fakeBroker(opts: { fail?: (seq: bigint, partition: number) => MortarClientError | null; dup?: (seq: bigint) => boolean } = {}) {
  const sent: { partition: number; key: string | null; value: string; seq: bigint }[] = [];
  const next = new Map<number, bigint>();
  let outstanding = 0;
  let maxOutstanding = 0;
  const send: SendFn = async (partition, key, value, seq) => {
    sent.push({ partition, key: dec(key), value: dec(value)!, seq });
    outstanding++;
    maxOutstanding = Math.max(maxOutstanding, outstanding);
    await new Promise((r) => setTimeout(r, 0));
    outstanding--;
    const err = opts.fail?.(seq, partition);
    if (err) throw err;
    const s = (next.get(partition) ?? 0n) + 1n;
    next.set(partition, s);
    return { sequence: s, deduplicated: opts.dup?.(seq) ?? false };
  };
  return { send, sent, maxOutstanding: () => maxOutstanding };
}

describe("partition routing", () => {
  it("FNV-1a 32 matches the reference vectors", () => {
    expect(fnv1a32(enc(""))).toBe(0x811c9dc5);
    expect(fnv1a32(enc("a"))).toBe(0xe40c292c);
    expect(fnv1a32(enc("foobar"))).toBe(0xbf9cf968);
  });

  it("round-robin from 0 without a key; the same key always lands on the same partition; a fixed partition wins", () => {
    const r = new PartitionRouter(3);
    expect([null, null, null, null].map((k) => r.route(k))).toEqual([0, 1, 2, 0]);
    const keyed = new PartitionRouter(7);
    const p = keyed.route(enc("customer-42"));
    expect(p).toBe(partitionForKey(enc("customer-42"), 7));
    expect(keyed.route(enc("customer-42"))).toBe(p);
    expect(new PartitionRouter(3).route(new Uint8Array(0))).toBe(0); // empty key = no key
    expect(new PartitionRouter(3, 2).route(enc("x"))).toBe(2);
  });

  it("keys spread over every partition", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(partitionForKey(enc(`key-${i}`), 8));
    expect(seen.size).toBe(8);
  });
});

describe("publishAll", () => {
  it("numbers an idempotent producer's messages per partition from 1 and keeps the window", async () => {
    const b = fakeBroker();
    const s = await publishAll(msgs(100), { router: new PartitionRouter(4), producerId: 7n, inFlight: 8, send: b.send });
    expect(s).toMatchObject({ published: 100, failed: 0, deduplicated: 0, bytes: msgs(100).reduce((n, m) => n + m.value.length, 0), stopped: null });
    expect(b.maxOutstanding()).toBe(8);
    for (let p = 0; p < 4; p++) {
      expect(b.sent.filter((x) => x.partition === p).map((x) => x.seq)).toEqual(Array.from({ length: 25 }, (_, i) => BigInt(i + 1)));
    }
    expect(s.partitions).toEqual([0, 1, 2, 3].map((p) => ({ partition: p, published: 25, firstSequence: 1n, lastSequence: 25n })));
  });

  it("also bounds the bytes outstanding, but always sends a message larger than the bound alone", async () => {
    const b = fakeBroker();
    const ten = (i: number): OutgoingMessage => ({ line: i, key: null, value: new Uint8Array(10) });
    const input = [ten(1), ten(2), ten(3), { line: 4, key: enc("kkkkk"), value: new Uint8Array(100) }, ten(5)];
    const s = await publishAll(input, { router: new PartitionRouter(1), producerId: 1n, inFlight: 100, maxInFlightBytes: 25, send: b.send });
    expect(s.published).toBe(5);
    expect(b.maxOutstanding()).toBe(2);
  });

  it("sends producer_seq 0 without a producer id", async () => {
    const b = fakeBroker();
    await publishAll(msgs(5), { router: new PartitionRouter(1), producerId: 0n, inFlight: 2, send: b.send });
    expect(b.sent.map((x) => x.seq)).toEqual([0n, 0n, 0n, 0n, 0n]);
  });

  it("counts failures with their input lines and duplicates, and keeps going", async () => {
    const b = fakeBroker({
      fail: (seq) => (seq % 10n === 0n ? new MortarClientError(ErrorCode.VALUE_TOO_LONG, "too long", Op.PUB, "broker") : null),
      dup: (seq) => seq <= 3n,
    });
    const s = await publishAll(msgs(30), { router: new PartitionRouter(1), producerId: 1n, inFlight: 4, send: b.send, maxErrors: 2 });
    expect(s.published).toBe(27);
    expect(s.failed).toBe(3);
    expect(s.deduplicated).toBe(3);
    expect(s.errors.map((e) => e.line)).toEqual([10, 20]);
    expect((s.errors[0]!.error as MortarClientError).name).toBe("VALUE_TOO_LONG");
  });

  it("stops reading when the connection is closed", async () => {
    const b = fakeBroker();
    let closed = false;
    const s = await publishAll(msgs(50), {
      router: new PartitionRouter(1), producerId: 1n, inFlight: 1, send: b.send,
      isClosed: () => closed, onProgress: (answered) => { if (answered === 5) closed = true; },
    });
    expect(s.published).toBe(5);
    expect(s.stopped).toBe("the connection closed");
  });

  it("an abort while waiting for input stops reading at once; what was sent is answered and counted", async () => {
    const b = fakeBroker();
    const ac = new AbortController();
    let closedInput = false;
    async function* stalled(): AsyncGenerator<OutgoingMessage> { // three lines, then a terminal that never types again
      try {
        yield* msgs(3);
        await new Promise(() => {});
      } finally {
        closedInput = true;
      }
    }
    const run = publishAll(stalled(), { router: new PartitionRouter(2), producerId: 1n, inFlight: 8, send: b.send, signal: ac.signal,
      onProgress: (answered) => { if (answered === 3) setTimeout(() => ac.abort("interrupted (SIGINT)"), 5); } });
    const s = await run;
    expect(s).toMatchObject({ published: 3, failed: 0, unanswered: 0, stopped: "interrupted (SIGINT)" });
    expect(b.sent).toHaveLength(3);
    expect(closedInput).toBe(false); // its pending read is not awaited (the caller destroys the stream)
  });

  it("an abort while the window is full sends nothing more and waits for the answers outstanding", async () => {
    const b = fakeBroker();
    const ac = new AbortController();
    let sent = 0;
    const s = await publishAll(msgs(1000), { router: new PartitionRouter(1), producerId: 1n, inFlight: 16, signal: ac.signal,
      send: (...a) => { if (++sent === 40) ac.abort("interrupted (SIGINT)"); return b.send(...a); } });
    expect(b.sent).toHaveLength(40);
    expect(s).toMatchObject({ published: 40, unanswered: 0, stopped: "interrupted (SIGINT)" });
    expect(s.partitions[0]).toEqual({ partition: 0, published: 40, firstSequence: 1n, lastSequence: 40n });
  });

  it("after an abort the wait for answers is bounded: what is still outstanding after drainMs is counted unanswered", async () => {
    const ac = new AbortController();
    let n = 0;
    const never: SendFn = () => (++n <= 2 ? Promise.resolve({ sequence: BigInt(n), deduplicated: false }) : new Promise(() => {}));
    const s = await publishAll(msgs(10), { router: new PartitionRouter(1), producerId: 1n, inFlight: 5, signal: ac.signal, drainMs: 30,
      send: (...a) => { const p = never(...a); if (n === 5) ac.abort(); return p; } });
    expect(s).toMatchObject({ published: 2, failed: 0, unanswered: 3, stopped: "interrupted" });
  });

  it("reports progress after every answer", async () => {
    const seen: number[] = [];
    await publishAll(msgs(3), { router: new PartitionRouter(1), producerId: 0n, inFlight: 1, send: fakeBroker().send, onProgress: (a) => seen.push(a) });
    expect(seen).toEqual([1, 2, 3]);
  });
});

describe("line input", () => {
  it("every line (LF or CRLF, empty ones too, a last one without newline) is one message", async () => {
    const out: OutgoingMessage[] = [];
    for await (const m of linesAsMessages(Readable.from(["a\r\nb\n", "\nc"]), {})) out.push(m);
    expect(out.map((m) => [m.line, dec(m.value), m.key])).toEqual([[1, "a", null], [2, "b", null], [3, "", null], [4, "c", null]]);
  });

  it("splits KEY<sep>VALUE at the first separator; --key applies to lines without one", () => {
    const o = { key: "dflt", keySeparator: "\t" };
    expect(dec(lineToMessage("k1\tv\t1", 1, o).key)).toBe("k1");
    expect(dec(lineToMessage("k1\tv\t1", 1, o).value)).toBe("v\t1");
    expect(dec(lineToMessage("plain", 2, o).key)).toBe("dflt");
    expect(lineToMessage("plain", 2, {}).key).toBeNull();
  });
});

describe("summaries", () => {
  const topic = { name: "orders", topicId: 3, partitionCount: 2 };
  const base = { published: 1000, deduplicated: 0, failed: 0, bytes: 2048, elapsedMs: 500, errors: [], stopped: null, unanswered: 0 };

  it("one line for a run and for a single message", () => {
    const parts = [{ partition: 0, published: 1000, firstSequence: 1n, lastSequence: 1000n }];
    expect(summaryLine(topic, { ...base, partitions: parts }))
      .toBe("published 1000 of 1000 messages to orders in 500 ms (2000 msg/s, 2.0 KiB): 0 failed, 0 deduplicated");
    const one = { ...base, published: 1, partitions: [{ partition: 1, published: 1, firstSequence: 17n, lastSequence: 17n }] };
    expect(summaryLine(topic, one)).toBe("published to orders partition 1 at sequence 17");
    expect(summaryLine(topic, { ...one, deduplicated: 1 })).toBe("duplicate: already published to orders partition 1 at sequence 17");
  });

  it("a stopped run says why, and how many publishes have an unknown outcome", () => {
    const parts = [{ partition: 0, published: 1000, firstSequence: 1n, lastSequence: 1000n }];
    expect(summaryLine(topic, { ...base, partitions: parts, stopped: "interrupted (SIGINT)" }))
      .toBe("published 1000 of 1000 messages to orders in 500 ms (2000 msg/s, 2.0 KiB): 0 failed, 0 deduplicated; stopped early: interrupted (SIGINT)");
    expect(summaryLine(topic, { ...base, partitions: parts, stopped: "interrupted (SIGINT)", unanswered: 7 }))
      .toBe("published 1000 of 1007 messages to orders in 500 ms (2000 msg/s, 2.0 KiB): 0 failed, 0 deduplicated; "
        + "stopped early: interrupted (SIGINT); 7 unanswered (appended or not: unknown)");
    expect(summaryJson(topic, 1n, { ...base, partitions: parts, stopped: "interrupted (SIGINT)", unanswered: 7 }, []))
      .toMatchObject({ published: 1000, unanswered: 7, stopped: "interrupted (SIGINT)" });
  });

  it("the JSON summary carries counts, per-partition sequences as strings and the producer id", () => {
    const j = summaryJson(topic, 66n, { ...base, partitions: [{ partition: 0, published: 1000, firstSequence: 1n, lastSequence: 1000n }] }, []);
    expect(j).toEqual({
      topic: "orders", topic_id: 3, producer_id: "66", published: 1000, deduplicated: 0, failed: 0, bytes: 2048,
      elapsed_ms: 500, rate_per_s: 2000, partitions: [{ partition: 0, published: 1000, first_sequence: "1", last_sequence: "1000" }],
      errors: [], stopped: null, unanswered: 0,
    });
    expect(summaryJson(topic, 0n, { ...base, partitions: [] }, []).producer_id).toBeNull();
  });
});

describe("sub output", () => {
  const m = {
    partition: 2, sequence: 17n, attempt: 1, producerId: 66n, producerSeq: 3n,
    key: enc("customer-42"), value: enc("hello\nworld"),
  };

  it("a human line is partition:sequence, key, value (newlines escaped, binary as base64)", () => {
    expect(messageLine(m)).toBe("2:17  customer-42  hello\\nworld");
    expect(messageLine({ ...m, key: new Uint8Array(0), value: new Uint8Array([0, 1, 255]) })).toBe("2:17  -  base64:AAH/");
  });

  it("a --json line carries every field, u64s as strings", () => {
    expect(messageJson("orders", m)).toEqual({
      topic: "orders", partition: 2, sequence: "17", attempt: 1, key: "customer-42", value: "hello\nworld",
      value_encoding: "utf8", producer_id: "66", producer_seq: "3",
    });
    expect(messageJson("orders", { ...m, key: new Uint8Array(0), value: new Uint8Array([0xff]) }))
      .toMatchObject({ key: null, value: "/w==", value_encoding: "base64" });
  });
});
