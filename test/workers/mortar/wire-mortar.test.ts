/**
 * The MortarMQ codec is pure and must run inside workerd too (the Session
 * object decodes with it): round-trip frames through the streaming decoder
 * and check strict UTF-8 name parsing in the Workers runtime.
 */
import { describe, expect, it } from "vitest";
import {
  ErrorCode, FrameDecoder, Op, encodeFrames, encodePubResult, decodePubResult, okFrame, parseTopicName, utf8Bytes,
  type Frame,
} from "../../../wire/mortar";

describe("wire/mortar in workerd", () => {
  it("decodes a byte stream fed one byte at a time", () => {
    const frames: Frame[] = [
      { op: Op.PUB, topicId: 1, partition: 0, producerId: 2n ** 64n - 1n, producerSeq: 1n, flags: 0, key: utf8Bytes("k"), value: utf8Bytes("v") },
      okFrame(Op.PUB, encodePubResult({ sequence: 1n, durability: 2, leaderEpoch: 1n, commitSeq: 1n, resultFlags: 0 })),
      { op: Op.PING },
    ];
    const stream = encodeFrames(frames);
    const d = new FrameDecoder();
    const got: Frame[] = [];
    for (let i = 0; i < stream.length; i++) got.push(...d.push(stream.subarray(i, i + 1)).frames);
    expect(got).toEqual(frames);
    const ok = got[1];
    expect(ok?.op === Op.OK && decodePubResult(ok.result).durability).toBe(2);
  });

  it("reports illegal ops and invalid UTF-8 names with registry codes", () => {
    expect(new FrameDecoder().push(Uint8Array.from([0, 0, 0, 1, 0xff])).error?.code).toBe(ErrorCode.ILLEGAL_OP);
    const bad = parseTopicName(Uint8Array.from([0xc3]));
    expect(typeof bad === "string" ? bad : bad.code).toBe(ErrorCode.INVALID_TOPIC_NAME);
  });
});
