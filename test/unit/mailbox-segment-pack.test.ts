/** A mailbox segment's body (objects/mailbox/segment-pack.ts): encode/decode round trip and cutting runs into segments. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SEGMENT_MAX_BYTES, cutSegments, decodeSegment, encodeSegment, entryBound, type SegmentEntry } from "../../objects/mailbox/segment-pack";

const text = fc.option(fc.string({ maxLength: 20 }), { nil: null });
const entry = fc.record({
  lane: fc.constantFrom(0, 1, 2) as fc.Arbitrary<SegmentEntry["lane"]>,
  createMs: fc.integer({ min: 0, max: 2 ** 45 }),
  expiresMs: fc.option(fc.integer({ min: 0, max: 2 ** 45 }), { nil: null }),
  key: text, tags: text, replyTo: text, correlationId: text, deadLetter: text,
  payload: fc.uint8Array({ maxLength: 64 }),
});

describe("segment-pack", () => {
  it("decodes what it encodes, with every optional field present or not (property)", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.array(entry, { maxLength: 30 }), (first, es) => {
      const entries: SegmentEntry[] = es.map((e, i) => ({ ...e, msgId: first + i * 3 }));
      const body = encodeSegment(first, entries);
      expect(decodeSegment(first, body).map((e) => ({ ...e, payload: [...e.payload] }))).toEqual(entries.map((e) => ({ ...e, payload: [...e.payload] })));
      expect(body.byteLength).toBeLessThanOrEqual(5 + entries.reduce((n, e) => n + entryBound(e), 0));
    }));
  });

  it("refuses an unknown version and a truncated body", () => {
    const body = encodeSegment(0, [{ msgId: 0, lane: 2, createMs: 1, expiresMs: null, key: null, tags: null, replyTo: null, correlationId: null, deadLetter: null, payload: new Uint8Array(10) }]);
    expect(() => decodeSegment(0, body.subarray(0, body.byteLength - 1))).toThrow(/truncated/);
    expect(() => decodeSegment(0, new Uint8Array([9, 0, 0, 0, 0]))).toThrow(/version/);
  });

  it("cuts runs at SEGMENT_MAX_BYTES, a larger message alone, order kept", () => {
    const e = (n: number) => ({ lane: 2 as const, createMs: 0, expiresMs: null, key: null, tags: null, replyTo: null, correlationId: null, deadLetter: null, payload: new Uint8Array(n) });
    const runs = cutSegments([e(10), e(SEGMENT_MAX_BYTES / 2), e(SEGMENT_MAX_BYTES / 2), e(SEGMENT_MAX_BYTES + 5), e(1)]);
    expect(runs.map((r) => r.map((x) => x.payload.byteLength))).toEqual([[10, SEGMENT_MAX_BYTES / 2], [SEGMENT_MAX_BYTES / 2], [SEGMENT_MAX_BYTES + 5], [1]]);
    expect(cutSegments([])).toEqual([]);
  });
});
