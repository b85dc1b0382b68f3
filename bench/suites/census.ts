/**
 * `npm run bench -- census` (issue #27 item 4): for pipelined PUB, HTTP
 * SEND, FETCH/ACK and NATS SEND, the requests each Durable Object instance
 * received per 1,000 messages, grouped by object class and marked
 * per-tenant / global (one object a whole tenant, or every tenant, shares)
 * or per-connection / partition / group / mailbox. A per-tenant or global
 * object above 1 request per 1,000 messages is flagged HOT: it caps the
 * tenant's throughput at one object's (~1,000 requests/s) and adds a round
 * trip to wherever it lives (DESIGN.md §10).
 *
 * Same meter and workloads as the bill suite (bench/bill/), each on a fresh
 * broker; steady state = after the clients' set-up (connect, declare,
 * subscribe, mailbox create, a first message). The FETCH/ACK window
 * includes the settle, in which the telemetry flushes of the run land.
 * Options: `--bulk 2000` (messages per workload), `--settle-ms 12000`.
 */
import { census, type CensusEntry, type WindowUnits } from "../bill/units";
import { mortarPipelined, mq9HttpBatched, mq9NatsPipelined, onFreshBroker, type WorkloadOptions } from "../bill/workloads";
import type { BenchSuite } from "../runner";

/** One object class in one workload's census. */
export interface CensusKind {
  workload: string;
  kind: string;
  scope: string;
  instances: number;
  /** Requests per 1,000 messages: the busiest instance, and all instances together. */
  maxPerThousand: number;
  totalPerThousand: number;
  /** RPC methods of the busiest instance per 1,000 messages. */
  methods: Record<string, number>;
  hot: boolean;
}

/** Groups a workload's census entries by object class (busiest class first). */
export function censusByKind(workload: string, entries: CensusEntry[]): CensusKind[] {
  const m = new Map<string, CensusKind>();
  for (const e of entries) {
    const key = `${e.kind}|${e.scope}`;
    const k = m.get(key);
    if (!k) {
      m.set(key, { workload, kind: e.kind, scope: e.scope, instances: 1, maxPerThousand: e.perThousand, totalPerThousand: e.perThousand, methods: e.methods, hot: e.hot });
      continue;
    }
    k.instances++;
    k.totalPerThousand = Math.round((k.totalPerThousand + e.perThousand) * 1000) / 1000;
    if (e.perThousand > k.maxPerThousand) {
      k.maxPerThousand = e.perThousand;
      k.methods = e.methods;
    }
    k.hot ||= e.hot;
  }
  return [...m.values()].sort((a, b) => b.maxPerThousand - a.maxPerThousand);
}

export const suite: BenchSuite = {
  name: "census",
  description: "requests per Durable Object instance per 1,000 messages (pipelined PUB, HTTP SEND, FETCH/ACK, NATS SEND); per-tenant/global objects above 1 per 1,000 flagged (issue #27 item 4)",
  standalone: true,
  async run({ options }) {
    const o: WorkloadOptions = { settleMs: Number(options["settle-ms"] ?? 12_000), bulk: Number(options.bulk ?? 2000), single: 0 };
    const windows: { workload: string; messages: number; window: WindowUnits }[] = [];
    const a = await onFreshBroker({}, (b) => mortarPipelined(b, o));
    windows.push({ workload: "MortarMQ pipelined PUB (→ MSG → ACK)", messages: a.messages, window: a.window });
    const d = await onFreshBroker({}, (b) => mq9HttpBatched(b, o));
    windows.push({ workload: "mq9 HTTP SEND (32 concurrent)", messages: d.phases[0]!.messages, window: d.phases[0]!.window });
    windows.push({ workload: "mq9 HTTP FETCH 100 / ACK (+ settle)", messages: d.phases[1]!.messages, window: d.phases[1]!.window });
    const e = await onFreshBroker({}, (b) => mq9NatsPipelined(b, o));
    windows.push({ workload: "mq9 NATS SEND (pipelined)", messages: e.phases[0]!.messages, window: e.phases[0]!.window });
    const kinds: CensusKind[] = [];
    const instances: (CensusEntry & { workload: string })[] = [];
    for (const w of windows) {
      const entries = census(w.window, w.messages);
      instances.push(...entries.map((x) => ({ workload: w.workload, ...x })));
      kinds.push(...censusByKind(w.workload, entries));
    }
    const hot = kinds.filter((k) => k.hot);
    return {
      rows: kinds.map((k) => ({
        workload: k.workload, object: k.kind, scope: k.scope, instances: k.instances,
        "req/1k msgs (busiest)": k.maxPerThousand,
        methods: Object.entries(k.methods).map(([m, n]) => `${m} ${n}`).join(", ").slice(0, 60),
        flag: k.hot ? "HOT (> 1 per 1,000)" : "",
      })),
      detail: {
        messages: o.bulk, settleMs: o.settleMs, limitPerThousand: 1,
        hot: hot.map((k) => `${k.workload}: ${k.kind} ${k.maxPerThousand} per 1,000`),
        kinds, instances,
      },
    };
  },
};
