/** Small statistics helpers for benchmarks (latencies in ms). */

/** p50/p99/mean of latency samples in ms, rounded to 0.01 ms. */
export function summarize(samples: number[]): { p50: number; p99: number; mean: number; n: number } {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : 0);
  const r = (x: number) => Math.round(x * 100) / 100;
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : 0;
  return { p50: r(q(0.5)), p99: r(q(0.99)), mean: r(mean), n: s.length };
}

/**
 * Runs `op` with `concurrency` workers for `durationMs`; returns completed
 * operations per second and every latency sample (ms).
 */
export async function timeit(
  durationMs: number,
  concurrency: number,
  op: (worker: number) => Promise<void>,
): Promise<{ rate: number; count: number; latenciesMs: number[] }> {
  const latenciesMs: number[] = [];
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < end) {
        const t = performance.now();
        await op(w);
        latenciesMs.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  return { rate: latenciesMs.length / elapsed, count: latenciesMs.length, latenciesMs };
}

/** The median of `xs` (the upper one of an even count); `xs` must not be empty. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** `x` rounded to 3 decimals (ratios in reports). */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
