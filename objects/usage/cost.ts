/**
 * Cost attribution (issue #26 §3): what each Durable Object costs on
 * Cloudflare's bill — SQLite rows written and read, and requests received —
 * counted per object instance in memory and shipped to its tenant's
 * UsageAggregator with the object's existing telemetry reports (meter.ts):
 * no extra request, no row per message. docs/tenants.md "What a tenant costs".
 *
 * - Rows: every cursor `ctx.storage.sql.exec` returns, its `rowsWritten` /
 *   `rowsRead` as the runtime reports them (read in batches of 256 and when
 *   drained, the last few again, which a caller may still have been
 *   iterating); `setAlarm` counts as one row written (Cloudflare bills it so).
 * - Requests: every call the runtime makes into the object — RPC methods,
 *   `fetch`, `alarm` one each, incoming WebSocket events (messages, close,
 *   error) 1/20 each (billed 20:1). An object's calls to its own
 *   methods are not requests (an AsyncLocalStorage scope names the instance
 *   an incoming call runs for).
 *
 * {@link metered} wraps a Durable Object class from the outside (worker/index.ts),
 * so counting is uniform and no method of the object changes. Counts are
 * telemetry: they ride along with the object's next report and never ask for
 * one of their own (a report would write a row, which would be counted, …);
 * an object evicted before its next report loses them. Objects that count
 * nothing per message (ConsumerGroup, TopicRegistry, AgentRegistry,
 * TenantDirectory) are wrapped with `reports`: their counts go to their
 * tenant's aggregator on their own, at most once per flush interval, with
 * no row and no alarm of their own (cost-report.ts).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { series } from "./catalog";
import { CostReporter, type CostReportOptions } from "./cost-report";
import type { Env } from "../env";

/** Request kinds of `mortarmq_tenant_do_requests_total{kind}`. */
export type RequestKind = "rpc" | "fetch" | "alarm" | "websocket";

/** Billed requests per incoming WebSocket message (Cloudflare bills 20 messages as one request). */
export const WS_MESSAGE_REQUESTS = 1 / 20;

export const ROWS_WRITTEN = series("mortarmq_tenant_rows_written_total");
export const ROWS_READ = series("mortarmq_tenant_rows_read_total");
const REQUEST_SERIES: Readonly<Record<RequestKind, string>> = {
  rpc: series("mortarmq_tenant_do_requests_total", { kind: "rpc" }),
  fetch: series("mortarmq_tenant_do_requests_total", { kind: "fetch" }),
  alarm: series("mortarmq_tenant_do_requests_total", { kind: "alarm" }),
  websocket: series("mortarmq_tenant_do_requests_total", { kind: "websocket" }),
};

/** Cursors kept unread before their rows are added up (a batch: no work per statement). */
const SETTLE_EVERY = 256;
/** Cursors re-read when drained (the last ones of a batch may still have been iterated when it was read). */
const RECENT_CURSORS = 8;

interface Tracked {
  cursor: { rowsRead: number; rowsWritten: number };
  read: number;
  written: number;
}

/** The billable units of one object instance since they were last drained. */
export class CostCounter {
  /**
   * Set on the second counter of an object whose operator calls are kept
   * apart (its `operator` counter): the object's main counter. Rows
   * written and read while such a call runs go here instead.
   */
  constructor(readonly main: CostCounter | null = null) {}

  private rowsWritten = 0;
  private rowsRead = 0;
  private readonly requests: Record<RequestKind, number> = { rpc: 0, fetch: 0, alarm: 0, websocket: 0 };
  private pending: Tracked[] = [];
  private recent: Tracked[] = [];

  /** One request of `kind` received (`n` billed requests: 1/20 per WebSocket message). */
  request(kind: RequestKind, n = 1): void {
    this.requests[kind] += n;
  }

  /** True when a request was counted since the last drain. */
  get requested(): boolean {
    return this.requests.rpc + this.requests.fetch + this.requests.alarm + this.requests.websocket > 0;
  }

  /**
   * Billed requests and rows written counted since the last drain, so far
   * (cursors still unread are read now). For deciding whether a report is
   * worth its own request (cost-report.ts); counts nothing.
   */
  units(): { requests: number; rowsWritten: number } {
    this.settle();
    for (const t of this.recent) this.readCursor(t);
    const r = this.requests;
    return { requests: r.rpc + r.fetch + r.alarm + r.websocket, rowsWritten: this.rowsWritten };
  }

  /** One row written outside SQL (`setAlarm`). */
  rowWritten(n = 1): void {
    this.rowsWritten += n;
  }

  /**
   * A cursor returned by `sql.exec`; its rows are read later, in batches
   * (no work per statement beyond keeping it): by the time they are read a
   * caller has iterated it, so its `rowsRead` is complete.
   */
  cursor(c: Tracked["cursor"]): void {
    this.pending.push({ cursor: c, read: 0, written: 0 });
    if (this.pending.length >= SETTLE_EVERY) this.settle();
  }

  /**
   * Hands every count since the last drain to `add(series, n)` (series of
   * the catalog; zeros left out) and resets.
   */
  drain(add: (series: string, n: number) => void): void {
    this.settle();
    for (const t of this.recent) this.readCursor(t);
    if (this.rowsWritten !== 0) add(ROWS_WRITTEN, this.rowsWritten);
    if (this.rowsRead !== 0) add(ROWS_READ, this.rowsRead);
    for (const k of Object.keys(this.requests) as RequestKind[]) {
      if (this.requests[k] !== 0) add(REQUEST_SERIES[k], this.requests[k]);
      this.requests[k] = 0;
    }
    this.rowsWritten = 0;
    this.rowsRead = 0;
  }

  private settle(): void {
    if (this.pending.length === 0) return;
    for (const t of this.pending) this.readCursor(t);
    for (const t of this.pending) this.recent.push(t);
    this.pending = [];
    if (this.recent.length > RECENT_CURSORS) this.recent.splice(0, this.recent.length - RECENT_CURSORS);
  }

  private readCursor(t: Tracked): void {
    let read: number, written: number;
    try {
      read = t.cursor.rowsRead;
      written = t.cursor.rowsWritten;
    } catch {
      return; // a cursor of a statement that failed
    }
    this.rowsRead += read - t.read;
    this.rowsWritten += written - t.written;
    t.read = read;
    t.written = written;
  }
}

/** Counters by the storage (and SQL handle) of their object. */
const byStorage = new WeakMap<object, CostCounter>();
const bySql = new WeakMap<object, CostCounter>();
/** The instance an incoming call runs for (its main or its operator counter): its own calls to its methods are not requests. */
const inside = new AsyncLocalStorage<CostCounter>();

/** The counter a statement of the object counted by `own` goes to: the operator counter while one of its operator calls runs. */
function scoped(own: CostCounter | undefined): CostCounter | undefined {
  const s = own && inside.getStore();
  return s && s.main === own ? s : own;
}

/** The cost counter of the object owning `storage`, if its class is {@link metered}. */
export function costCounterOf(storage: DurableObjectStorage): CostCounter | undefined {
  return byStorage.get(storage);
}

let patched = false;
/** Wraps `exec` and `setAlarm` of the storage classes once (every object's storage shares their prototypes). */
function patchStorage(storage: DurableObjectStorage): void {
  if (patched) return;
  patched = true;
  const sqlProto = Object.getPrototypeOf(storage.sql) as { exec: (...a: unknown[]) => Tracked["cursor"] };
  const exec = sqlProto.exec;
  sqlProto.exec = function (this: object, ...args: unknown[]) {
    const cursor = exec.apply(this, args);
    scoped(bySql.get(this))?.cursor(cursor);
    return cursor;
  };
  const storageProto = Object.getPrototypeOf(storage) as { setAlarm: (...a: unknown[]) => Promise<void> };
  const setAlarm = storageProto.setAlarm;
  storageProto.setAlarm = function (this: object, ...args: unknown[]) {
    scoped(byStorage.get(this))?.rowWritten();
    return setAlarm.apply(this, args);
  };
}

/** The request kind a method name is billed as, and how many requests one call is. */
function billed(name: string): [RequestKind, number] {
  if (name === "fetch" || name === "alarm") return [name, 1];
  if (name === "webSocketMessage" || name === "webSocketClose" || name === "webSocketError") return ["websocket", WS_MESSAGE_REQUESTS];
  return ["rpc", 1];
}

/** Every method name on the prototype chain of `cls` below Object.prototype, but the constructor. */
function methodNames(cls: { prototype: object }): Set<string> {
  const names = new Set<string>();
  for (let p: object | null = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const k of Object.getOwnPropertyNames(p)) {
      if (k === "constructor") continue;
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (d && typeof d.value === "function") names.add(k);
    }
  }
  return names;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type DurableObjectClass = abstract new (ctx: DurableObjectState, env: any) => object;

/** Options of {@link metered}. */
export interface MeteredOptions {
  /** The class has no telemetry its costs can ride along with: each instance reports them itself (cost-report.ts). */
  reports?: CostReportOptions;
}

/**
 * `Base` with its billable units counted (see the module doc): a subclass
 * whose constructor registers the instance's storage before `Base`'s runs
 * and whose every method counts the call as a request when it comes from
 * outside. Its `name` is `Base`'s; the class is otherwise the same. With
 * `reports`, a call from outside that finished (resolved or not) gives the
 * instance's CostReporter the chance to report (at most once per flush interval).
 */
export function metered<C extends DurableObjectClass>(Base: C, opts: MeteredOptions = {}): C {
  const counters = new WeakMap<object, CostCounter>();
  const reporters = new WeakMap<object, CostReporter>();
  const reports = opts.reports;
  const operatorMethods = new Set(reports?.operatorMethods ?? []);
  // A function, not a class: the constructor of `Base` runs inside the instance's scope (a class
  // constructor cannot call super() from a callback), so what it starts are the object's own calls.
  function Metered(this: unknown, ctx: DurableObjectState, env: unknown): object {
    const counter = new CostCounter();
    patchStorage(ctx.storage);
    byStorage.set(ctx.storage, counter);
    bySql.set(ctx.storage.sql, counter);
    const self = inside.run(counter, () => Reflect.construct(Base, [ctx, env], new.target ?? Metered) as object);
    counters.set(self, counter);
    if (reports) reporters.set(self, new CostReporter(ctx, env as Env, counter, new CostCounter(counter), reports));
    return self;
  }
  Object.setPrototypeOf(Metered, Base);
  Metered.prototype = Object.create(Base.prototype as object, { constructor: { value: Metered, writable: true, configurable: true } });
  for (const name of methodNames(Base)) {
    const proto = Base.prototype as Record<string, (...a: unknown[]) => unknown>;
    const [kind, n] = billed(name);
    Object.defineProperty(Metered.prototype, name, {
      configurable: true,
      writable: true,
      value: function (this: object, ...args: unknown[]) {
        const orig = proto[name]!; // looked up per call: a method replaced on the class later (a test's spy) is the one called
        const main = counters.get(this);
        const scope = inside.getStore();
        if (!main || scope === main || scope?.main === main) return orig.apply(this, args);
        const reporter = reporters.get(this);
        const c = reporter && operatorMethods.has(name) ? reporter.operator : main;
        c.request(kind, n);
        const result = inside.run(c, () => orig.apply(this, args));
        if (reporter) {
          const done = () => reporter.settled();
          if (result instanceof Promise) result.then(done, done);
          else done();
        }
        return result;
      },
    });
  }
  Object.defineProperty(Metered, "name", { value: Base.name });
  return Metered as unknown as C;
}
