/**
 * `npm run bench -- bill` (issue #26 §1): what each workload costs on
 * Cloudflare, counted on the real local runtime — the production bundle
 * (`wrangler deploy --dry-run`) in Miniflare with the bill meter
 * (bench/bill/meter-entry.js) around every Durable Object class — and
 * priced with Cloudflare's price list (bench/bill/prices.ts).
 *
 * Workloads (bench/bill/workloads.ts, idle.ts), each on a fresh broker:
 * (a) MortarMQ pipelined PUB→MSG→ACK, (b) the same one at a time, (c) mq9
 * HTTP one at a time, (d) mq9 HTTP batched, (e) mq9 over NATS WebSocket,
 * (f) idle clients per minute, (g) telemetry per busy object, (h) push.
 *
 * Not priced: Worker CPU ($0.02/M ms: the runtime does not tell per
 * request) and busy objects' duration (shared by every request active on an
 * object: it depends on the traffic's spread over time, not on the
 * message); (f) prices the duration of an object that cannot hibernate.
 *
 * Options: `--workloads a,b,…` (default all), `--bulk 2000` (a, d, e),
 * `--single 200` (b, c, h), `--settle-ms 12000`, `--idle-min 1` (f; 5 for
 * the record; after a set-up window counted apart, bench/bill/idle.ts),
 * `--idle-clients member,nats,poll` (f: which idle clients, default all),
 * `--busy-min 1` (g). (f) only: `--workloads f`. Each idle client gets a
 * verdict against issue #26 §2 (f)'s budget (bench/bill/verdict.ts).
 * The docs section: `npx tsx bench/tools/gen-cost-doc.ts`.
 */
import { IDLE_CLIENTS, IDLE_WARM_MS, idleClients, telemetryPerBusyObject, type IdleClientId, type IdleRun, type TelemetryRun } from "../bill/idle";
import { idleVerdict, verdictText } from "../bill/verdict";
import { PRICES, pricePerMillion, QUEUES_PER_M_MESSAGES, residentDollarsPerHour } from "../bill/prices";
import { byKind, requestMix, topWriters, unitRates } from "../bill/units";
import {
  mortarLockstep, mortarPipelined, mq9HttpBatched, mq9HttpSingle, mq9NatsPipelined, onFreshBroker, pushDelivery, PUSH_VARS,
  type WorkloadOptions, type WorkloadRun,
} from "../bill/workloads";
import type { BenchSuite } from "../runner";

/** Issue #26's table (what was measured before this bench existed), for comparison. */
export const ISSUE_26_FIGURES: Record<string, { doRequests: number; rowsWritten: number; dollarsPerM: number }> = {
  a: { doRequests: 0.014, rowsWritten: 2.14, dollarsPerM: 2.15 },
  b: { doRequests: 5.3, rowsWritten: 17.4, dollarsPerM: 18.26 },
  c: { doRequests: 3.1, rowsWritten: 8.8, dollarsPerM: 10.2 },
  d: { doRequests: 1.04, rowsWritten: 2.79, dollarsPerM: 3.26 },
  e: { doRequests: 0.04, rowsWritten: 2.16, dollarsPerM: 2.17 },
};

const MESSAGE_WORKLOADS: Record<string, { vars?: Record<string, string>; run: (b: Parameters<typeof mortarPipelined>[0], o: WorkloadOptions) => Promise<WorkloadRun> }> = {
  a: { run: mortarPipelined },
  b: { run: mortarLockstep },
  c: { run: mq9HttpSingle },
  d: { run: mq9HttpBatched },
  e: { run: mq9NatsPipelined },
  h: { vars: PUSH_VARS, run: pushDelivery },
};

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const r2 = (x: number) => Math.round(x * 100) / 100;

/** One message workload's record in bill.json. */
export interface BillWorkload {
  id: string;
  title: string;
  messages: number;
  /** Billable units per message. */
  perMessage: { doRequests: number; wsMessages: number; workerRequests: number; rowsWritten: number; rowsRead: number; subrequests: number };
  /** $ per million messages by unit and in total, and the ratio to Queues. */
  dollarsPerM: ReturnType<typeof pricePerMillion>;
  byKind: { kind: string; scope: string; instances: number; requestsPerMessage: number; rowsWrittenPerMessage: number }[];
  topWriters: { kind: string; statement: string; rowsPerMessage: number }[];
  phases: { name: string; doRequests: number; rowsWritten: number }[];
}

/** The record of one message workload. */
export function billWorkload(r: WorkloadRun): BillWorkload {
  const u = unitRates(r.window, r.messages);
  const per = (x: number) => r3(x / r.messages);
  return {
    id: r.id, title: r.title, messages: r.messages,
    perMessage: {
      doRequests: r3(u.doRequests), wsMessages: per(r.window.totals.wsMessages), workerRequests: r3(u.workerRequests),
      rowsWritten: r3(u.rowsWritten), rowsRead: r3(u.rowsRead), subrequests: per(r.window.totals.subrequests),
    },
    dollarsPerM: Object.fromEntries(Object.entries(pricePerMillion(u)).map(([k, v]) => [k, r3(v)])) as unknown as ReturnType<typeof pricePerMillion>,
    byKind: byKind(r.window).map((k) => ({ kind: k.kind, scope: k.scope, instances: k.instances, requestsPerMessage: per(k.billedRequests), rowsWrittenPerMessage: per(k.rowsWritten) })),
    topWriters: topWriters(r.window, 8).map((w) => ({ kind: w.kind, statement: w.statement, rowsPerMessage: per(w.rows) })),
    phases: r.phases.map((p) => {
      const pu = unitRates(p.window, p.messages);
      return { name: p.name, doRequests: r3(pu.doRequests), rowsWritten: r3(pu.rowsWritten) };
    }),
  };
}

/** One idle client's record in bill.json. */
export function billIdle(r: IdleRun) {
  const resident = r.objects.filter((o) => !o.couldHibernate).length;
  const polledRows = r.window.objects.filter((o) => o.kind === "Mailbox").reduce((n, o) => n + o.rowsWritten, 0);
  const setupUnits = unitRates(r.setup, 1);
  return {
    id: r.id, client: r.client, minutes: r2(r.minutes),
    /** Issue #26 §2 (f)'s budget on the steady state (bench/bill/verdict.ts). */
    verdict: idleVerdict({
      doRequestsPerMinute: r.perMinute.doRequests, rowsWrittenPerMinute: r.perMinute.rowsWritten,
      ...(r.clientPollsPerMinute !== undefined ? { pollsPerMinute: r.clientPollsPerMinute, polledObjectRowsPerMinute: polledRows / r.minutes } : {}),
      objects: r.objects,
    }),
    /** Once per connection: connecting, subscribing, the first telemetry report, the tenant's registration; before the steady state. */
    setup: {
      seconds: r2(r.setup.ms / 1000),
      doRequests: r2(setupUnits.doRequests), workerRequests: r2(setupUnits.workerRequests),
      rowsWritten: r2(setupUnits.rowsWritten), rowsRead: r2(setupUnits.rowsRead),
      ...(r.setupPolls !== undefined ? { clientPolls: r.setupPolls } : {}),
      topWriters: topWriters(r.setup, 6).map((w) => ({ kind: w.kind, statement: w.statement, rows: w.rows })),
    },
    perMinute: {
      doRequests: r2(r.perMinute.doRequests), requestsReceived: r2(r.rawRequestsPerMinute), workerRequests: r2(r.perMinute.workerRequests),
      rowsWritten: r2(r.perMinute.rowsWritten), rowsRead: r2(r.perMinute.rowsRead),
      ...(r.clientPollsPerMinute !== undefined ? { clientPolls: r2(r.clientPollsPerMinute) } : {}),
    },
    /** $ per month (30 days) for requests + rows, and for the duration of the objects that cannot hibernate. */
    dollarsPerMonth: {
      units: r2(pricePerMillion(r.perMinute).total * 60 * 24 * 30 / 1e6),
      duration: r2(residentDollarsPerHour(resident) * 24 * 30),
    },
    objects: r.objects.map((o) => ({
      kind: o.kind, name: o.name, couldHibernate: o.couldHibernate, inflight: o.inflight,
      timers: o.timers.map((t) => `${t.type} ${t.ms} ms`), evictedWhileIdle: o.evictedWhileIdle, evictedBeforeNextMessage: o.evictedBeforeNextMessage,
    })),
    byKind: byKind(r.window).map((k) => ({
      kind: k.kind, requestsPerMinute: r2(k.requests / r.minutes), rowsWrittenPerMinute: r2(k.rowsWritten / r.minutes),
      requestMixPerMinute: Object.fromEntries(Object.entries(requestMix(r.window.objects.filter((o) => o.kind === k.kind))).map(([m, n]) => [m, r2(n / r.minutes)])),
    })),
    topWriters: topWriters(r.window, 6).map((w) => ({ kind: w.kind, statement: w.statement, rowsPerMinute: r2(w.rows / r.minutes) })),
  };
}

/** The telemetry record in bill.json. */
export function billTelemetry(t: TelemetryRun) {
  return {
    minutes: r2(t.minutes),
    ratePerS: t.ratePerS,
    busyObjects: t.busyObjects.map((o) => o.kind),
    perBusyObjectPerMinute: {
      reporterRows: r2(t.reporterRowsPerObjectMinute), aggregatorRows: r2(t.aggregatorRowsPerObjectMinute), aggregatorRequests: r2(t.aggregatorRequestsPerObjectMinute),
    },
    perBusyObjectPerHour: {
      rowsWritten: Math.round((t.reporterRowsPerObjectMinute + t.aggregatorRowsPerObjectMinute) * 60),
      aggregatorRequests: Math.round(t.aggregatorRequestsPerObjectMinute * 60),
    },
    topWriters: topWriters(t.window, 6).map((w) => ({ kind: w.kind, statement: w.statement, rowsPerMinute: r2(w.rows / t.minutes) })),
  };
}

export const suite: BenchSuite = {
  name: "bill",
  description: "Cloudflare billable units and $ per million messages per workload (issue #26 §1), production bundle in Miniflare with the bill meter",
  standalone: true,
  async run({ options }) {
    const selected = new Set((options.workloads ?? "a,b,c,d,e,f,g,h").split(","));
    const o: WorkloadOptions = {
      settleMs: Number(options["settle-ms"] ?? 12_000),
      bulk: Number(options.bulk ?? 2000),
      single: Number(options.single ?? 200),
    };
    const idleMin = Number(options["idle-min"] ?? 1);
    const idleClientIds = (options["idle-clients"] ?? IDLE_CLIENTS.join(",")).split(",") as IdleClientId[];
    for (const c of idleClientIds) if (!IDLE_CLIENTS.includes(c)) throw new Error(`--idle-clients: unknown client ${c} (one of ${IDLE_CLIENTS.join(", ")})`);
    const busyMin = Number(options["busy-min"] ?? 1);
    const rows: Record<string, string | number>[] = [];
    const workloads: BillWorkload[] = [];
    for (const [id, w] of Object.entries(MESSAGE_WORKLOADS)) {
      if (!selected.has(id)) continue;
      const run = await onFreshBroker(w.vars ?? {}, (b) => w.run(b, o));
      const rec = billWorkload(run);
      workloads.push(rec);
      const was = ISSUE_26_FIGURES[id];
      rows.push({
        workload: `(${id}) ${run.title}`.slice(0, 70), msgs: rec.messages,
        "DO req/msg": rec.perMessage.doRequests, "Worker req/msg": rec.perMessage.workerRequests,
        "rows W/msg": rec.perMessage.rowsWritten, "rows R/msg": rec.perMessage.rowsRead,
        "$/M msgs": r2(rec.dollarsPerM.total), "× Queues": r2(rec.dollarsPerM.vsQueues),
        "issue #26": was ? `${was.doRequests} req, ${was.rowsWritten} rows, $${was.dollarsPerM}` : "—",
      });
    }
    let idle: ReturnType<typeof billIdle>[] | undefined;
    if (selected.has("f")) {
      idle = (await idleClients(idleMin * 60_000, idleClientIds)).map(billIdle);
      for (const i of idle) {
        console.log(`(f) ${i.client}: ${verdictText(i.verdict)}; set-up once: ${i.setup.doRequests} requests, ${i.setup.rowsWritten} rows in ${i.setup.seconds} s`);
        for (const w of i.topWriters) console.log(`    ${w.rowsPerMinute} rows/min  ${w.kind}  ${w.statement}`);
        rows.push({
          workload: `(f) idle ${i.client}`.slice(0, 70), msgs: `${i.minutes} min`,
          "DO req/msg": `${i.perMinute.doRequests}/min`, "Worker req/msg": `${i.perMinute.workerRequests}/min`,
          "rows W/msg": `${i.perMinute.rowsWritten}/min`, "rows R/msg": `${i.perMinute.rowsRead}/min`,
          "$/M msgs": `$${i.dollarsPerMonth.units}+${i.dollarsPerMonth.duration}/mo`,
          "× Queues": i.objects.map((x) => `${x.kind}: ${x.couldHibernate ? "can hibernate" : `resident (${[...x.timers, ...(x.inflight ? [`${x.inflight} held`] : [])].join(", ")})`}${x.evictedWhileIdle || x.evictedBeforeNextMessage ? ", evicted" : ", not evicted"}`).join("; "),
          "issue #26": i.verdict.met ? "(f) met" : "(f) NOT met",
        });
      }
    }
    let telemetry: ReturnType<typeof billTelemetry> | undefined;
    if (selected.has("g")) {
      telemetry = billTelemetry(await telemetryPerBusyObject(busyMin * 60_000));
      rows.push({
        workload: `(g) telemetry per busy object (${telemetry.busyObjects.join(", ")})`.slice(0, 70), msgs: `${telemetry.minutes} min`,
        "DO req/msg": `${telemetry.perBusyObjectPerMinute.aggregatorRequests}/min`, "Worker req/msg": "",
        "rows W/msg": `${r2(telemetry.perBusyObjectPerMinute.reporterRows + telemetry.perBusyObjectPerMinute.aggregatorRows)}/min`, "rows R/msg": "",
        "$/M msgs": `${telemetry.perBusyObjectPerHour.rowsWritten} rows/h`,
        "× Queues": `object ${telemetry.perBusyObjectPerMinute.reporterRows} + aggregator ${telemetry.perBusyObjectPerMinute.aggregatorRows} rows/min at ${telemetry.ratePerS} msg/s`, "issue #26": "",
      });
    }
    return {
      rows,
      detail: {
        prices: PRICES, queuesPerMillionMessages: QUEUES_PER_M_MESSAGES,
        options: { ...o, idleMinutes: idleMin, idleWarmSeconds: IDLE_WARM_MS / 1000, busyMinutes: busyMin },
        notPriced: "Worker CPU and busy objects' duration (see bench/suites/bill.ts)",
        workloads, idle, telemetry, issue26: ISSUE_26_FIGURES,
      },
    };
  },
};
