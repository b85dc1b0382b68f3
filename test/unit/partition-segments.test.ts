import { describe, expect, it } from "vitest";
import { SEGMENT_BYTES, SegmentLayout, segmentBytes } from "../../objects/partition/segments";

describe("partition segment layout", () => {
  it("segments are bounded at 1 MiB by default (log-store.ts stores one of several records in one row)", () => {
    const l = new SegmentLayout();
    l.add(1, 0, SEGMENT_BYTES - 1);
    l.add(2, SEGMENT_BYTES - 1, SEGMENT_BYTES);
    l.add(3, SEGMENT_BYTES, SEGMENT_BYTES + 1);
    expect(SEGMENT_BYTES).toBe(1024 * 1024);
    expect(l.segments.map((s) => [s.firstSeq, s.count, s.bytes])).toEqual([[1, 2, SEGMENT_BYTES], [3, 1, 1]]);
  });

  it("packs consecutive records up to the byte bound; a larger record gets a segment of its own", () => {
    const l = new SegmentLayout(100);
    l.add(1, 0, 40);
    l.add(2, 40, 100); // exactly 100: fits
    l.add(3, 100, 101); // would be 101: next segment
    l.add(4, 101, 351); // 250 > bound: alone
    l.add(5, 351, 361);
    expect(l.segments).toEqual([
      { firstSeq: 1, count: 2, ranges: [0, 100], bytes: 100 },
      { firstSeq: 3, count: 1, ranges: [100, 101], bytes: 1 },
      { firstSeq: 4, count: 1, ranges: [101, 351], bytes: 250 },
      { firstSeq: 5, count: 1, ranges: [351, 361], bytes: 10 },
    ]);
  });

  it("records not stored leave gaps (several ranges, gathered into one copy); a sequence jump starts a segment", () => {
    const batch = Uint8Array.from({ length: 30 }, (_, i) => i);
    const l = new SegmentLayout();
    l.add(7, 0, 5);
    l.add(8, 10, 15); // bytes 5..10 were a duplicate
    l.add(9, 15, 20);
    l.add(11, 25, 30); // sequence 10 is not in this batch
    expect(l.segments.map((s) => [s.firstSeq, s.count, s.ranges])).toEqual([[7, 3, [0, 5, 10, 20]], [11, 1, [25, 30]]]);
    const first = segmentBytes(batch, l.segments[0]!);
    expect([...first]).toEqual([0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    const second = segmentBytes(batch, l.segments[1]!);
    expect(second.buffer).toBe(batch.buffer); // contiguous: a view, no copy
    expect([...second]).toEqual([25, 26, 27, 28, 29]);
  });

  it("nothing added, nothing laid out", () => {
    expect(new SegmentLayout().segments).toEqual([]);
  });
});
