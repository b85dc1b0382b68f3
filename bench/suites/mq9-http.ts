/**
 * mq9 over HTTP: SEND and FETCH requests/s and p50/p99 latency, on one
 * mailbox and spread over 100 mailboxes, next to the runtime's floor on the
 * same broker and client:
 * - `GET /healthz` — the no-op Worker route of the `noop-floor` suite (the
 *   floor the ≤ 25 % target is stated against);
 * - `POST` of the same 64-byte body to an unrouted path (hono's 404) — a
 *   no-op that pays the same request-body cost as an mq9 request, so the
 *   difference to it is the broker's own cost (routing, auth, Durable Object
 *   hop, SQLite commit).
 *
 * The machine is shared, so the cases run interleaved in ROUNDS short
 * slices, each right after a slice of the GET floor; a case's req/s is the
 * median over rounds and `overhead` is the median over rounds of
 * (floor req/s ÷ case req/s − 1) of those back-to-back pairs ("vs POST
 * no-op" pairs with the no-op POST slice of the same round). The client is
 * node:http with keep-alive (much cheaper than fetch, which would otherwise
 * eat the CPU the broker needs).
 */
import { httpCaller } from "../http";
import type { BenchSuite } from "../runner";
import { summarize, timeit } from "../stats";

const CONCURRENCY = 32;
const ROUNDS = 8;
const SLICE_MS = 1_000;
const FLOOR_SLICE_MS = 600;
const MAILBOXES = 100;
const PREFILL = 200;
const PAYLOAD = JSON.stringify({ text: "x".repeat(48) }); // 64 bytes

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export const suite: BenchSuite = {
  name: "mq9-http",
  description: `mq9 SEND/FETCH over POST /mq9 vs the runtime floor, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of paired slices`,
  async run({ broker }) {
    const http = httpCaller(broker.port, CONCURRENCY * 2);
    const call = (method: string, path: string, body?: string, okStatus = 200) => http.call(method, path, { body, okStatus }).then(() => {});
    const mq9 = (subject: string, body: string) => call("POST", `/mq9/${subject}`, body);
    try {
      const run = "b" + Date.now().toString(36);
      const boxes = Array.from({ length: MAILBOXES }, (_, i) => `bench.${run}.${i}`);
      for (const name of boxes) await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name, ttl: 3600 }));
      for (let i = 0; i < PREFILL; i++) await mq9(`$mq9.AI.MSG.SEND.${boxes[0]}`, PAYLOAD);
      for (const b of boxes) await mq9(`$mq9.AI.MSG.SEND.${b}`, PAYLOAD);

      let n = 0;
      const fetchBody = (max: number) => JSON.stringify({ deliver: "from_id", from_id: n++ % max, config: { num_msgs: 1, max_wait_ms: 0 } });
      const cases: { route: string; op: () => Promise<void> }[] = [
        { route: "GET /healthz (floor)", op: () => call("GET", "/healthz") },
        { route: "POST 64 B, no-op 404", op: () => call("POST", "/noop", PAYLOAD, 404) },
        { route: "SEND, 1 mailbox", op: () => mq9(`$mq9.AI.MSG.SEND.${boxes[0]}`, PAYLOAD) },
        { route: `SEND, ${MAILBOXES} mailboxes`, op: () => mq9(`$mq9.AI.MSG.SEND.${boxes[n++ % MAILBOXES]}`, PAYLOAD) },
        { route: "FETCH 1 msg, 1 mailbox", op: () => mq9(`$mq9.AI.MSG.FETCH.${boxes[0]}`, fetchBody(PREFILL)) },
        { route: `FETCH 1 msg, ${MAILBOXES} mailboxes`, op: () => mq9(`$mq9.AI.MSG.FETCH.${boxes[n % MAILBOXES]}`, fetchBody(1)) },
      ];
      for (const c of cases) await timeit(300, CONCURRENCY, c.op); // warm-up
      // Each slice of a case is paired with a floor slice right before it, so
      // load from elsewhere on the machine hits both sides of every ratio.
      const floor = cases[0];
      const rates = cases.map(() => [] as number[]);
      const ratios = cases.map(() => [] as number[]);
      const postRatios = cases.map(() => [] as number[]);
      const lat = cases.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, c] of cases.entries()) {
          const f = await timeit(FLOOR_SLICE_MS, CONCURRENCY, floor.op);
          const r = await timeit(SLICE_MS, CONCURRENCY, c.op);
          rates[i].push(r.rate);
          lat[i].push(...r.latenciesMs);
          ratios[i].push(f.rate / r.rate - 1);
          if (i >= 2) postRatios[i].push(rates[1][round] / r.rate - 1);
          if (i === 0) lat[0].push(...f.latenciesMs);
        }
      }
      const rows: Record<string, string | number>[] = [];
      const detail: Record<string, unknown> = {};
      for (const [i, c] of cases.entries()) {
        const s = summarize(lat[i]);
        const row = {
          route: c.route,
          "req/s": Math.round(median(rates[i])),
          p50_ms: s.p50,
          p99_ms: s.p99,
          "overhead vs GET floor": i === 0 ? "—" : pct(median(ratios[i])),
          "overhead vs POST no-op": i < 2 ? "—" : pct(median(postRatios[i])),
        };
        rows.push(row);
        detail[c.route] = { ...row, ratesPerRound: rates[i].map((r) => Math.round(r)), floorRatiosPerRound: ratios[i].map((x) => Math.round(x * 1000) / 1000), mean_ms: s.mean, n: s.n };
      }
      return {
        rows,
        detail: { concurrency: CONCURRENCY, rounds: ROUNDS, sliceMs: SLICE_MS, floorSliceMs: FLOOR_SLICE_MS, payloadBytes: PAYLOAD.length, target: "≤ 25% over the GET /healthz floor", cases: detail },
      };
    } finally {
      http.close();
    }
  },
};
