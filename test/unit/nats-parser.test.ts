import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NatsProtocolError } from "../../wire/nats/errors";
import { NatsParser, parseSize, type ClientOp, type ParseResult } from "../../wire/nats/parser";

const te = new TextEncoder();

/** Feeds `pieces` one after another; returns all ops and the first error. */
function feed(parser: NatsParser, pieces: (string | Uint8Array)[]): ParseResult {
  const ops: ClientOp[] = [];
  for (const p of pieces) {
    const r = parser.push(typeof p === "string" ? te.encode(p) : p);
    ops.push(...r.ops);
    if (r.error) return { ops, error: r.error };
  }
  return { ops };
}

function parse(...pieces: (string | Uint8Array)[]): ParseResult {
  return feed(new NatsParser({ maxPayload: 1024 }), pieces);
}

/** Normalizes ops for comparison (payload views → plain arrays). */
function norm(ops: ClientOp[]): unknown[] {
  return ops.map((o) => {
    if (o.op === "PUB") return { ...o, payload: [...o.payload] };
    if (o.op === "HPUB") return { ...o, header: [...o.header], payload: [...o.payload] };
    return o;
  });
}

/** Client-side encoding of one op (what a NATS client sends). */
function encodeClient(op: ClientOp): Uint8Array {
  const cat = (a: Uint8Array, b: Uint8Array) => {
    const out = new Uint8Array(a.length + b.length);
    out.set(a);
    out.set(b, a.length);
    return out;
  };
  const r = (reply?: string) => (reply ? ` ${reply}` : "");
  switch (op.op) {
    case "CONNECT":
      return te.encode(`CONNECT ${op.json}\r\n`);
    case "PING":
    case "PONG":
      return te.encode(`${op.op}\r\n`);
    case "SUB":
      return te.encode(`SUB ${op.subject}${op.queue ? ` ${op.queue}` : ""} ${op.sid}\r\n`);
    case "UNSUB":
      return te.encode(`UNSUB ${op.sid}${op.max !== undefined ? ` ${op.max}` : ""}\r\n`);
    case "PUB":
      return cat(cat(te.encode(`PUB ${op.subject}${r(op.reply)} ${op.payload.length}\r\n`), op.payload), te.encode("\r\n"));
    case "HPUB": {
      const total = op.header.length + op.payload.length;
      const head = te.encode(`HPUB ${op.subject}${r(op.reply)} ${op.header.length} ${total}\r\n`);
      return cat(cat(cat(head, op.header), op.payload), te.encode("\r\n"));
    }
  }
}

describe("NatsParser: operations", () => {
  it("parses every client operation, case-insensitively, with tabs as separators", () => {
    const r = parse(
      'CONNECT {"verbose":false}\r\n',
      "ping\r\nPoNg\r\n",
      "sub foo 1\r\nSUB\tbar\tq\t2\r\n",
      "unsub 1\r\nUNSUB 2 5\r\n",
      "pub foo 5\r\nhello\r\n",
      "PUB foo _INBOX.x 0\r\n\r\n",
      "hpub foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
    );
    expect(r.error).toBeUndefined();
    expect(norm(r.ops)).toEqual([
      { op: "CONNECT", json: '{"verbose":false}' },
      { op: "PING" },
      { op: "PONG" },
      { op: "SUB", subject: "foo", sid: "1" },
      { op: "SUB", subject: "bar", queue: "q", sid: "2" },
      { op: "UNSUB", sid: "1" },
      { op: "UNSUB", sid: "2", max: 5 },
      { op: "PUB", subject: "foo", reply: undefined, payload: [...te.encode("hello")] },
      { op: "PUB", subject: "foo", reply: "_INBOX.x", payload: [] },
      { op: "HPUB", subject: "foo", reply: "r", header: [...te.encode("NATS/1.0\r\n\r\n")], payload: [...te.encode("hi")] },
    ]);
  });

  it("accepts a bare LF line ending and CONNECT without a space", () => {
    expect(norm(parse("PING\nCONNECT{}\nPUB a 1\nx\r\n").ops)).toEqual([
      { op: "PING" },
      { op: "CONNECT", json: "{}" },
      { op: "PUB", subject: "a", reply: undefined, payload: [120] },
    ]);
  });

  it("reassembles a control line split at every position", () => {
    const line = "PUB $mq9.AI.MSG.SEND.task.001 _INBOX.abc.1 3\r\nabc\r\n";
    for (let i = 1; i < line.length; i++) {
      const r = parse(line.slice(0, i), line.slice(i));
      expect(r.error).toBeUndefined();
      expect(norm(r.ops)).toEqual([
        { op: "PUB", subject: "$mq9.AI.MSG.SEND.task.001", reply: "_INBOX.abc.1", payload: [...te.encode("abc")] },
      ]);
    }
  });

  it("reassembles a payload split across many WebSocket messages, byte by byte", () => {
    const payload = "0123456789".repeat(50);
    const stream = `PUB foo ${payload.length}\r\n${payload}\r\nPING\r\n`;
    const r = parse(...stream.split(""));
    expect(r.error).toBeUndefined();
    expect(norm(r.ops)).toEqual([{ op: "PUB", subject: "foo", reply: undefined, payload: [...te.encode(payload)] }, { op: "PING" }]);
  });

  it("splits HPUB into header block and payload by #hdr", () => {
    const hdr = "NATS/1.0\r\nmq9-priority: urgent\r\n\r\n";
    const r = parse(`HPUB s ${hdr.length} ${hdr.length + 4}\r\n${hdr}body\r\n`);
    const op = r.ops[0] as Extract<ClientOp, { op: "HPUB" }>;
    expect(new TextDecoder().decode(op.header)).toBe(hdr);
    expect(new TextDecoder().decode(op.payload)).toBe("body");
    // headers only (#hdr = #total)
    const r2 = parse(`HPUB s 12 12\r\nNATS/1.0\r\n\r\n\r\n`);
    expect((r2.ops[0] as Extract<ClientOp, { op: "HPUB" }>).payload.length).toBe(0);
  });

  it("reports partial state while an operation is buffered", () => {
    const p = new NatsParser();
    expect(p.partial).toBe(false);
    p.push(te.encode("PUB foo 3\r\nab"));
    expect(p.partial).toBe(true);
    expect(p.bufferedBytes).toBe(2);
    p.push(te.encode("c\r\n"));
    expect(p.partial).toBe(false);
    p.push(te.encode("PIN"));
    expect(p.partial).toBe(true);
    expect(p.bufferedBytes).toBe(3);
  });
});

describe("NatsParser: limits and errors (nats-server texts)", () => {
  const err = (...pieces: string[]) => {
    const r = parse(...pieces);
    expect(r.error).toBeInstanceOf(NatsProtocolError);
    expect(r.error!.fatal).toBe(true);
    return r.error!.text;
  };

  it("control line: 4096 bytes ok, 4097 fatal, also when split and before the LF arrives", () => {
    const ok = `SUB ${"a".repeat(4096 - 6)} 1`;
    expect(ok.length).toBe(4096);
    expect(parse(`${ok}\r\n`).error).toBeUndefined();
    expect(err(`SUB ${"a".repeat(4096 - 5)} 1\r\n`)).toBe("Maximum Control Line Exceeded");
    expect(err(`SUB ${"a".repeat(3000)}`, "a".repeat(2000))).toBe("Maximum Control Line Exceeded");
    // the partial line already too long: error without waiting for LF
    const p = new NatsParser();
    expect(p.push(te.encode("x".repeat(4098))).error?.text).toBe("Maximum Control Line Exceeded");
  });

  it("payload above max_payload is fatal; equal is fine", () => {
    expect(parse(`PUB a 1024\r\n${"x".repeat(1024)}\r\n`).error).toBeUndefined();
    expect(err("PUB a 1025\r\n")).toBe("Maximum Payload Violation");
    expect(err("HPUB a 12 1025\r\n")).toBe("Maximum Payload Violation");
  });

  it("unknown operations", () => {
    expect(err("FOO bar\r\n")).toBe("Unknown Protocol Operation");
    expect(err("\r\n")).toBe("Unknown Protocol Operation");
    expect(err(" PING\r\n")).toBe("Unknown Protocol Operation");
    expect(err("PUB\r\n")).toBe("Unknown Protocol Operation");
    expect(err("MSG foo 1 0\r\n")).toBe("Unknown Protocol Operation");
    expect(err("PUB a 3\r\nabcX\r\n")).toBe("Unknown Protocol Operation"); // no CRLF after payload
  });

  it("malformed arguments give nats-server's parser error texts", () => {
    expect(err("PUB foo\r\n")).toBe('processPub Parse Error: "foo"');
    expect(err("PUB a b c d\r\n")).toBe('processPub Parse Error: "a b c d"');
    expect(err("PUB foo x\r\n")).toBe('processPub Bad or Missing Size: "foo x"');
    expect(err("PUB foo -1\r\n")).toBe('processPub Bad or Missing Size: "foo -1"');
    expect(err("PUB foo 1234567890\r\n")).toBe('processPub Bad or Missing Size: "foo 1234567890"');
    expect(err("HPUB foo 1\r\n")).toBe('processHeaderPub Parse Error: "foo 1"');
    expect(err("HPUB foo x 10\r\n")).toBe('processHeaderPub Bad or Missing Header Size: "foo x 10"');
    expect(err("HPUB foo 10 y\r\n")).toBe('processHeaderPub Bad or Missing Total Size: "foo 10 y"');
    expect(err("HPUB foo 10 5\r\n")).toBe('processHeaderPub Header Size larger then TotalSize: "foo 10 5"');
    expect(err("SUB foo\r\n")).toBe('processSub Parse Error: "foo"');
    expect(err("SUB a b c d\r\n")).toBe('processSub Parse Error: "a b c d"');
    expect(err("UNSUB\t\r\n")).toBe('processUnsub Parse Error: ""');
    expect(err("UNSUB 1 2 3\r\n")).toBe('processUnsub Parse Error: "1 2 3"');
  });

  it("UNSUB with a malformed max unsubscribes now (max 0), as nats-server does", () => {
    expect(parse("UNSUB 1 x\r\n").ops).toEqual([{ op: "UNSUB", sid: "1", max: 0 }]);
  });

  it("returns ops parsed before the error, then stays failed", () => {
    const p = new NatsParser();
    const r = p.push(te.encode("PING\r\nBOGUS\r\nPING\r\n"));
    expect(r.ops).toEqual([{ op: "PING" }]);
    expect(r.error?.text).toBe("Unknown Protocol Operation");
    expect(p.push(te.encode("PING\r\n"))).toEqual({ ops: [], error: r.error });
    expect(p.failed).toBe(r.error);
  });
});

describe("NatsParser: properties", () => {
  const token = fc.stringMatching(/^[A-Za-z0-9_$-]{1,8}$/);
  const subject = fc.array(token, { minLength: 1, maxLength: 4 }).map((t) => t.join("."));
  const bytes = fc.uint8Array({ maxLength: 64 });
  const op: fc.Arbitrary<ClientOp> = fc.oneof(
    fc.constant<ClientOp>({ op: "PING" }),
    fc.constant<ClientOp>({ op: "PONG" }),
    fc.record({ verbose: fc.boolean(), name: token }).map((o) => ({ op: "CONNECT" as const, json: JSON.stringify(o) })),
    fc.record({ subject, sid: token, queue: fc.option(token, { nil: undefined }) }).map(({ subject, sid, queue }) =>
      queue === undefined ? { op: "SUB" as const, subject, sid } : { op: "SUB" as const, subject, queue, sid },
    ),
    fc.record({ sid: token, max: fc.option(fc.nat(1000), { nil: undefined }) }).map(({ sid, max }) =>
      max === undefined ? { op: "UNSUB" as const, sid } : { op: "UNSUB" as const, sid, max },
    ),
    fc.record({ subject, reply: fc.option(subject, { nil: undefined }), payload: bytes }).map((o) => ({ op: "PUB" as const, ...o })),
    fc
      .record({ subject, reply: fc.option(subject, { nil: undefined }), header: bytes, payload: bytes })
      .map((o) => ({ op: "HPUB" as const, ...o })),
  );

  it("any split of a valid stream parses to the same operations", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 10 }), (ops, cuts) => {
        const parts = ops.map(encodeClient);
        const stream = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let o = 0;
        for (const p of parts) {
          stream.set(p, o);
          o += p.length;
        }
        const points = [...new Set(cuts.map((c) => (stream.length ? c % stream.length : 0)))].sort((a, b) => a - b);
        const pieces: Uint8Array[] = [];
        let prev = 0;
        for (const c of points) {
          pieces.push(stream.slice(prev, c));
          prev = c;
        }
        pieces.push(stream.slice(prev));
        const whole = feed(new NatsParser(), [stream]);
        const split = feed(new NatsParser(), pieces);
        expect(whole.error).toBeUndefined();
        expect(split.error).toBeUndefined();
        expect(norm(split.ops)).toEqual(norm(whole.ops));
        expect(norm(whole.ops)).toEqual(norm(ops));
      }),
      { numRuns: 300 },
    );
  });

  it("random bytes never throw; failures are typed protocol errors", () => {
    const noisy = fc.array(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }),
        fc.constantFrom(...["PUB a 3\r\n", "HPUB a 2 3\r\n", "\r\n", "SUB a 1\r\n", "PING\r\n", "UNSUB 1 x\r\n"].map((s) => te.encode(s))),
      ),
      { maxLength: 20 },
    );
    fc.assert(
      fc.property(noisy, (pieces) => {
        const p = new NatsParser({ maxPayload: 64, maxControlLine: 128 });
        for (const piece of pieces) {
          const r = p.push(piece);
          if (r.error) {
            expect(r.error).toBeInstanceOf(NatsProtocolError);
            expect(r.error.fatal).toBe(true);
            expect(r.error.text.length).toBeGreaterThan(0);
          }
          expect(p.bufferedBytes).toBeLessThanOrEqual(129 + 66);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("NatsParser control lines: separators, case, sizes", () => {
  const parse = (text: string) => new NatsParser().push(new TextEncoder().encode(text));
  it("any run of spaces and tabs separates arguments; names in any case", () => {
    const r = parse("pub\t \ta.b  \t_INBOX.1\t 3\r\nabc\r\nPuB x 0\r\n\r\nsub\tq  g\t9\r\nUnSub 9  \t2\r\n");
    expect(r.error).toBeUndefined();
    expect(r.ops.map((o) => ({ ...o, ...("payload" in o ? { payload: new TextDecoder().decode(o.payload) } : {}) }))).toEqual([
      { op: "PUB", subject: "a.b", reply: "_INBOX.1", payload: "abc" },
      { op: "PUB", subject: "x", reply: undefined, payload: "" },
      { op: "SUB", subject: "q", queue: "g", sid: "9" },
      { op: "UNSUB", sid: "9", max: 2 },
    ]);
  });

  it.each([
    ["0", 0], ["000000007", 7], ["123456789", 123456789], ["", -1], ["1234567890", -1], ["12a", -1], ["-1", -1], [" 1", -1], ["１", -1],
  ])("parseSize(%j) = %d", (s, n) => {
    expect(parseSize(s)).toBe(n);
  });

  it("a bad size and a missing argument are the nats-server errors, quoting the arguments", () => {
    expect(parse("PUB a  x\r\n").error?.text).toBe('processPub Bad or Missing Size: "a  x"');
    expect(parse("PUB \t\r\n").error?.text).toBe('processPub Parse Error: ""');
    expect(parse("PUBX a 1\r\n").error?.text).toBe("Unknown Protocol Operation");
  });
});
