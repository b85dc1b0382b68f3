/**
 * Golden vectors for MortarMQ v0 (spec §1–§2): hand-written hex for one valid
 * frame of each of the 15 ops, checked both ways, the OK result layouts, and
 * the spec's golden framing cases (length=0, length=MAX+1, half frame, a frame
 * exactly MAX_FRAME_LEN long).
 */
import { describe, expect, it } from "vitest";
import {
  ConnectClientFlags, DeclareCreated, DeclareFlags, Discard, ErrorCode, FrameDecoder, MAX_FRAME_LEN, MAX_OK_RESULT_LEN, MortarError, Op,
  RetentionFields, ServerFeatures,
  decodeConnectFeatures, decodeCreditResult, decodeDeclareResult, decodeFrameBytes, decodePubResult, decodeSubResult,
  encodeConnectFeatures, encodeCreditResult, encodeDeclareResult, encodeFrame, encodePubResult, encodeSubResult,
  type Frame,
} from "../../wire/mortar";

const hex = (s: string) => Uint8Array.from((s.replace(/\s+/g, "").match(/../g) ?? []).map((b) => parseInt(b, 16)));
const toHex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const ascii = (s: string) => new TextEncoder().encode(s);
const M = 0x0102030405060708n;

/** [name, frame, hex] — hex written by hand from the spec §2 field order. */
const GOLDEN: [string, Frame, string][] = [
  ["CONNECT", { op: Op.CONNECT, protocolVersion: 1, clientFlags: 0, token: ascii("tok"), reserved: 0 },
    "0000000d 01 | 01 0000 0003 746f6b 00000000"],
  ["DECLARE", { op: Op.DECLARE, topic: ascii("orders"), partitionCount: 4, flags: 0 },
    "0000000d 02 | 0006 6f7264657273 0004 0000"],
  ["PUB", { op: Op.PUB, topicId: 1, partition: 2, producerId: 7n, producerSeq: 42n, flags: 0, key: ascii("k"), value: ascii("hi") },
    "00000020 03 | 0001 0002 0000000000000007 000000000000002a 0000 0001 6b 00000002 6869"],
  ["SUB", { op: Op.SUB, group: ascii("g1"), topicId: 1, partition: 0xffff, startPolicy: 0, creditCount: 256, creditBytes: 2097152, flags: 1 },
    "00000012 04 | 0002 6731 0001 ffff 00 0100 00200000 0001"],
  ["ACK", { op: Op.ACK, subscriptionId: 3, topicId: 1, partition: 0, seq: 5n, deliveryId: 9n, ownershipEpoch: 2n, flags: 1 },
    "00000021 05 | 0003 0001 0000 0000000000000005 0000000000000009 0000000000000002 0001"],
  ["NACK", { op: Op.NACK, subscriptionId: 3, topicId: 1, partition: 0, seq: 5n, deliveryId: 9n, ownershipEpoch: 2n, reason: 1, flags: 0 },
    "00000022 06 | 0003 0001 0000 0000000000000005 0000000000000009 0000000000000002 01 0000"],
  ["PING", { op: Op.PING }, "00000001 07"],
  ["ERR", { op: Op.ERR, code: 0x0008, requestOp: 4, message: ascii("no") },
    "00000008 08 | 0008 04 0002 6e6f"],
  ["OK", { op: Op.OK, requestOp: 2, result: hex("0001 0004 00") },
    "0000000b 09 | 02 00000005 0001000400"],
  ["MSG", {
    op: Op.MSG, subscriptionId: 3, topicId: 1, partition: 2, sequence: 10n, deliveryId: 11n, attempt: 1,
    ownershipEpoch: 2n, producerId: 0xfedcba9876543210n, producerSeq: 42n, flags: 0, key: new Uint8Array(0), value: ascii("x"),
  }, "0000003a 0a | 0003 0001 0002 000000000000000a 000000000000000b 0001 0000000000000002 fedcba9876543210 000000000000002a 0000 0000 00000001 78"],
  ["PULL", {
    op: Op.PULL, subscriptionId: 3, memberId: M, membershipEpoch: 1, assignmentEpoch: 2, ownershipEpochs: [5n, 6n],
    maxMsgs: 10, maxBytes: 65536, waitMs: 500, minBytes: 1,
  }, "00000031 0b | 0003 0102030405060708 00000001 00000002 0002 0000000000000005 0000000000000006 000a 00010000 01f4 00000001"],
  ["HEARTBEAT", { op: Op.HEARTBEAT, subscriptionId: 3, memberId: M, membershipEpoch: 1, assignmentEpoch: 2, state: 1 },
    "00000014 0c | 0003 0102030405060708 00000001 00000002 01"],
  ["NOTICE", {
    op: Op.NOTICE, noticeId: 100n, kind: 0, groupId: 3, membershipEpoch: 1, assignmentEpoch: 2, ownershipEpoch: 7n,
    topicId: 1, partition: 2, memberId: M,
  }, "00000028 0d | 0000000000000064 00 0003 00000001 00000002 0000000000000007 0001 0002 0102030405060708"],
  ["CONTROL_ACK", {
    op: Op.CONTROL_ACK, noticeId: 100n, noticeKind: 0, groupId: 3, membershipEpoch: 1, assignmentEpoch: 2, ownershipEpoch: 7n, result: 0,
  }, "0000001d 0e | 0000000000000064 00 0003 00000001 00000002 0000000000000007 00"],
  ["CREDIT", {
    op: Op.CREDIT, subscriptionId: 3, membershipEpoch: 1, ownershipEpoch: 2n, mode: 1, creditCount: 16, creditBytes: 1048576, reserved: 0,
  }, "0000001a 0f | 0003 00000001 0000000000000002 01 0010 00100000 00000000"],
];

describe("golden frames (spec §2)", () => {
  it("covers all 15 ops", () => {
    expect(new Set(GOLDEN.map(([, f]) => f.op)).size).toBe(15);
  });
  for (const [name, frame, h] of GOLDEN) {
    const bytes = hex(h.replace("|", ""));
    it(`${name}: encode → hex`, () => {
      expect(toHex(encodeFrame(frame))).toBe(toHex(bytes));
    });
    it(`${name}: hex → decode`, () => {
      expect(decodeFrameBytes(bytes)).toEqual(frame);
      const out = new FrameDecoder().push(bytes);
      expect(out.error).toBeNull();
      expect(out.frames).toEqual([frame]);
    });
  }
});

describe("golden OK results (spec §2)", () => {
  it("DECLARE: topic_id, partition_count, created", () => {
    const r = { topicId: 1, partitionCount: 4, created: 0 };
    expect(toHex(encodeDeclareResult(r))).toBe("0001000400");
    expect(decodeDeclareResult(hex("0001000400"))).toEqual(r);
  });
  it("PUB: sequence, durability, leader_epoch, commit_seq, result_flags", () => {
    const h = "0000000000000001 01 0000000000000003 0000000000000001 01".replace(/ /g, "");
    const r = { sequence: 1n, durability: 1, leaderEpoch: 3n, commitSeq: 1n, resultFlags: 1 };
    expect(toHex(encodePubResult(r))).toBe(h);
    expect(decodePubResult(hex(h))).toEqual(r);
  });
  it("SUB: subscription_id, member_id, membership_epoch, assignment_epoch", () => {
    const h = "0003 0102030405060708 00000001 00000002".replace(/ /g, "");
    const r = { subscriptionId: 3, memberId: M, membershipEpoch: 1, assignmentEpoch: 2 };
    expect(toHex(encodeSubResult(r))).toBe(h);
    expect(decodeSubResult(hex(h))).toEqual(r);
  });
  it("CREDIT: granted_count/bytes, outstanding_count/bytes, credit_epoch", () => {
    const h = "0100 00200000 0001 00000064 0000000000000009".replace(/ /g, "");
    const r = { grantedCount: 256, grantedBytes: 2097152, outstandingCount: 1, outstandingBytes: 100, creditEpoch: 9n };
    expect(toHex(encodeCreditResult(r))).toBe(h);
    expect(decodeCreditResult(hex(h))).toEqual(r);
  });
  it("a result of the wrong size is MALFORMED_PAYLOAD", () => {
    expect(() => decodePubResult(hex("00"))).toThrow(MortarError);
    try {
      decodeSubResult(hex("0003"));
    } catch (e) {
      expect((e as MortarError).code).toBe(ErrorCode.MALFORMED_PAYLOAD);
    }
  });
});

/**
 * Extension frames (docs/protocol.md "Extensions"): the DECLARE retention tail announced by
 * flags bit1 RETENTION, its OK tail, and CONNECT client_flags bit0 FEATURES with its OK result.
 * A v0 peer without the bits sends and receives exactly the frames above.
 */
const EXTENSION: [string, Frame, string][] = [
  ["DECLARE create with retention (all four fields)", {
    op: Op.DECLARE, topic: ascii("orders"), partitionCount: 4, flags: DeclareFlags.RETENTION,
    retention: { fields: 0x0f, retentionMs: 604_800_000n, retentionBytes: 1n << 30n, retentionMessages: 1_000_000n, discard: Discard.NEW },
  }, "00000027 02 | 0006 6f7264657273 0004 0002 | 0f 00000000240c8400 0000000040000000 00000000000f4240 01"],
  ["DECLARE alter (partition_count 0, retention_ms only)", {
    op: Op.DECLARE, topic: ascii("orders"), partitionCount: 0, flags: DeclareFlags.RETENTION,
    retention: { fields: RetentionFields.MS, retentionMs: 3_600_000n, retentionBytes: 0n, retentionMessages: 0n, discard: 0 },
  }, "00000027 02 | 0006 6f7264657273 0000 0002 | 01 000000000036ee80 0000000000000000 0000000000000000 00"],
  ["CONNECT asking for the broker's features", { op: Op.CONNECT, protocolVersion: 1, clientFlags: ConnectClientFlags.FEATURES, token: ascii("tok"), reserved: 0 },
    "0000000d 01 | 01 0001 0003 746f6b 00000000"],
];

describe("golden extension frames", () => {
  for (const [name, frame, h] of EXTENSION) {
    const bytes = hex(h.replace(/\|/g, ""));
    it(`${name}: encode → hex → decode`, () => {
      expect(toHex(encodeFrame(frame))).toBe(toHex(bytes));
      expect(decodeFrameBytes(bytes)).toEqual(frame);
    });
  }
  it("DECLARE OK with the retention tail: the settings in force (created 2 = ALTERED)", () => {
    const h = "0001 0004 02 000000000036ee80 0000000040000000 0000000000000000 01".replace(/ /g, "");
    const r = {
      topicId: 1, partitionCount: 4, created: DeclareCreated.ALTERED,
      retention: { retentionMs: 3_600_000n, retentionBytes: 1n << 30n, retentionMessages: 0n, discard: Discard.NEW },
    };
    expect(toHex(encodeDeclareResult(r))).toBe(h);
    expect(decodeDeclareResult(hex(h))).toEqual(r);
  });
  it("CONNECT OK: features u32 when asked, empty from a broker without extensions", () => {
    expect(toHex(encodeConnectFeatures(ServerFeatures.RETENTION))).toBe("00000001");
    expect(decodeConnectFeatures(hex("00000001"))).toBe(ServerFeatures.RETENTION);
    expect(decodeConnectFeatures(new Uint8Array(0))).toBe(0);
    expect(() => decodeConnectFeatures(hex("0001"))).toThrow(MortarError);
  });
  it("the tail is read only when the flag announces it: a v0 DECLARE with trailing bytes, or a short tail, is MALFORMED_PAYLOAD", () => {
    const malformed = (h: string) => {
      try {
        decodeFrameBytes(hex(h));
      } catch (e) {
        return (e as MortarError).code;
      }
      return 0;
    };
    expect(malformed("0000000e 02 0006 6f7264657273 0004 0000 0f")).toBe(ErrorCode.MALFORMED_PAYLOAD); // tail without the bit
    expect(malformed("0000000e 02 0006 6f7264657273 0004 0002 0f")).toBe(ErrorCode.MALFORMED_PAYLOAD); // bit, tail cut short
    expect(() => decodeDeclareResult(hex("0001000400" + "00".repeat(24)))).toThrow(MortarError); // neither 5 nor 30 bytes
    expect(() => encodeFrame({ op: Op.DECLARE, topic: ascii("x"), partitionCount: 1, flags: DeclareFlags.RETENTION })).toThrow(RangeError);
  });
});

describe("golden framing cases (spec §1)", () => {
  it("length=0 is FRAME_LENGTH_INVALID as soon as the prefix is read", () => {
    const d = new FrameDecoder();
    const out = d.push(hex("00000000"));
    expect(out.frames).toEqual([]);
    expect(out.error?.code).toBe(ErrorCode.FRAME_LENGTH_INVALID);
    expect(d.hasPartialFrame).toBe(false);
  });

  it("length=MAX_FRAME_LEN+1 is FRAME_LENGTH_INVALID without buffering anything", () => {
    const d = new FrameDecoder();
    const out = d.push(hex("01000001 03"));
    expect(out.error?.code).toBe(ErrorCode.FRAME_LENGTH_INVALID);
    expect(d.bufferedBytes).toBe(0);
    // Dead: a valid frame afterwards is not decoded (no resynchronisation).
    expect(d.push(hex("00000001 07"))).toEqual({ frames: [], bodies: [], error: out.error });
  });

  it("a half frame is held and reported as partial until it completes", () => {
    const [, frame, h] = GOLDEN[2]!; // PUB
    const bytes = hex(h.replace("|", ""));
    const d = new FrameDecoder();
    expect(d.hasPartialFrame).toBe(false);
    const first = d.push(bytes.subarray(0, 10));
    expect(first).toEqual({ frames: [], bodies: [], error: null });
    expect(d.hasPartialFrame).toBe(true);
    expect(d.bufferedBytes).toBe(10);
    const second = d.push(bytes.subarray(10));
    expect(second).toEqual({ frames: [frame], bodies: [bytes.subarray(4)], error: null }); // the body: the frame as received, prefix off
    expect(d.hasPartialFrame).toBe(false);
    expect(d.bufferedBytes).toBe(0);
  });

  it("a partial length prefix alone counts as a half frame", () => {
    const d = new FrameDecoder();
    d.push(hex("0000"));
    expect(d.hasPartialFrame).toBe(true);
    expect(d.bufferedBytes).toBe(2);
  });

  it("a frame exactly MAX_FRAME_LEN long decodes (OK with a MAX_OK_RESULT_LEN result)", () => {
    const result = new Uint8Array(MAX_OK_RESULT_LEN);
    result[0] = 0xab;
    result[MAX_OK_RESULT_LEN - 1] = 0xcd;
    const bytes = encodeFrame({ op: Op.OK, requestOp: Op.PULL, result });
    expect(bytes.length).toBe(4 + MAX_FRAME_LEN);
    expect(toHex(bytes.subarray(0, 10))).toBe("01000000" + "09" + "0b" + "00fffffa");
    // Whole in one chunk: decoded in place.
    const one = new FrameDecoder().push(bytes);
    expect(one.error).toBeNull();
    const ok = one.frames[0];
    expect(ok?.op).toBe(Op.OK);
    if (ok?.op !== Op.OK) return;
    expect(ok.result.length).toBe(MAX_OK_RESULT_LEN);
    expect([ok.result[0], ok.result[MAX_OK_RESULT_LEN - 1]]).toEqual([0xab, 0xcd]);
    // Split across chunks: reassembled into one buffer of the declared length.
    const d = new FrameDecoder();
    expect(d.push(bytes.subarray(0, 1 << 20)).frames).toEqual([]);
    expect(d.bufferedBytes).toBe(1 << 20);
    const two = d.push(bytes.subarray(1 << 20));
    expect(two.error).toBeNull();
    const ok2 = two.frames[0];
    expect(ok2?.op === Op.OK && ok2.result.length).toBe(MAX_OK_RESULT_LEN);
    expect(ok2?.op === Op.OK && ok2.result[MAX_OK_RESULT_LEN - 1]).toBe(0xcd);
  });

  it("encoding a frame over MAX_FRAME_LEN is refused", () => {
    expect(() => encodeFrame({ op: Op.OK, requestOp: 0, result: new Uint8Array(MAX_OK_RESULT_LEN + 1) })).toThrow(RangeError);
  });
});
