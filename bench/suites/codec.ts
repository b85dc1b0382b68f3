/**
 * MortarMQ v0 codec throughput, in process (no broker I/O): the codec must
 * leave ample headroom under the ≥ 100,000 PUB/s broker target. Measures
 * PUB encode, streaming decode of 64 KiB chunks full of PUB frames (whole,
 * and cut into 1500-byte pieces), batched encoding of PUB OK responses, and
 * MSG encode and decode — 128-byte values, 1 s each.
 *
 * `--base <rev>` compares the codec of another revision with this
 * checkout's, interleaved in one process: the revision's `wire/` is
 * extracted with `git archive` (with package.json, for its module type) into a temporary directory (wire/ imports
 * nothing outside itself) and each round measures every case on both codecs
 * back to back, order alternating. Rows then give the median rate of each
 * arm and the median of the per-round ratios new ÷ base. Options:
 * `--rounds N` (default 5), `--slice ms` per measurement (default 1000
 * alone, 500 with --base). The record goes to bench/results/codec.json
 * (copy an A/B record to bench/results/experiments/ to keep it).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { BenchSuite } from "../runner";
import { PACKAGE_ROOT } from "../../client/local/root";
import { median, round3 } from "../stats";
import * as current from "../../wire/mortar";
import type { Frame, MsgFrame, PubFrame } from "../../wire/mortar";

type Codec = typeof current;

/** Runs `op` repeatedly for `ms`; returns items per second. */
function rate(ms: number, op: () => number): number {
  let items = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 100; i++) items += op();
    now = performance.now();
  }
  return Math.round(items / ((now - start) / 1000));
}

/** One measured operation: its row label and a function returning items per call. */
interface Case {
  operation: string;
  op: () => number;
}

/** The measured operations on codec `c` (the same inputs for every codec). */
function cases(c: Codec): { list: Case[]; frameBytes: number; perChunk: number } {
  const value = new Uint8Array(128).fill(7);
  const key = new TextEncoder().encode("key-0001");
  const pub = (seq: number): PubFrame => ({
    op: c.Op.PUB, topicId: 1, partition: 0, producerId: 42n, producerSeq: BigInt(seq), flags: 0, key, value,
  });
  const msg = (seq: number): MsgFrame => ({
    op: c.Op.MSG, subscriptionId: 1, topicId: 1, partition: 0, sequence: BigInt(seq), deliveryId: BigInt(seq), attempt: 1,
    ownershipEpoch: 1n, producerId: 42n, producerSeq: BigInt(seq), flags: 0, key, value,
  });
  let seq = 0;
  const one = c.encodeFrame(pub(1));
  const perChunk = Math.floor(65536 / one.length);
  const chunk = c.encodeFrames(Array.from({ length: perChunk }, (_, i) => pub(i + 1)));
  // Same stream cut into 1500-byte pieces (frames split across chunks).
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < chunk.length; at += 1500) pieces.push(chunk.subarray(at, at + 1500));
  const oks: Frame[] = Array.from({ length: 64 }, (_, i) =>
    c.okFrame(c.Op.PUB, c.encodePubResult({ sequence: BigInt(i + 1), durability: c.Durability.LOCAL, leaderEpoch: 1n, commitSeq: BigInt(i + 1), resultFlags: 0 })));
  const msgs: Frame[] = Array.from({ length: 64 }, (_, i) => msg(i + 1));
  const msgChunk = c.encodeFrames(msgs);
  const list: Case[] = [
    { operation: "encodeFrame(PUB)", op: () => (c.encodeFrame(pub(++seq)), 1) },
    { operation: `FrameDecoder.push, ${perChunk} PUBs per 64 KiB chunk`, op: () => new c.FrameDecoder().push(chunk).frames.length },
    {
      operation: "FrameDecoder.push, 1500 B chunks (frames split)",
      op: () => {
        const d = new c.FrameDecoder();
        let n = 0;
        for (const p of pieces) n += d.push(p).frames.length;
        return n;
      },
    },
    { operation: "encodeFrames, 64 PUB OKs per batch", op: () => (c.encodeFrames(oks), oks.length) },
    { operation: "encodeFrames, 64 MSGs per batch", op: () => (c.encodeFrames(msgs), msgs.length) },
    { operation: "FrameDecoder.push, 64 MSGs", op: () => new c.FrameDecoder().push(msgChunk).frames.length },
    {
      operation: "decodePubResult (64 PUB OKs)",
      op: () => {
        for (const f of oks) if (f.op === c.Op.OK) c.decodePubResult(f.result);
        return oks.length;
      },
    },
  ];
  return { list, frameBytes: one.length, perChunk };
}

/** Imports `wire/mortar` of revision `rev`; returns it with a cleanup. */
async function codecAt(rev: string): Promise<{ commit: string; codec: Codec; dispose(): void }> {
  const commit = execFileSync("git", ["-C", PACKAGE_ROOT, "rev-parse", "--verify", `${rev}^{commit}`], { encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "mortarmq-bench-codec-"));
  try {
    execFileSync("sh", ["-c", `git -C "$0" archive "$1" package.json wire | tar -x -C "$2"`, PACKAGE_ROOT, commit, dir]);
    const codec = (await import(pathToFileURL(join(dir, "wire/mortar/index.ts")).href)) as Codec;
    return { commit, codec, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export const suite: BenchSuite = {
  name: "codec",
  description: "codec only, in process: PUB encode, stream decode, OK batch encode, MSG encode/decode (128 B values); --base <rev> for an interleaved A/B",
  standalone: true,
  async run({ options }) {
    const mine = cases(current);
    const detail = { frameBytes: mine.frameBytes, perChunk: mine.perChunk };
    if (options.base === undefined) {
      const slice = Number(options.slice ?? 1000);
      return { rows: mine.list.map((k) => ({ operation: k.operation, "frames/s": rate(slice, k.op) })), detail };
    }
    const rounds = Number(options.rounds ?? 5);
    const slice = Number(options.slice ?? 500);
    const base = await codecAt(options.base);
    try {
      const theirs = cases(base.codec);
      const rates = mine.list.map(() => ({ base: [] as number[], new: [] as number[] }));
      for (let r = 0; r < rounds; r++) {
        mine.list.forEach((k, i) => {
          const b = () => rates[i]!.base.push(rate(slice, theirs.list[i]!.op));
          const n = () => rates[i]!.new.push(rate(slice, k.op));
          if (r % 2 === 0) { b(); n(); } else { n(); b(); }
        });
        console.log(`  round ${r + 1}/${rounds}: ` + rates.map((x) => round3(x.new[r]! / x.base[r]!)).join(" "));
      }
      const rows = mine.list.map((k, i) => {
        const x = rates[i]!;
        return {
          operation: k.operation,
          "base frames/s": median(x.base),
          "new frames/s": median(x.new),
          "new ÷ base": round3(median(x.new.map((n, j) => n / x.base[j]!))),
        };
      });
      return { rows, detail: { ...detail, base: { rev: options.base, commit: base.commit }, rounds, sliceMs: slice, rates } };
    } finally {
      base.dispose();
    }
  },
};
