/**
 * Cost of hosted-broker auth and quotas (docs/tenants.md), on a second
 * broker started by this suite with ADMIN_TOKEN and one static token:
 * - mq9 SEND over HTTP (32 concurrent, 64-byte payload) with a static
 *   token (no call), an issued token (one TenantDirectory call per request:
 *   no positive cache, so revocation is immediate), and an issued token of a
 *   tenant with a publish-rate quota far above the load (leases in chunks);
 * - MortarMQ PUB (1000 in flight, 128 B, one partition) with a static token
 *   and with a rate quota far above the load.
 * Cases run interleaved in ROUNDS slices; req/s is the median over rounds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalBroker } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { httpCaller } from "../http";
import type { BenchSuite } from "../runner";
import { median, summarize, timeit } from "../stats";

const ADMIN = "bench-admin";
const STATIC = "bench-static";
const CONCURRENCY = 32;
const WINDOW = 1000;
const ROUNDS = 6;
const SLICE_MS = 1_000;
const PAYLOAD = JSON.stringify({ text: "x".repeat(48) });
const VALUE = new Uint8Array(128).fill(0x61);

export const suite: BenchSuite = {
  name: "tenants",
  description: `auth and quota cost: mq9 HTTP SEND (${CONCURRENCY} concurrent) and MortarMQ PUB (${WINDOW} in flight), static vs issued tokens vs a rate quota, ${ROUNDS} interleaved rounds`,
  standalone: true,
  async run() {
    const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-tenants-"));
    const broker = await startLocalBroker({ stateDir, port: 0, vars: { ADMIN_TOKEN: ADMIN, AUTH_TOKENS: `${STATIC}:static` } });
    const http = httpCaller(broker.port, CONCURRENCY * 2);
    const call = (method: string, path: string, token: string, body?: string) => http.call(method, path, { token, body });
    const issue = async (id: string, quotas?: object) => {
      await call("POST", "/admin/tenants", ADMIN, JSON.stringify({ id, ...(quotas ? { quotas } : {}) }));
      return (JSON.parse(await call("POST", `/admin/tenants/${id}/tokens`, ADMIN, "{}")) as { token: string }).token;
    };
    const clients: MortarClient[] = [];
    try {
      const issued = await issue("issued");
      const quota = await issue("quota", { publish_msgs_per_s: 1_000_000_000, publish_bytes_per_s: 1_000_000_000_000 });
      const send = (token: string) => {
        const box = `bench.${token.length}.${token.slice(-6).toLowerCase().replace(/[^a-z0-9]/g, "x")}`;
        return { box, op: () => call("POST", `/mq9/$mq9.AI.MSG.SEND.${box}`, token, PAYLOAD).then(() => {}) };
      };
      const httpCases = [
        { route: "mq9 SEND, static token (AUTH_TOKENS)", ...send(STATIC) },
        { route: "mq9 SEND, issued token (directory call per request)", ...send(issued) },
        { route: "mq9 SEND, issued token + rate quota (leased)", ...send(quota) },
      ];
      for (const [i, c] of httpCases.entries()) {
        await call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", [STATIC, issued, quota][i]!, JSON.stringify({ name: c.box, ttl: 3600 }));
      }
      const pubCase = async (route: string, token: string) => {
        const client = await MortarClient.connect(broker.url, { token });
        clients.push(client);
        const { topicId } = await client.declare("bench", 1);
        return { route, op: () => client.publish(topicId, 0, null, VALUE).then(() => {}), concurrency: WINDOW };
      };
      const cases = [
        ...httpCases.map((c) => ({ route: c.route, op: c.op, concurrency: CONCURRENCY })),
        await pubCase("MortarMQ PUB, static token", STATIC),
        await pubCase("MortarMQ PUB, issued token + rate quota (leased)", quota),
      ];
      for (const c of cases) await timeit(300, c.concurrency, c.op); // warm-up
      const rates = cases.map(() => [] as number[]);
      const lat = cases.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, c] of cases.entries()) {
          const r = await timeit(SLICE_MS, c.concurrency, c.op);
          rates[i]!.push(r.rate);
          for (const x of r.latenciesMs) lat[i]!.push(x);
        }
      }
      const rows = cases.map((c, i) => {
        const s = summarize(lat[i]!);
        const base = i < 3 ? 0 : 3;
        return {
          case: c.route,
          "req/s": Math.round(median(rates[i]!)),
          p50_ms: s.p50,
          p99_ms: s.p99,
          "vs static": i === base ? "—" : `${((median(rates[i]!) / median(rates[base]!) - 1) * 100).toFixed(1)}%`,
        };
      });
      return { rows, detail: { concurrency: CONCURRENCY, window: WINDOW, rounds: ROUNDS, sliceMs: SLICE_MS, ratesPerRound: Object.fromEntries(cases.map((c, i) => [c.route, rates[i]!.map(Math.round)])) } };
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      http.close();
      await broker.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};
