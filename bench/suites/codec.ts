/**
 * MortarMQ v0 codec throughput, in process (no broker I/O): the codec must
 * leave ample headroom under the ≥ 100,000 PUB/s broker target. Measures
 * PUB encode, streaming decode of 64 KiB chunks full of PUB frames, and
 * batched encoding of PUB OK responses — 128-byte values, 1 s each.
 */
import type { BenchSuite } from "../runner";
import {
  Durability, FrameDecoder, Op, encodeFrame, encodeFrames, encodePubResult, okFrame,
  type Frame, type PubFrame,
} from "../../wire/mortar";

/** Runs `op` repeatedly for `ms`; returns calls per second. */
function rate(ms: number, op: () => number): { perSec: number; items: number } {
  let items = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 100; i++) items += op();
    now = performance.now();
  }
  return { perSec: Math.round(items / ((now - start) / 1000)), items };
}

export const suite: BenchSuite = {
  name: "codec",
  description: "codec only, in process: PUB encode, stream decode, OK batch encode (128 B values)",
  standalone: true,
  async run() {
    const value = new Uint8Array(128).fill(7);
    const key = new TextEncoder().encode("key-0001");
    const pub = (seq: number): PubFrame => ({
      op: Op.PUB, topicId: 1, partition: 0, producerId: 42n, producerSeq: BigInt(seq), flags: 0, key, value,
    });

    let seq = 0;
    const enc = rate(1000, () => (encodeFrame(pub(++seq)), 1));

    const one = encodeFrame(pub(1));
    const perChunk = Math.floor(65536 / one.length);
    const chunk = encodeFrames(Array.from({ length: perChunk }, (_, i) => pub(i + 1)));
    const dec = rate(1000, () => new FrameDecoder().push(chunk).frames.length);

    // Same stream cut into 1500-byte pieces (frames split across chunks).
    const pieces: Uint8Array[] = [];
    for (let at = 0; at < chunk.length; at += 1500) pieces.push(chunk.subarray(at, at + 1500));
    const split = rate(1000, () => {
      const d = new FrameDecoder();
      let n = 0;
      for (const p of pieces) n += d.push(p).frames.length;
      return n;
    });

    const oks: Frame[] = Array.from({ length: 64 }, (_, i) =>
      okFrame(Op.PUB, encodePubResult({ sequence: BigInt(i + 1), durability: Durability.LOCAL, leaderEpoch: 1n, commitSeq: BigInt(i + 1), resultFlags: 0 })));
    const okBatch = rate(1000, () => (encodeFrames(oks), oks.length));

    const rows = [
      { operation: "encodeFrame(PUB)", "frames/s": enc.perSec },
      { operation: `FrameDecoder.push, ${perChunk} PUBs per 64 KiB chunk`, "frames/s": dec.perSec },
      { operation: "FrameDecoder.push, 1500 B chunks (frames split)", "frames/s": split.perSec },
      { operation: "encodeFrames, 64 PUB OKs per batch", "frames/s": okBatch.perSec },
    ];
    return { rows, detail: { frameBytes: one.length, perChunk } };
  },
};
