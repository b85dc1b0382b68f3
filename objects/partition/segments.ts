/**
 * Segment layout of the partition log (pure): which stored records go into
 * which `log` row (log-store.ts). Every append path — PUB batches and
 * dead-letter batches — lays its records out here, so the rule is written
 * once.
 *
 * Records are whole PUB frames, named by their byte range [start, end) in
 * the batch that carries them and added in sequence order. A segment holds
 * consecutive sequences and at most `maxBytes` (SEGMENT_BYTES) of frames;
 * a record larger than that gets a segment of its own (log-store.ts chunks
 * it across rows). Records of the batch that are not stored (duplicates,
 * rejects) leave gaps, so a segment is a list of ranges; a gap-free segment
 * is one range and is stored without a copy.
 */

/**
 * Records are grouped into segments of at most this many encoded bytes,
 * 1 MiB (one record may exceed it). Not above log-store.ts CHUNK_BYTES, so
 * a segment of several records is one row.
 */
export const SEGMENT_BYTES = 1024 * 1024;

/** A run of consecutive records stored as one segment row. */
export interface Segment {
  /** Sequence of the segment's first record (≥ 1). */
  firstSeq: number;
  count: number;
  /** [start, end) byte ranges of its frames in the batch, in order (adjacent ranges merged). */
  ranges: number[];
  /** Encoded bytes of its frames. */
  bytes: number;
}

/** Builds the segments of one append. */
export class SegmentLayout {
  /** The segments laid out so far, in sequence order. */
  readonly segments: Segment[] = [];
  private current: Segment | undefined;

  /** `maxBytes`: the segment size bound (SEGMENT_BYTES). */
  constructor(private readonly maxBytes = SEGMENT_BYTES) {}

  /**
   * Adds the record with sequence `sequence`, whose frame is bytes
   * [start, end) of the batch. A new segment starts when the record would
   * take the current one past `maxBytes`, or does not follow its last
   * sequence.
   */
  add(sequence: number, start: number, end: number): void {
    const size = end - start;
    let seg = this.current;
    if (!seg || seg.bytes + size > this.maxBytes || seg.firstSeq + seg.count !== sequence) {
      this.segments.push((seg = this.current = { firstSeq: sequence, count: 0, ranges: [], bytes: 0 }));
    }
    seg.count++;
    seg.bytes += size;
    const r = seg.ranges;
    if (r.length && r[r.length - 1] === start) r[r.length - 1] = end;
    else r.push(start, end);
  }
}

/** The bytes of segment `s` of `batch`: a view when its records are contiguous in the batch, else a copy. */
export function segmentBytes(batch: Uint8Array, s: Segment): Uint8Array {
  const r = s.ranges;
  if (r.length === 2) return batch.subarray(r[0], r[1]);
  const out = new Uint8Array(s.bytes);
  let o = 0;
  for (let i = 0; i < r.length; i += 2) {
    out.set(batch.subarray(r[i], r[i + 1]), o);
    o += r[i + 1]! - r[i]!;
  }
  return out;
}
