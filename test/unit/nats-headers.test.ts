import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeHeaderBlock, parseHeaderBlock, toMq9Headers } from "../../wire/nats/headers";
import { chunkBytes, encodeErr, encodeHmsg, encodeInfo, encodeMsg, OK, PING, PONG } from "../../wire/nats/encoder";

const te = new TextEncoder();
const td = new TextDecoder();

describe("NATS header blocks", () => {
  it("encodes the 503 status block byte-for-byte as nats-server sends it", () => {
    const b = encodeHeaderBlock({ status: 503, headers: [["Nats-Subject", "foo.bar"]] });
    expect(td.decode(b)).toBe("NATS/1.0 503\r\nNats-Subject: foo.bar\r\n\r\n");
    expect(b.length).toBe(32 + "foo.bar".length); // nats-server: hdrLen = 32 + len(subject)
  });

  it("round-trips headers, keeping case and repeats", () => {
    const block = { headers: [["mq9-key", "status"], ["X-A", "1"], ["X-A", "2"]] as [string, string][] };
    expect(parseHeaderBlock(encodeHeaderBlock(block))).toEqual(block);
  });

  it("parses status lines with and without description", () => {
    expect(parseHeaderBlock(te.encode("NATS/1.0 503\r\n\r\n"))).toEqual({ status: 503, headers: [] });
    expect(parseHeaderBlock(te.encode("NATS/1.0 408 Request Timeout\r\nA: b\r\n\r\n"))).toEqual({
      status: 408,
      description: "Request Timeout",
      headers: [["A", "b"]],
    });
  });

  it("trims values, accepts bare LF", () => {
    expect(parseHeaderBlock(te.encode("NATS/1.0\nmq9-ttl:   300  \nA:b\r\n\n"))).toEqual({ headers: [["mq9-ttl", "300"], ["A", "b"]] });
  });

  it("rejects blocks that do not start with NATS/1.0", () => {
    expect(parseHeaderBlock(te.encode("HTTP/1.1\r\n\r\n"))).toBeNull();
    expect(parseHeaderBlock(te.encode("NATS/1.01\r\n\r\n"))).toBeNull();
    expect(parseHeaderBlock(new Uint8Array(0))).toBeNull();
  });

  it.each([
    ["a line without a colon", "NATS/1.0\r\nmq9-ttl: 300\r\ngarbage\r\n\r\n"],
    ["a line without a name", "NATS/1.0\r\n : v\r\n\r\n"],
    ["a folded continuation line", "NATS/1.0\r\nA: b\r\n c\r\n\r\n"],
    ["no blank line at the end", "NATS/1.0\r\nmq9-ttl: 300\r\n"],
    ["the version line alone", "NATS/1.0\r\n"],
    ["no line end at all", "NATS/1.0"],
    ["bytes after the blank line", "NATS/1.0\r\nA: b\r\n\r\nC: d\r\n"],
    ["a blank line inside", "NATS/1.0\r\nA: b\r\n\r\nC: d\r\n\r\n"],
    ["a half line after the blank line", "NATS/1.0\r\n\r\nx"],
  ])("rejects a malformed block: %s", (_what, text) => {
    expect(parseHeaderBlock(te.encode(text))).toBeNull();
  });

  it("accepts every block the encoder writes", () => {
    const name = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/);
    const value = fc.stringMatching(/^[ -~]{0,20}$/).map((v) => v.trim());
    fc.assert(fc.property(fc.array(fc.tuple(name, value), { maxLength: 6 }), (headers) => {
      expect(parseHeaderBlock(encodeHeaderBlock({ headers }))).toEqual({ headers });
    }));
  });

  it("gives mq9 lower-cased names and joins repeats with ', '", () => {
    const m = toMq9Headers(parseHeaderBlock(te.encode("NATS/1.0\r\nMQ9-Priority: urgent\r\nmq9-tags: a\r\nMq9-Tags: b\r\n\r\n")));
    expect([...m]).toEqual([
      ["mq9-priority", "urgent"],
      ["mq9-tags", "a, b"],
    ]);
    expect(toMq9Headers(null).size).toBe(0);
  });
});

describe("NATS server encoder", () => {
  it("encodes MSG with and without reply", () => {
    expect(td.decode(encodeMsg("foo", "7", undefined, te.encode("hi")))).toBe("MSG foo 7 2\r\nhi\r\n");
    expect(td.decode(encodeMsg("foo", "7", "_INBOX.x", new Uint8Array(0)))).toBe("MSG foo 7 _INBOX.x 0\r\n\r\n");
  });

  it("encodes HMSG with header and total sizes", () => {
    const h = encodeHeaderBlock({ headers: [["a", "b"]] });
    expect(td.decode(encodeHmsg("foo", "1", "r", h, te.encode("xyz")))).toBe(
      `HMSG foo 1 r ${h.length} ${h.length + 3}\r\nNATS/1.0\r\na: b\r\n\r\nxyz\r\n`,
    );
  });

  it("encodes INFO, -ERR, +OK, PING, PONG", () => {
    const info = td.decode(encodeInfo({ server_id: "id", server_name: "n", version: "0.1.0", proto: 1, headers: true, max_payload: 1048576 }));
    expect(info).toMatch(/^INFO \{.*\}\r\n$/);
    expect(JSON.parse(info.slice(5))).toMatchObject({ proto: 1, headers: true, max_payload: 1048576 });
    expect(td.decode(encodeErr("Unknown Protocol Operation"))).toBe("-ERR 'Unknown Protocol Operation'\r\n");
    expect(td.decode(OK)).toBe("+OK\r\n");
    expect(td.decode(PING)).toBe("PING\r\n");
    expect(td.decode(PONG)).toBe("PONG\r\n");
  });
});

describe("chunkBytes (server output cut into WebSocket messages)", () => {
  const bytes = (n: number, v: number) => new Uint8Array(n).fill(v);
  it("joins small parts, cuts large ones, never exceeds the cap and keeps every byte in order", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 20 }), fc.integer({ min: 1, max: 32 }), (lens, max) => {
        const parts = lens.map((n, i) => bytes(n, i));
        const out = [...chunkBytes(parts, max)];
        expect(out.every((m) => m.length > 0 && m.length <= max)).toBe(true);
        expect(Buffer.concat(out)).toEqual(Buffer.concat(parts));
        const total = lens.reduce((a, b) => a + b, 0);
        expect(out.length).toBe(Math.ceil(total / max));
      }),
    );
  });

  it("hands a part that fits alone through without copying", () => {
    const p = bytes(10, 1);
    expect([...chunkBytes([p], 10)][0]).toBe(p);
  });
});
