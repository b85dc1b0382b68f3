/**
 * The bill bench's entry module (bench/bill/host.ts hosts it in Miniflare in
 * place of the production bundle's own entry): it imports the bundle that
 * `wrangler deploy --dry-run` wrote (`./index.js`, unchanged) and re-exports
 * it with every Durable Object class wrapped from the outside, to count
 * Cloudflare's billable units as the runtime reports them. Nothing in the
 * broker changes; this module exists only in the bench's Miniflare.
 *
 * Counted, per object instance (class + `ctx.id`):
 * - requests received: every call the runtime makes into the object — RPC
 *   methods by name, `fetch`, `alarm`, `webSocketMessage` (billed 20:1),
 *   `webSocketClose` / `webSocketError`. An object's calls to its own methods
 *   are not requests: each incoming call runs in an AsyncLocalStorage scope
 *   naming its instance, and a call made inside that scope is internal;
 * - SQLite rows: every cursor that `ctx.storage.sql.exec` returns, its
 *   `rowsRead` / `rowsWritten` read once the statement ran (a microtask
 *   later, and again at the next snapshot for the last cursors, which a caller
 *   may still be iterating), also per statement text; `setAlarm` (billed as
 *   one row written) and KV-style `get` / `put` / `delete` / `list` (billed as
 *   rows read / written per key);
 * - outbound `fetch()` subrequests (push);
 * - duration signals: constructions (a second one means the runtime evicted
 *   the object in between), calls in flight (a held request keeps it in
 *   memory) and pending `setTimeout` / `setInterval` timers (any keeps it
 *   resident).
 * And for the Worker: requests and subrequests. `GET /__bill/snapshot`
 * returns everything as JSON and is itself counted nowhere.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import * as bundle from "./index.js";

const als = new AsyncLocalStorage();
/** instance key → record */
const objects = new Map();
const worker = { requests: 0, subrequests: 0 };
/** ctx / storage / sql object → record */
const byCtx = new WeakMap();
const byStorage = new WeakMap();
const bySql = new WeakMap();
const startedAt = Date.now();

const MAX_STATEMENTS = 200;
const RECENT_CURSORS = 16;

function recordFor(kind, ctx) {
  const id = ctx.id.toString();
  const key = `${kind}|${id}`;
  let r = objects.get(key);
  if (!r) {
    r = {
      kind, id, name: null, constructs: 0, inflight: 0,
      requests: { rpc: {}, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 },
      rowsRead: 0, rowsWritten: 0, alarmSets: 0, kvRowsRead: 0, kvRowsWritten: 0, subrequests: 0,
      statements: {}, timers: new Map(), lastConstructAt: 0,
      cursors: [], recent: [], flushQueued: false,
    };
    objects.set(key, r);
  }
  if (ctx.id.name) r.name = ctx.id.name;
  return r;
}

/** Adds what a cursor reported since it was last read. */
function readCursor(r, c) {
  let read = 0, written = 0;
  try {
    read = c.cursor.rowsRead;
    written = c.cursor.rowsWritten;
  } catch {
    return;
  }
  const dr = read - c.read, dw = written - c.written;
  if (dr === 0 && dw === 0) return;
  c.read = read;
  c.written = written;
  r.rowsRead += dr;
  r.rowsWritten += dw;
  let s = r.statements[c.sql];
  if (!s) {
    if (Object.keys(r.statements).length >= MAX_STATEMENTS) s = r.statements["(other)"] ??= [0, 0, 0];
    else s = r.statements[c.sql] = [0, 0, 0];
  }
  s[0] += dr;
  s[1] += dw;
}

function flushCursors(r) {
  r.flushQueued = false;
  for (const c of r.recent) readCursor(r, c);
  for (const c of r.cursors) {
    readCursor(r, c);
    r.recent.push(c);
  }
  r.cursors = [];
  if (r.recent.length > RECENT_CURSORS) r.recent.splice(0, r.recent.length - RECENT_CURSORS);
}

const statementKey = (sql) => (typeof sql === "string" ? sql.replace(/\s+/g, " ").trim().slice(0, 160) : String(sql));

let storagePatched = false;
/** Patches the storage classes' prototypes once (every object's storage shares them). */
function patchStorage(ctx) {
  if (storagePatched) return;
  storagePatched = true;
  const storageProto = Object.getPrototypeOf(ctx.storage);
  const sqlProto = Object.getPrototypeOf(ctx.storage.sql);
  const owner = (map, obj) => map.get(obj) ?? als.getStore();
  const exec = sqlProto.exec;
  sqlProto.exec = function (sql, ...params) {
    const cursor = exec.call(this, sql, ...params);
    const r = owner(bySql, this);
    if (r) {
      r.cursors.push({ cursor, sql: statementKey(sql), read: 0, written: 0 });
      if (!r.flushQueued) {
        r.flushQueued = true;
        queueMicrotask(() => flushCursors(r));
      }
    }
    return cursor;
  };
  const setAlarm = storageProto.setAlarm;
  storageProto.setAlarm = function (...args) {
    const r = owner(byStorage, this);
    if (r) r.alarmSets++;
    return setAlarm.apply(this, args);
  };
  const keysOf = (k) => (Array.isArray(k) ? k.length : 1);
  for (const [m, kind] of [["get", "read"], ["put", "write"], ["delete", "write"], ["list", "read"]]) {
    const orig = storageProto[m];
    if (typeof orig !== "function") continue;
    storageProto[m] = function (...args) {
      const r = owner(byStorage, this);
      const p = orig.apply(this, args);
      if (r) {
        if (m === "list") Promise.resolve(p).then((map) => (r.kvRowsRead += Math.max(1, map?.size ?? 0)), () => {});
        else if (m === "put" && args[0] !== null && typeof args[0] === "object") r.kvRowsWritten += Object.keys(args[0]).length;
        else if (kind === "read") r.kvRowsRead += keysOf(args[0]);
        else r.kvRowsWritten += keysOf(args[0]);
      }
      return p;
    };
  }
}

/** Runs `fn` as a request to `r` (counted under `what`) unless the object is calling itself. */
function incoming(r, what, fn) {
  if (!r || als.getStore() === r) return fn();
  if (what === "fetch" || what === "alarm") r.requests[what]++;
  else if (what === "webSocketMessage") r.requests.wsMessage++;
  else if (what === "webSocketClose") r.requests.wsClose++;
  else if (what === "webSocketError") r.requests.wsError++;
  else r.requests.rpc[what] = (r.requests.rpc[what] ?? 0) + 1;
  r.inflight++;
  let out;
  try {
    out = als.run(r, fn);
  } catch (e) {
    r.inflight--;
    throw e;
  }
  if (out && typeof out.then === "function") {
    return out.then(
      (v) => ((r.inflight--), v),
      (e) => {
        r.inflight--;
        throw e;
      },
    );
  }
  r.inflight--;
  return out;
}

/** Every method name on the prototype chain of `cls` below Object.prototype. */
function methodNames(cls) {
  const names = new Set();
  for (let p = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const k of Object.getOwnPropertyNames(p)) {
      if (k === "constructor") continue;
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (d && typeof d.value === "function") names.add(k);
    }
  }
  return names;
}

function wrapObjectClass(kind, Base) {
  class Metered extends Base {
    constructor(ctx, env) {
      patchStorage(ctx);
      const r = recordFor(kind, ctx);
      r.constructs++;
      r.lastConstructAt = Date.now();
      byCtx.set(ctx, r);
      byStorage.set(ctx.storage, r);
      bySql.set(ctx.storage.sql, r);
      als.run(r, () => {
        super(ctx, env);
      });
    }
  }
  for (const name of methodNames(Base)) {
    const orig = Base.prototype[name] ?? Object.getPrototypeOf(Base.prototype)[name];
    Object.defineProperty(Metered.prototype, name, {
      configurable: true,
      writable: true,
      value: function (...args) {
        return incoming(byCtx.get(this.ctx), name, () => orig.apply(this, args));
      },
    });
  }
  Object.defineProperty(Metered, "name", { value: Base.name });
  return Metered;
}

// Timers: attributed to the object whose request (or constructor) set them.
const timerOwner = new Map();
const origSetTimeout = globalThis.setTimeout;
const origSetInterval = globalThis.setInterval;
const origClearTimeout = globalThis.clearTimeout;
const origClearInterval = globalThis.clearInterval;
const idKey = (id) => (typeof id === "object" && id !== null && typeof id[Symbol.toPrimitive] === "function" ? Number(id) : id);
globalThis.setTimeout = function (fn, ms, ...args) {
  const r = als.getStore();
  let key;
  const id = origSetTimeout.call(globalThis, (...a) => {
    if (r) r.timers.delete(key);
    timerOwner.delete(key);
    return typeof fn === "function" ? fn(...a) : undefined;
  }, ms, ...args);
  key = idKey(id);
  if (r) {
    r.timers.set(key, { type: "timeout", ms: Number(ms) || 0, at: Date.now() });
    timerOwner.set(key, r);
  }
  return id;
};
globalThis.setInterval = function (fn, ms, ...args) {
  const r = als.getStore();
  const id = origSetInterval.call(globalThis, fn, ms, ...args);
  const key = idKey(id);
  if (r) {
    r.timers.set(key, { type: "interval", ms: Number(ms) || 0, at: Date.now() });
    timerOwner.set(key, r);
  }
  return id;
};
const clear = (orig) =>
  function (id) {
    const key = idKey(id);
    const r = timerOwner.get(key);
    if (r) r.timers.delete(key);
    timerOwner.delete(key);
    return orig.call(globalThis, id);
  };
globalThis.clearTimeout = clear(origClearTimeout);
globalThis.clearInterval = clear(origClearInterval);

const origFetch = globalThis.fetch;
globalThis.fetch = function (...args) {
  const r = als.getStore();
  if (r) r.subrequests++;
  else worker.subrequests++;
  return origFetch.apply(globalThis, args);
};

function snapshot() {
  const out = [];
  for (const r of objects.values()) {
    flushCursors(r);
    const now = Date.now();
    out.push({
      kind: r.kind, id: r.id, name: r.name, constructs: r.constructs, inflight: r.inflight,
      requests: { ...r.requests, rpc: { ...r.requests.rpc } },
      rowsRead: r.rowsRead, rowsWritten: r.rowsWritten, alarmSets: r.alarmSets,
      kvRowsRead: r.kvRowsRead, kvRowsWritten: r.kvRowsWritten, subrequests: r.subrequests,
      statements: Object.fromEntries(Object.entries(r.statements).map(([k, v]) => [k, [v[0], v[1]]])),
      timers: [...r.timers.values()].map((t) => ({ type: t.type, ms: t.ms, ageMs: now - t.at })),
    });
  }
  return { at: Date.now(), startedAt, worker: { ...worker }, objects: out };
}

const entry = bundle.default;
export default {
  ...entry,
  fetch(req, env, ctx) {
    const url = new URL(req.url);
    if (url.pathname === "/__bill/snapshot") return Response.json(snapshot());
    worker.requests++;
    return entry.fetch(req, env, ctx);
  },
};

// bench/bill/host.ts appends one `export const <Class> = wrapObjectClass("<Class>", bundle.<Class>);` per
// Durable Object class wrangler.toml binds, and re-exports the bundle's other named exports as they are.
