/**
 * Cost of token scopes (docs/tenants.md "Permissions", issue 31): the same
 * work with an issued token without scopes and one with scopes, on a second
 * broker started by this suite (ADMIN_TOKEN, one tenant, both tokens of it):
 * - pipelined MortarMQ PUB (WINDOW in flight, 128 B, one partition);
 * - mq9 SEND over NATS (nats.js through the launcher's TCP bridge,
 *   NATS_CONCURRENCY requests in flight, 64-byte payload).
 * The scoped token carries a realistic list (allow publish/admin on its
 * topics, send/create on its mailboxes, a deny); every operation runs the
 * decision function. Cases run interleaved in ROUNDS slices (the pair's
 * order flips every round). The result is the ratio scoped ÷ unscoped:
 * `paired` = the median over rounds of each round's two adjacent slices'
 * req/s ratio (robust to the load of a shared machine drifting between
 * rounds), `rate` = of the median req/s, `p50` = of the median latency —
 * 1.0 = no cost. On a loaded machine those ratios are noisy, so the suite
 * also times the decision itself in this process (`decide` for a PUB and a
 * SEND with the scoped list, DECISIONS calls): CPU ns per decision, the
 * whole per-message cost scopes add.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { startLocalBroker } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { benchBridge } from "../bridge";
import { httpCaller } from "../http";
import type { BenchSuite } from "../runner";
import { median, round3, summarize, timeit } from "../stats";
import { decide, parseScopes, type Operation } from "../../wire/admin/scopes";

const ADMIN = "bench-admin";
const TENANT = "scoped";
const WINDOW = 1000;
const NATS_CONCURRENCY = 256;
const ROUNDS = 8;
const SLICE_MS = 1_500;
const VALUE = new Uint8Array(128).fill(0x61);
const PAYLOAD = new TextEncoder().encode(JSON.stringify({ text: "x".repeat(48) }));
/** What the scoped token carries: a few allows (the matching one last) and a deny. */
const ALLOW = ["mq9.query:audit.>", "mortar.consume:bench.>/workers", "mortar.admin:bench.>", "mortar.publish:bench.>", "mq9.create", "mq9.send:bench.>"];
const DENY = ["mq9.*:secret.>", "mortar.publish:bench.frozen"];

const DECISIONS = 1_000_000;

/** CPU ns (user + system, so a loaded machine's waiting is not counted) per `decide(op, name)` with the scoped list, the median of 5 runs of DECISIONS calls. */
function decisionNs(op: Operation, name: string): number {
  const scopes = parseScopes(ALLOW, DENY);
  const r = { name };
  const runs: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = process.cpuUsage();
    let allowed = 0;
    for (let i = 0; i < DECISIONS; i++) if (decide(scopes, op, r).allowed) allowed++;
    if (allowed !== DECISIONS) throw new Error(`${op} on ${name} is not allowed by the bench scopes`);
    const used = process.cpuUsage(t0);
    runs.push(((used.user + used.system) * 1000) / DECISIONS);
  }
  return Math.round(median(runs));
}

interface Case { route: string; op: () => Promise<void>; concurrency: number }

export const suite: BenchSuite = {
  name: "scopes",
  description: `token scopes cost: pipelined MortarMQ PUB (${WINDOW} in flight) and mq9 SEND over NATS (${NATS_CONCURRENCY} in flight), scoped vs unscoped token, ${ROUNDS} interleaved rounds`,
  standalone: true,
  async run() {
    const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-bench-scopes-"));
    const broker = await startLocalBroker({ stateDir, port: 0, vars: { ADMIN_TOKEN: ADMIN } });
    const http = httpCaller(broker.port, 4);
    const clients: { close(): Promise<void> }[] = [];
    const bridge = await benchBridge(broker, "nats");
    try {
      await http.call("POST", "/admin/tenants", { token: ADMIN, body: JSON.stringify({ id: TENANT }) });
      const issue = async (scopes: object) =>
        (JSON.parse(await http.call("POST", `/admin/tenants/${TENANT}/tokens`, { token: ADMIN, body: JSON.stringify(scopes) })) as { token: string }).token;
      const tokens = { unscoped: await issue({}), scoped: await issue({ allow: ALLOW, deny: DENY }) };

      const pubCase = async (kind: keyof typeof tokens): Promise<Case> => {
        const client = await MortarClient.connect(broker.url, { token: tokens[kind] });
        clients.push(client);
        const { topicId } = await client.declare(`bench.${kind}`, 1);
        return { route: `MortarMQ PUB, ${kind} token`, op: () => client.publish(topicId, 0, null, VALUE).then(() => {}), concurrency: WINDOW };
      };
      const natsCase = async (kind: keyof typeof tokens): Promise<Case> => {
        const nc: NatsConnection = await connect({ servers: `127.0.0.1:${bridge.port}`, token: tokens[kind] });
        clients.push(nc);
        const box = `bench.${kind}.inbox`;
        await nc.request("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: box, ttl: 3600 }), { timeout: 30_000 });
        const subject = `$mq9.AI.MSG.SEND.${box}`;
        const probe = JSON.parse((await nc.request(subject, PAYLOAD, { timeout: 30_000 })).string()) as { error: string };
        if (probe.error !== "") throw new Error(`mq9 SEND with the ${kind} token failed before the benchmark: ${probe.error}`);
        return { route: `NATS mq9 SEND, ${kind} token`, op: () => nc.request(subject, PAYLOAD, { timeout: 30_000 }).then(() => {}), concurrency: NATS_CONCURRENCY };
      };
      // pairs: [unscoped, scoped]
      const pairs: [Case, Case][] = [
        [await pubCase("unscoped"), await pubCase("scoped")],
        [await natsCase("unscoped"), await natsCase("scoped")],
      ];
      const cases = pairs.flat();
      for (const c of cases) await timeit(500, c.concurrency, c.op); // warm-up
      const rates = cases.map(() => [] as number[]);
      const lat = cases.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [p, pair] of pairs.entries()) {
          const order = round % 2 === 0 ? [0, 1] : [1, 0];
          for (const k of order) {
            const r = await timeit(SLICE_MS, pair[k]!.concurrency, pair[k]!.op);
            rates[p * 2 + k]!.push(r.rate);
            for (const x of r.latenciesMs) lat[p * 2 + k]!.push(x);
          }
        }
      }
      const decisionNsPer = { "mortar.publish": decisionNs("mortar.publish", "bench.scoped"), "mq9.send": decisionNs("mq9.send", "bench.scoped.inbox") };
      const stats = cases.map((_, i) => ({ rate: median(rates[i]!), ...summarize(lat[i]!) }));
      const ratios = Object.fromEntries(pairs.map(([u], p) => [u.route.replace(/, unscoped token$/, ""), {
        paired: round3(median(rates[p * 2 + 1]!.map((r, k) => r / rates[p * 2]![k]!))),
        rate: round3(stats[p * 2 + 1]!.rate / stats[p * 2]!.rate),
        p50: round3(stats[p * 2 + 1]!.p50 / stats[p * 2]!.p50),
      }]));
      const rows = cases.map((c, i) => ({
        case: c.route,
        "req/s": Math.round(stats[i]!.rate),
        p50_ms: stats[i]!.p50,
        p99_ms: stats[i]!.p99,
        "scoped ÷ unscoped (paired)": i % 2 === 0 ? "—" : round3(median(rates[i]!.map((r, k) => r / rates[i - 1]![k]!))),
      }));
      return {
        rows,
        detail: {
          allow: ALLOW, deny: DENY, window: WINDOW, natsConcurrency: NATS_CONCURRENCY, rounds: ROUNDS, sliceMs: SLICE_MS, natsBridge: bridge.where,
          ratios,
          decisionNsPer,
          ratiosNote: "scoped ÷ unscoped, same run, interleaved: paired = median over rounds of the round's req/s ratio, rate = of the median req/s over rounds, p50 = of the median latency (above 1 = the scoped token's is longer)",
          ratesPerRound: Object.fromEntries(cases.map((c, i) => [c.route, rates[i]!.map(Math.round)])),
        },
      };
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      await bridge.close();
      http.close();
      await broker.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};
