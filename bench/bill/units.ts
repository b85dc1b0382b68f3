/**
 * The bill meter's counters (bench/bill/meter-entry.js, read with GET
 * /__bill/snapshot) and the pure arithmetic on them: the units a window
 * between two snapshots used, per object and in total, per message, and
 * the census of requests per object instance. No I/O here (test/unit/bill-units.test.ts).
 */
import { PRICES, type UnitRates } from "./prices";

/** Requests one object instance received, by kind. */
export interface ObjectRequests {
  /** RPC calls by method name. */
  rpc: Record<string, number>;
  fetch: number;
  alarm: number;
  /** Incoming WebSocket messages (webSocketMessage calls; billed 20:1). */
  wsMessage: number;
  wsClose: number;
  wsError: number;
}

/** A pending timer of an object. */
export interface MeterTimer {
  type: "timeout" | "interval";
  /** Its delay / period, ms. */
  ms: number;
  /** How long ago it was set, ms. */
  ageMs: number;
}

/** One object instance's counters since the runtime started. */
export interface ObjectMeter {
  /** Its class, e.g. "Partition". */
  kind: string;
  /** `ctx.id.toString()`. */
  id: string;
  /** `ctx.id.name` when it was addressed by name. */
  name: string | null;
  /** Times its constructor ran (each one after the first: the runtime had evicted it). */
  constructs: number;
  /** Requests being served now (a held request keeps it in memory). */
  inflight: number;
  requests: ObjectRequests;
  /** Cursor `rowsRead` / `rowsWritten` summed. */
  rowsRead: number;
  rowsWritten: number;
  /** `setAlarm` calls (each billed as one row written). */
  alarmSets: number;
  /** KV-style storage calls, as rows (keys). */
  kvRowsRead: number;
  kvRowsWritten: number;
  /** Outbound fetch() calls. */
  subrequests: number;
  /** Statement text (whitespace folded, ≤ 160 chars) → [rows read, rows written]. */
  statements: Record<string, [number, number]>;
  /** Pending timers now. */
  timers: MeterTimer[];
}

/** What GET /__bill/snapshot returns. */
export interface MeterSnapshot {
  /** Epoch ms of the snapshot. */
  at: number;
  startedAt: number;
  worker: { requests: number; subrequests: number };
  objects: ObjectMeter[];
}

/** How an object instance relates to traffic: the census flags per-tenant and global objects on a per-message path. */
export type ObjectScope = "per-connection" | "per-partition" | "per-group" | "per-mailbox" | "per-tenant" | "global";

/**
 * The scope of an object from its class and `idFromName` name
 * (objects/shared/names.ts: `<kind>/<tenant>/…`; `tenants-index/all`,
 * `usage-index/all` are the global indexes).
 */
export function objectScope(kind: string, name: string | null): ObjectScope {
  const first = name?.split("/")[0] ?? "";
  if (first.endsWith("-index") && name?.split("/")[1] === "all") return "global";
  switch (kind) {
    case "MortarSession":
    case "NatsSession":
      return "per-connection";
    case "Partition":
      return "per-partition";
    case "ConsumerGroup":
      return "per-group";
    case "Mailbox":
      return "per-mailbox";
    default:
      return "per-tenant";
  }
}

/** Whether a scope is one object shared by a whole tenant (or every tenant): it must stay off per-message paths. */
export const isSingletonScope = (s: ObjectScope) => s === "per-tenant" || s === "global";

/** One object's units in a window. */
export interface ObjectUnits {
  kind: string;
  id: string;
  name: string | null;
  scope: ObjectScope;
  /** Requests received: RPC calls + fetches + alarms + WebSocket messages (each counted once; not yet divided by 20). */
  requests: number;
  rpc: number;
  fetch: number;
  alarm: number;
  wsMessages: number;
  /** As billed: rpc + fetch + alarm + wsMessages / 20. */
  billedRequests: number;
  /** SQL rows + setAlarm + KV keys written. */
  rowsWritten: number;
  rowsRead: number;
  subrequests: number;
  /** Constructions in the window (> 0 for an object that existed before: it was evicted and started again). */
  constructs: number;
  /** RPC calls by method. */
  methods: Record<string, number>;
  /** Rows written by statement (only statements that wrote). */
  writers: Record<string, number>;
}

/** Units of a whole window. */
export interface WindowUnits {
  ms: number;
  workerRequests: number;
  workerSubrequests: number;
  objects: ObjectUnits[];
  totals: {
    requests: number;
    wsMessages: number;
    billedRequests: number;
    rowsWritten: number;
    rowsRead: number;
    subrequests: number;
  };
}

const EMPTY: ObjectMeter = {
  kind: "", id: "", name: null, constructs: 0, inflight: 0,
  requests: { rpc: {}, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 },
  rowsRead: 0, rowsWritten: 0, alarmSets: 0, kvRowsRead: 0, kvRowsWritten: 0, subrequests: 0, statements: {}, timers: [],
};

const sum = (xs: Iterable<number>) => {
  let s = 0;
  for (const x of xs) s += x;
  return s;
};

/** The units used between `before` and `after` (snapshots of one runtime), objects that did nothing left out. */
export function windowUnits(before: MeterSnapshot, after: MeterSnapshot): WindowUnits {
  const prior = new Map(before.objects.map((o) => [`${o.kind}|${o.id}`, o]));
  const objects: ObjectUnits[] = [];
  for (const a of after.objects) {
    const b = prior.get(`${a.kind}|${a.id}`) ?? EMPTY;
    const methods: Record<string, number> = {};
    for (const [m, n] of Object.entries(a.requests.rpc)) {
      const d = n - (b.requests.rpc[m] ?? 0);
      if (d > 0) methods[m] = d;
    }
    const writers: Record<string, number> = {};
    for (const [s, [, w]] of Object.entries(a.statements)) {
      const d = w - (b.statements[s]?.[1] ?? 0);
      if (d > 0) writers[s] = d;
    }
    const rpc = sum(Object.values(methods));
    const fetch = a.requests.fetch - b.requests.fetch;
    const alarm = a.requests.alarm - b.requests.alarm;
    const wsMessages = a.requests.wsMessage - b.requests.wsMessage;
    const u: ObjectUnits = {
      kind: a.kind, id: a.id, name: a.name, scope: objectScope(a.kind, a.name),
      requests: rpc + fetch + alarm + wsMessages, rpc, fetch, alarm, wsMessages,
      billedRequests: rpc + fetch + alarm + wsMessages / PRICES.wsMessagesPerRequest,
      rowsWritten: a.rowsWritten - b.rowsWritten + (a.alarmSets - b.alarmSets) + (a.kvRowsWritten - b.kvRowsWritten),
      rowsRead: a.rowsRead - b.rowsRead + (a.kvRowsRead - b.kvRowsRead),
      subrequests: a.subrequests - b.subrequests,
      constructs: a.constructs - b.constructs,
      methods, writers,
    };
    if (u.requests || u.rowsWritten || u.rowsRead || u.subrequests || u.constructs) objects.push(u);
  }
  const t = (f: (o: ObjectUnits) => number) => sum(objects.map(f));
  return {
    ms: after.at - before.at,
    workerRequests: after.worker.requests - before.worker.requests,
    workerSubrequests: after.worker.subrequests - before.worker.subrequests,
    objects,
    totals: {
      requests: t((o) => o.requests), wsMessages: t((o) => o.wsMessages), billedRequests: t((o) => o.billedRequests),
      rowsWritten: t((o) => o.rowsWritten), rowsRead: t((o) => o.rowsRead), subrequests: t((o) => o.subrequests) + after.worker.subrequests - before.worker.subrequests,
    },
  };
}

/** A window's billable units divided by `per` (messages, minutes, …). */
export function unitRates(w: WindowUnits, per: number): UnitRates {
  return {
    doRequests: w.totals.billedRequests / per,
    workerRequests: w.workerRequests / per,
    rowsWritten: w.totals.rowsWritten / per,
    rowsRead: w.totals.rowsRead / per,
  };
}

/** Units of one object class in a window. */
export interface KindUnits {
  kind: string;
  scope: ObjectScope;
  instances: number;
  requests: number;
  billedRequests: number;
  rowsWritten: number;
  rowsRead: number;
}

/** A window's units grouped by object class and scope, largest rows written first. */
export function byKind(w: WindowUnits): KindUnits[] {
  const m = new Map<string, KindUnits>();
  for (const o of w.objects) {
    const key = `${o.kind}|${o.scope}`;
    const k = m.get(key) ?? { kind: o.kind, scope: o.scope, instances: 0, requests: 0, billedRequests: 0, rowsWritten: 0, rowsRead: 0 };
    k.instances++;
    k.requests += o.requests;
    k.billedRequests += o.billedRequests;
    k.rowsWritten += o.rowsWritten;
    k.rowsRead += o.rowsRead;
    m.set(key, k);
  }
  return [...m.values()].sort((a, b) => b.rowsWritten - a.rowsWritten || b.requests - a.requests);
}

/**
 * What requests `objects` received, summed: RPC methods by name, and
 * `(fetch)`, `(alarm)`, `(ws message)` for the others; zero counts left out.
 */
export function requestMix(objects: ObjectUnits[]): Record<string, number> {
  const mix: Record<string, number> = {};
  const add = (k: string, n: number) => n > 0 && (mix[k] = (mix[k] ?? 0) + n);
  for (const o of objects) {
    for (const [m, n] of Object.entries(o.methods)) add(m, n);
    add("(fetch)", o.fetch);
    add("(alarm)", o.alarm);
    add("(ws message)", o.wsMessages);
  }
  return mix;
}

/** One object instance in the census. */
export interface CensusEntry {
  kind: string;
  scope: ObjectScope;
  name: string | null;
  /** Requests it received per 1,000 messages (every kind counted once, WebSocket messages included). */
  perThousand: number;
  /** Its RPC methods per 1,000 messages. */
  methods: Record<string, number>;
  /** A per-tenant or global object above `limit` per 1,000 messages. */
  hot: boolean;
}

/**
 * The requests each object instance received per 1,000 messages in a
 * window, most first; per-tenant and global instances above `limit`
 * (default 1) per 1,000 are flagged `hot` (issue #27 item 4).
 */
export function census(w: WindowUnits, messages: number, limit = 1): CensusEntry[] {
  const per = (n: number) => Math.round((n * 1000 * 1000) / messages) / 1000;
  return w.objects
    .filter((o) => o.requests > 0)
    .map((o) => {
      const perThousand = per(o.requests);
      return {
        kind: o.kind, scope: o.scope, name: o.name, perThousand,
        methods: Object.fromEntries(Object.entries(o.methods).map(([m, n]) => [m, per(n)])),
        hot: isSingletonScope(o.scope) && perThousand > limit,
      };
    })
    .sort((a, b) => b.perThousand - a.perThousand);
}

/** Rows written by statement over all objects of a window, most first (where the writes go). */
export function topWriters(w: WindowUnits, n = 8): { kind: string; statement: string; rows: number }[] {
  const m = new Map<string, { kind: string; statement: string; rows: number }>();
  for (const o of w.objects) {
    for (const [s, rows] of Object.entries(o.writers)) {
      const key = `${o.kind}|${s}`;
      const e = m.get(key) ?? { kind: o.kind, statement: s, rows: 0 };
      e.rows += rows;
      m.set(key, e);
    }
  }
  return [...m.values()].sort((a, b) => b.rows - a.rows).slice(0, n);
}
