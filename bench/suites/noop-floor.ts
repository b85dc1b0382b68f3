/**
 * Runtime floor: requests/s of GET /healthz (a no-op Worker route) on the
 * same local runtime, with 32 concurrent requests in flight. Other suites
 * compare their request rates against it.
 */
import type { BenchSuite } from "../runner";
import { summarize, timeit } from "../stats";

export const suite: BenchSuite = {
  name: "noop-floor",
  description: "no-op Worker route (GET /healthz), 32 concurrent, 5 s",
  async run({ broker }) {
    const r = await timeit(5_000, 32, async () => {
      const res = await fetch(`${broker.url}/healthz`);
      await res.arrayBuffer();
    });
    const s = summarize(r.latenciesMs);
    return { rows: [{ route: "GET /healthz", "req/s": Math.round(r.rate), p50_ms: s.p50, p99_ms: s.p99 }], detail: r };
  },
};
