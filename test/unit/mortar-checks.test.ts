/**
 * Op-byte classification in the streaming decoder, and the stateless
 * request checks (limits + protocol decisions from docs/protocol.md).
 */
import { describe, expect, it } from "vitest";
import {
  DeclareFlags, Discard, ErrorCode, RetentionFields, FrameDecoder, MAX_KEY_LEN, MAX_TOPIC_LEN, MAX_VALUE_LEN, Op, SUB_PARTITION_ANY,
  checkClientFrame, classifyOp, dlqSourceName, parseGroupName, parseTopicName, utf8Bytes,
  type Frame, type PubFrame, type SubFrame,
} from "../../wire/mortar";

describe("op byte classes (spec §2)", () => {
  it("classifies the whole byte range", () => {
    const classes = Array.from({ length: 256 }, (_, op) => classifyOp(op));
    expect(classes.filter((c) => c === "known").length).toBe(15);
    expect([classifyOp(0x00), classifyOp(0xff)]).toEqual(["illegal", "illegal"]);
    expect([classifyOp(0x10), classifyOp(0x7f)]).toEqual(["reserved-business", "reserved-business"]);
    expect([classifyOp(0x80), classifyOp(0xfe)]).toEqual(["reserved-admin", "reserved-admin"]);
  });

  const cases: [number, number][] = [
    [0x00, ErrorCode.ILLEGAL_OP], [0xff, ErrorCode.ILLEGAL_OP],
    [0x10, ErrorCode.UNKNOWN_OP], [0x7f, ErrorCode.UNKNOWN_OP], [0x80, ErrorCode.UNKNOWN_OP], [0xfe, ErrorCode.UNKNOWN_OP],
  ];
  for (const [op, code] of cases) {
    it(`op 0x${op.toString(16)} is reported as soon as the op byte arrives`, () => {
      // Declares a 1000-byte frame but sends only the header and op byte.
      const out = new FrameDecoder().push(Uint8Array.from([0, 0, 0x03, 0xe8, op]));
      expect(out.frames).toEqual([]);
      expect(out.error?.code).toBe(code);
      expect(out.error?.requestOp).toBe(op);
    });
  }

  it("frames before an error are still delivered", () => {
    const out = new FrameDecoder().push(Uint8Array.from([0, 0, 0, 1, Op.PING, 0, 0, 0, 1, 0x00]));
    expect(out.frames).toEqual([{ op: Op.PING }]);
    expect(out.error?.code).toBe(ErrorCode.ILLEGAL_OP);
  });

  it("a payload that does not parse is MALFORMED_PAYLOAD with the op as request_op", () => {
    // PING with one payload byte.
    const out = new FrameDecoder().push(Uint8Array.from([0, 0, 0, 2, Op.PING, 0]));
    expect(out.error?.code).toBe(ErrorCode.MALFORMED_PAYLOAD);
    expect(out.error?.requestOp).toBe(Op.PING);
    // DECLARE whose topic_len (0x00ff) overruns a 7-byte payload.
    const d = new FrameDecoder().push(Uint8Array.from([0, 0, 0, 8, Op.DECLARE, 0, 0xff, 0x61, 0, 1, 0, 0]));
    expect(d.error?.code).toBe(ErrorCode.MALFORMED_PAYLOAD);
  });
});

const pub = (over: Partial<PubFrame> = {}): PubFrame => ({
  op: Op.PUB, topicId: 1, partition: 0, producerId: 0n, producerSeq: 0n, flags: 0,
  key: new Uint8Array(0), value: new Uint8Array(1), ...over,
});
const sub = (over: Partial<SubFrame> = {}): SubFrame => ({
  op: Op.SUB, group: utf8Bytes("g"), topicId: 1, partition: SUB_PARTITION_ANY, startPolicy: 0,
  creditCount: 0, creditBytes: 0, flags: 0, ...over,
});
const codeOf = (f: Frame) => checkClientFrame(f)?.name ?? null;

describe("checkClientFrame", () => {
  it("CONNECT: wire version 1 only; client_flags and reserved are ignored", () => {
    expect(codeOf({ op: Op.CONNECT, protocolVersion: 1, clientFlags: 0xffff, token: new Uint8Array(0), reserved: 7 })).toBeNull();
    expect(codeOf({ op: Op.CONNECT, protocolVersion: 2, clientFlags: 0, token: new Uint8Array(0), reserved: 0 })).toBe("UNSUPPORTED_WIRE_VERSION");
  });

  it("DECLARE: names, reserved .dlq suffix, flags, partition count", () => {
    const dec = (topic: string | Uint8Array, partitionCount = 1, flags = 0): Frame => ({
      op: Op.DECLARE, topic: typeof topic === "string" ? utf8Bytes(topic) : topic, partitionCount, flags,
    });
    expect(codeOf(dec("orders"))).toBeNull();
    expect(codeOf(dec(""))).toBe("INVALID_TOPIC_NAME");
    expect(codeOf(dec("x".repeat(MAX_TOPIC_LEN)))).toBeNull();
    expect(codeOf(dec("x".repeat(MAX_TOPIC_LEN + 1)))).toBe("INVALID_TOPIC_NAME");
    expect(codeOf(dec(Uint8Array.from([0x61, 0xff])))).toBe("INVALID_TOPIC_NAME");
    expect(checkClientFrame(dec(Uint8Array.from([0x61, 0xff])))?.message).toBe("topic name is not valid UTF-8 (2 bytes)");
    expect(checkClientFrame(dec(""))?.message).toBe("topic name must be 1..255 bytes of UTF-8 (got 0 bytes)");
    expect(codeOf(dec("orders.dlq"))).toBeNull(); // the registry returns the twin id or TOPIC_NAME_RESERVED
    expect(codeOf(dec("orders.dlq", 0, DeclareFlags.DELETE))).toBe("TOPIC_NAME_RESERVED");
    expect(codeOf(dec("orders", 1, 0x0004))).toBe("INVALID_FLAGS");
    expect(codeOf(dec("orders", 1, 0x8000))).toBe("INVALID_FLAGS");
    expect(codeOf(dec("orders", 0))).toBe("INVALID_PARTITION_COUNT");
    expect(codeOf(dec("orders", 0, DeclareFlags.DELETE))).toBeNull();
  });

  it("DECLARE with the RETENTION tail (extension): fields, discard, value range, no DELETE; count 0 alters", () => {
    const tail = { fields: RetentionFields.MS | RetentionFields.DISCARD, retentionMs: 60_000n, retentionBytes: 0n, retentionMessages: 0n, discard: Discard.NEW as number };
    const dec = (partitionCount: number, t: Partial<typeof tail> = {}, flags: number = DeclareFlags.RETENTION): Frame => ({
      op: Op.DECLARE, topic: utf8Bytes("orders"), partitionCount, flags, retention: { ...tail, ...t },
    });
    expect(codeOf(dec(4))).toBeNull();
    expect(codeOf(dec(0))).toBeNull(); // partition_count 0 = alter (or read) an existing topic
    expect(codeOf(dec(0, {}, DeclareFlags.RETENTION | DeclareFlags.DELETE))).toBe("INVALID_FLAGS");
    expect(codeOf(dec(1, { fields: 0x10 }))).toBe("INVALID_FLAGS");
    expect(codeOf(dec(1, { discard: 2 }))).toBe("INVALID_FLAGS");
    expect(codeOf(dec(1, { fields: RetentionFields.MS, discard: 2 }))).toBeNull(); // a value the request does not set is ignored
    expect(codeOf(dec(1, { retentionMs: BigInt(Number.MAX_SAFE_INTEGER) }))).toBeNull();
    expect(checkClientFrame(dec(1, { retentionMs: BigInt(Number.MAX_SAFE_INTEGER) + 1n }))?.message).toMatch(/retention_ms 9007199254740992 is above 2\^53/);
    expect(codeOf(dec(1, { fields: RetentionFields.BYTES, retentionBytes: 1n << 60n }))).toBe("INVALID_FLAGS");
    expect(codeOf(dec(1, { fields: 0, retentionBytes: 1n << 60n }))).toBeNull();
  });

  it("PUB: producer fields, key and value caps, reserved flags", () => {
    expect(codeOf(pub())).toBeNull();
    expect(codeOf(pub({ producerId: 0n, producerSeq: 1n }))).toBe("INVALID_PRODUCER_FIELDS");
    expect(codeOf(pub({ producerId: 5n, producerSeq: 0n }))).toBeNull();
    expect(codeOf(pub({ key: new Uint8Array(MAX_KEY_LEN) }))).toBeNull();
    expect(codeOf(pub({ key: new Uint8Array(MAX_KEY_LEN + 1) }))).toBe("KEY_TOO_LONG");
    expect(codeOf(pub({ value: new Uint8Array(MAX_VALUE_LEN + 1) }))).toBe("VALUE_TOO_LONG");
    expect(codeOf(pub({ flags: 1 }))).toBe("INVALID_FLAGS");
  });

  it("SUB: group name, partition selector, start policy, flags", () => {
    expect(codeOf(sub())).toBeNull();
    expect(codeOf(sub({ group: new Uint8Array(0) }))).toBe("INVALID_GROUP_NAME");
    expect(codeOf(sub({ partition: 0 }))).toBe("INVALID_PARTITION_SELECTOR");
    expect(codeOf(sub({ startPolicy: 1 }))).toBeNull();
    expect(codeOf(sub({ startPolicy: 2 }))).toBe("INVALID_START_POLICY");
    expect(codeOf(sub({ flags: 1 }))).toBeNull();
    expect(codeOf(sub({ flags: 2 }))).toBe("INVALID_FLAGS");
  });

  it("ACK/NACK: PROGRESS flag, NACK reasons", () => {
    const base = { subscriptionId: 1, topicId: 1, partition: 0, seq: 1n, deliveryId: 1n, ownershipEpoch: 1n };
    expect(codeOf({ op: Op.ACK, ...base, flags: 1 })).toBeNull();
    expect(codeOf({ op: Op.ACK, ...base, flags: 2 })).toBe("INVALID_FLAGS");
    expect(codeOf({ op: Op.NACK, ...base, reason: 0, flags: 0 })).toBeNull();
    expect(codeOf({ op: Op.NACK, ...base, reason: 1, flags: 0 })).toBeNull();
    expect(codeOf({ op: Op.NACK, ...base, reason: 2, flags: 0 })).toBe("UNSUPPORTED_NACK_REASON");
    expect(checkClientFrame({ op: Op.NACK, ...base, reason: 3, flags: 0 })?.message).toMatch(/SLOW/);
    expect(codeOf({ op: Op.NACK, ...base, reason: 0, flags: 1 })).toBe("INVALID_FLAGS");
  });

  it("HEARTBEAT state, CONTROL_ACK kind/result, CREDIT mode", () => {
    const hb = (state: number): Frame => ({ op: Op.HEARTBEAT, subscriptionId: 1, memberId: 1n, membershipEpoch: 1, assignmentEpoch: 1, state });
    expect([codeOf(hb(0)), codeOf(hb(1)), codeOf(hb(2))]).toEqual([null, null, "INVALID_FLAGS"]);
    const ca = (noticeKind: number, result: number): Frame => ({
      op: Op.CONTROL_ACK, noticeId: 1n, noticeKind, groupId: 1, membershipEpoch: 1, assignmentEpoch: 1, ownershipEpoch: 1n, result,
    });
    expect([codeOf(ca(1, 2)), codeOf(ca(2, 0)), codeOf(ca(0, 3))]).toEqual([null, "UNKNOWN_NOTICE", "INVALID_FLAGS"]);
    const cr = (mode: number): Frame => ({
      op: Op.CREDIT, subscriptionId: 1, membershipEpoch: 1, ownershipEpoch: 1n, mode, creditCount: 0, creditBytes: 0, reserved: 9,
    });
    expect([codeOf(cr(0)), codeOf(cr(1)), codeOf(cr(2))]).toEqual([null, null, "INVALID_FLAGS"]);
  });

  it("server-only ops from a client are UNKNOWN_OP; PING/ERR/OK pass", () => {
    expect(codeOf({ op: Op.PING })).toBeNull();
    expect(codeOf({ op: Op.OK, requestOp: 1, result: new Uint8Array(0) })).toBeNull();
    expect(codeOf({
      op: Op.NOTICE, noticeId: 1n, kind: 0, groupId: 1, membershipEpoch: 1, assignmentEpoch: 1, ownershipEpoch: 1n,
      topicId: 1, partition: 0, memberId: 1n,
    })).toBe("UNKNOWN_OP");
  });

  it("a MSG or NOTICE from a client whose payload does not decode is MALFORMED_PAYLOAD (the decoder rejects it first)", () => {
    for (const op of [Op.MSG, Op.NOTICE]) {
      const { frames, error } = new FrameDecoder().push(Uint8Array.from([0, 0, 0, 4, op, 1, 2, 3]));
      expect(frames).toEqual([]);
      expect(error?.name).toBe("MALFORMED_PAYLOAD");
    }
  });

  it("name parsers return strings for valid names", () => {
    expect(parseTopicName(utf8Bytes("métriques"))).toBe("métriques");
    expect(parseGroupName(utf8Bytes("workers"))).toBe("workers");
    expect(parseTopicName(Uint8Array.from([0xef, 0xbb, 0xbf, 0x61]))).toBe("\ufeffa"); // BOM kept, not stripped
    expect([dlqSourceName("orders.dlq"), dlqSourceName("orders"), dlqSourceName(".dlq")]).toEqual(["orders", null, ""]);
  });
});
