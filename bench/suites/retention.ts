/**
 * Topic retention on the write path (docs/protocol.md "Topic retention"):
 * pipelined PUB of 128-byte values to ONE partition over ONE connection,
 * WINDOW publishes in flight, against
 * - a topic without limits (retention_ms 0: nothing is ever deleted),
 * - a topic sitting at its byte limit (retention_bytes LIMIT_BYTES, filled
 *   first): every append also deletes the oldest segments,
 * - a topic sitting at a record limit of 1,000,000 records (filled first):
 *   the same, on a partition holding a million records — deletion is
 *   index-driven, so its cost must not grow with the log.
 * The three are measured in the same run, interleaved round by round
 * (A B C, B C A, C A B, …), and reported as throughput ratios to the
 * unlimited topic: the median over rounds of each round's ratio (the
 * machine is shared and noisy: compare within one run, neighbours in time).
 * Then 10 × LIMIT_BYTES is published to the byte-limited topic while GET
 * /stats samples its retained bytes every SAMPLE_MS: they must stay ≤ the
 * limit + one segment (SEGMENT_BYTES) throughout.
 */
import { MortarClient } from "../../client/sdk";
import type { BenchSuite } from "../runner";
import { median, summarize, timeit } from "../stats";

const WINDOW = 1000;
const ROUND_MS = 2_000;
const ROUNDS = 8;
const WARMUP_MS = 1_000;
const VALUE = new Uint8Array(128).fill(0x61);
const LIMIT_BYTES = 2 * 1024 * 1024;
const LIMIT_RECORDS = 1_000_000;
const SEGMENT_BYTES = 1024 * 1024;
const SAMPLE_MS = 50;

interface Round {
  rate: number;
  p50_ms: number;
  p99_ms: number;
}

/** One round of pipelined PUBs to partition 0 of `topicId` for `ms`. */
async function round(c: MortarClient, topicId: number, ms: number): Promise<Round> {
  const r = await timeit(ms, WINDOW, async () => {
    await c.publish(topicId, 0, null, VALUE);
  });
  const s = summarize(r.latenciesMs);
  return { rate: Math.round(r.rate), p50_ms: s.p50, p99_ms: s.p99 };
}

/** Publishes `n` records to partition 0 of `topicId`, WINDOW in flight. */
async function fill(c: MortarClient, topicId: number, n: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: WINDOW }, async () => {
    while (next < n) {
      next++;
      await c.publish(topicId, 0, null, VALUE);
    }
  }));
}

interface PartitionDoc {
  first_sequence: number;
  high_watermark: number;
  size_bytes: number;
}

/** Partition 0 of `name` as GET /stats shows it. */
async function partitionStats(url: string, name: string): Promise<PartitionDoc> {
  const doc = (await (await fetch(new URL("/stats", url))).json()) as { topics: { name: string; partitions: PartitionDoc[] }[] };
  const t = doc.topics.find((x) => x.name === name);
  if (!t) throw new Error(`${name} is not in /stats`);
  return t.partitions[0]!;
}

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

export const suite: BenchSuite = {
  name: "retention",
  description: `pipelined PUB, 128-byte values, one partition, ${WINDOW} in flight: no limit vs at a ${LIMIT_BYTES / 1024 / 1024} MiB byte limit vs at a ${LIMIT_RECORDS} record limit, ${ROUNDS} interleaved rounds of ${ROUND_MS / 1000} s; ratio = median of per-round ratios`,
  async run({ broker }) {
    const c = await MortarClient.connect(broker.url);
    try {
      const stamp = Date.now().toString(36);
      const names = { free: `bench-ret-free-${stamp}`, bytes: `bench-ret-bytes-${stamp}`, records: `bench-ret-records-${stamp}` };
      const free = await c.declare(names.free, 1, { retention: { retentionMs: 0, retentionBytes: 0, retentionMessages: 0 } });
      const bytes = await c.declare(names.bytes, 1, { retention: { retentionMs: 0, retentionBytes: LIMIT_BYTES, discard: "old" } });
      const records = await c.declare(names.records, 1, { retention: { retentionMs: 0, retentionMessages: LIMIT_RECORDS, discard: "old" } });

      // Bring the limited topics to their limits: from here on every append deletes.
      const fillStart = performance.now();
      await fill(c, bytes.topicId, Math.ceil((LIMIT_BYTES * 1.5) / VALUE.length));
      await fill(c, records.topicId, LIMIT_RECORDS + 20_000);
      const fillMs = Math.round(performance.now() - fillStart);
      const atLimit = { bytes: await partitionStats(broker.url, names.bytes), records: await partitionStats(broker.url, names.records) };

      for (const t of [free, bytes, records]) await round(c, t.topicId, WARMUP_MS);
      const runs: Record<keyof typeof names, Round[]> = { free: [], bytes: [], records: [] };
      for (let i = 0; i < ROUNDS; i++) {
        // rotate the order each round so no topic always runs first
        const order = (["free", "bytes", "records"] as const).map((_, k, a) => a[(k + i) % a.length]!);
        for (const k of order) runs[k].push(await round(c, { free, bytes, records }[k].topicId, ROUND_MS));
      }
      const rate = (k: keyof typeof names) => median(runs[k].map((r) => r.rate));
      /** Median over rounds of the round's rate of `k` / the round's unlimited rate. */
      const roundRatio = (k: keyof typeof names) => ratio(median(runs[k].map((r, i) => r.rate / runs.free[i]!.rate)), 1);

      // 10 × the byte limit into the byte-limited topic, sampling its retained bytes.
      const before = await partitionStats(broker.url, names.bytes);
      const samples: number[] = [];
      let publishing = true;
      const sampler = (async () => {
        while (publishing) {
          samples.push((await partitionStats(broker.url, names.bytes)).size_bytes);
          await new Promise((r) => setTimeout(r, SAMPLE_MS));
        }
      })();
      const tenX = Math.ceil((10 * LIMIT_BYTES) / VALUE.length);
      await fill(c, bytes.topicId, tenX);
      publishing = false;
      await sampler;
      const after = await partitionStats(broker.url, names.bytes);
      samples.push(after.size_bytes);
      const maxRetained = Math.max(...samples);
      const bound = LIMIT_BYTES + SEGMENT_BYTES;

      const row = (target: string, k: keyof typeof names) => {
        const rs = runs[k];
        return {
          target, "msg/s (median)": rate(k), "rounds msg/s": rs.map((r) => r.rate).join(" / "),
          p50_ms: median(rs.map((r) => r.p50_ms)), p99_ms: median(rs.map((r) => r.p99_ms)),
          vs_unlimited: roundRatio(k),
        };
      };
      const rows: Record<string, string | number>[] = [
        row("no limit (retention off)", "free"),
        row(`at retention_bytes ${LIMIT_BYTES} (every append deletes)`, "bytes"),
        row(`at retention_messages ${LIMIT_RECORDS} (1M-record partition, every append deletes)`, "records"),
        {
          target: `publish 10 × retention_bytes (${tenX} records): retained bytes, max of ${samples.length} samples`,
          "msg/s (median)": "-", "rounds msg/s": `max ${maxRetained} B ≤ bound ${bound} B: ${maxRetained <= bound ? "yes" : "NO"}`,
          p50_ms: "-", p99_ms: "-", vs_unlimited: "-",
        },
      ];
      return {
        rows,
        detail: {
          window: WINDOW, roundMs: ROUND_MS, rounds: ROUNDS, valueBytes: VALUE.length, limitBytes: LIMIT_BYTES, limitRecords: LIMIT_RECORDS,
          segmentBytes: SEGMENT_BYTES, fillMs, atLimit, runs,
          ratios: {
            statistic: "median over rounds of (rate / the same round's unlimited rate)",
            bytes: roundRatio("bytes"), records: roundRatio("records"),
            ofMedians: { bytes: ratio(rate("bytes"), rate("free")), records: ratio(rate("records"), rate("free")) },
          },
          tenTimes: {
            published: tenX, publishedBytes: tenX * VALUE.length, sampleMs: SAMPLE_MS, samples: samples.length,
            maxRetainedBytes: maxRetained, minRetainedBytes: Math.min(...samples), bound, withinBound: maxRetained <= bound,
            before, after,
          },
        },
      };
    } finally {
      await c.close();
    }
  },
};
