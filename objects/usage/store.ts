/**
 * SQLite storage of one UsageAggregator (one per tenant) and of the index
 * instance. Applying a report is one transaction that writes ONE row, the
 * state row (aggregate-state.ts: series, recent reporters and their last
 * report numbers, stored bytes, the current and previous hour's usage, the
 * recent intervals), also held in memory — issue #26 (g): a busy reporter
 * reporting once a minute costs the aggregator one row a minute. An hour
 * leaves the state row for the `usage` table once it is two hours old, a
 * reporter for the `reporters` table once it has been silent an hour: one
 * row each, once.
 *
 * Tables:
 * - `agg_state(id, v)`: the state row (id 1, JSON AggState)
 * - `reporters(id, last_no, seen_ms)`: last report number applied per
 *   reporter silent for REPORTER_HOT_MS (the others are in the state row,
 *   which wins when both hold one)
 * - `usage(hour, requests, messages_in, messages_out, bytes_in, bytes_out,
 *   connection_seconds, rows_written, rows_read, do_requests,
 *   worker_requests, storage_max, storage_end; a column missing from an
 *   older table is added at its end)`: one row per tenant-hour older than the state row's hours
 *   (added to the state's hour when both hold one)
 * - `agg_meta(k, v)`: `registered`, `accepts_from` (set by a tenant purge:
 *   older counts are dropped)
 * - `tenants(name, since_ms)`: index instance only
 *
 * Earlier layouts (`series_set` or `series`, `recent`, `agg_meta.storage_now`)
 * are read into the state when it has no row yet and dropped with its first
 * write; their `reporters` and `usage` rows are read as they are.
 */
import { SUMMED_USAGE_FIELDS, metricDef, parseSeries, series, usageFieldOf } from "./catalog";
import { HOUR_MS, type ReportEntry, type UsageReport } from "./report";
import type { HourUsage } from "./rpc";
import { MetaTable } from "../shared/meta-table";
import {
  addHour, addRecent, emptyState, firstHotHour, isSummed, recentBuckets, RECENT_BUCKET_MS, RECENT_COUNTS, RECENT_KEEP_MS, REPORTER_HOT_MS,
  type AggState, type HourRow, type RecentCount, type RecentRow,
} from "./aggregate-state";
import type { OverviewBucket } from "../../wire/admin/console";

export { RECENT_BUCKET_MS, RECENT_KEEP_MS };

type Row = Record<string, SqlStorageValue>;

/** One recent interval (`recent()`): counts in the interval, levels at its end — the console's OverviewBucket. */
export type RecentBucket = OverviewBucket;

const CONN_MORTAR = series("mortarmq_open_connections", { protocol: "mortar" });
const CONN_NATS = series("mortarmq_open_connections", { protocol: "nats" });
const APPLIED = series("mortarmq_telemetry_reports_total", { result: "applied" });
const DUPLICATE = series("mortarmq_telemetry_reports_total", { result: "duplicate" });
const HOUR_COLUMNS = [...SUMMED_USAGE_FIELDS, "storage_max", "storage_end"] as const;

/** The recent count a series adds to: its usage field (but storage, connection time, costs), or `errors` for error counts; null = none. */
function recentField(key: string): RecentCount | null {
  const p = parseSeries(key);
  if (!p) return null;
  if (p.name === "mortarmq_errors_total") return "errors";
  if (p.name === "mortarmq_mq9_requests_total" && p.labels.outcome !== "ok") return "errors";
  const f = usageFieldOf(key);
  return (RECENT_COUNTS as readonly string[]).includes(f ?? "") ? (f as RecentCount) : null;
}

export class AggregateStore {
  private readonly metaTable: MetaTable;
  private state: AggState;
  /** Tables of an earlier layout to drop with the next state write. */
  private legacy: string[] = [];

  constructor(private readonly storage: DurableObjectStorage) {
    const sql = storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS agg_state(id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    sql.exec("CREATE TABLE IF NOT EXISTS reporters(id TEXT PRIMARY KEY, last_no INTEGER NOT NULL, seen_ms INTEGER NOT NULL)");
    sql.exec(`CREATE TABLE IF NOT EXISTS usage(hour INTEGER PRIMARY KEY, ${HOUR_COLUMNS.map((c) => `${c} REAL NOT NULL DEFAULT 0`).join(", ")})`);
    const have = new Set(sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('usage')").toArray().map((r) => r.name));
    for (const c of HOUR_COLUMNS) if (!have.has(c)) sql.exec(`ALTER TABLE usage ADD COLUMN ${c} REAL NOT NULL DEFAULT 0`);
    this.metaTable = new MetaTable(sql, "agg_meta", "REAL");
    sql.exec("CREATE TABLE IF NOT EXISTS tenants(name TEXT PRIMARY KEY, since_ms INTEGER NOT NULL)");
    this.state = this.load();
  }

  /** The stored state, or (none yet) the one an earlier layout holds. */
  private load(): AggState {
    const sql = this.storage.sql;
    for (const r of sql.exec<{ v: string }>("SELECT v FROM agg_state WHERE id = 1")) return JSON.parse(r.v) as AggState;
    const s = emptyState();
    const tables = new Set(sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").toArray().map((r) => r.name));
    if (tables.has("series_set")) {
      for (const r of sql.exec<{ v: string }>("SELECT v FROM series_set WHERE id = 1")) Object.assign(s.series, JSON.parse(r.v) as Record<string, number>);
      this.legacy.push("series_set");
    }
    if (tables.has("series")) {
      for (const r of sql.exec<{ key: string; value: number }>("SELECT key, value FROM series")) s.series[r.key] = (s.series[r.key] ?? 0) + r.value;
      this.legacy.push("series");
    }
    if (tables.has("recent")) {
      for (const r of sql.exec<Row>("SELECT * FROM recent ORDER BY bucket")) {
        const c: RecentRow["c"] = {};
        for (const k of RECENT_COUNTS) if (r[k]) c[k] = r[k] as number;
        s.recent.push({ t: r.bucket as number, c, conn_mortar: r.conn_mortar as number, conn_nats: r.conn_nats as number, storage: r.storage as number });
      }
      this.legacy.push("recent");
    }
    s.storage = this.metaTable.get("storage_now");
    return s;
  }

  /** An `agg_meta` value (0 when unset). */
  meta(k: string): number {
    return this.metaTable.get(k);
  }

  /** Sets an `agg_meta` value. */
  setMeta(k: string, v: number): void {
    this.metaTable.set(k, v);
  }

  /**
   * Applies `r` exactly once: returns false (and changes nothing but the
   * duplicate counter) when its number is not above the last applied one
   * for its reporter. Entries of unknown metrics and of broker-scope ones
   * (no reporter counts those), and negative increments of counters, are
   * skipped. `own`: the aggregator's own counts (its costs), applied either
   * way. One transaction; the state row is its one write (plus, rarely, an
   * hour or a reporter leaving it, or a report for an hour already left).
   */
  apply(r: UsageReport, now: number, own: readonly ReportEntry[] = []): boolean {
    try {
      return this.storage.transactionSync(() => {
        const applied = this.applyIn(r, now, own);
        this.spill(now);
        this.save();
        return applied;
      });
    } catch (e) {
      this.state = this.load(); // the transaction rolled back: so does the memory
      throw e;
    }
  }

  /** The body of `apply`, inside its transaction. */
  private applyIn(r: UsageReport, now: number, own: readonly ReportEntry[]): boolean {
    const s = this.state;
    const last = s.reporters[r.reporter]?.[0]
      ?? this.storage.sql.exec<{ last_no: number }>("SELECT last_no FROM reporters WHERE id = ?", r.reporter).toArray()[0]?.last_no;
    const fresh = last === undefined || r.no > last;
    s.reporters[r.reporter] = [fresh ? r.no : last!, now];
    this.addEntries(fresh ? [...r.entries, ...own] : own, now);
    this.addSeries(fresh ? APPLIED : DUPLICATE, 1);
    return fresh;
  }

  /** Adds entries to the series, the hours' usage and the current recent interval. */
  private addEntries(entries: readonly ReportEntry[], now: number): void {
    const s = this.state;
    const sums = new Map<number, HourRow>();
    const recent: Partial<Record<RecentCount, number>> = {};
    for (const [hour, key, v] of entries) {
      const p = parseSeries(key);
      const def = p && metricDef(p.name);
      if (!def || def.scope === "broker" || (def.type === "counter" && v < 0)) continue;
      this.addSeries(key, v);
      const rf = recentField(key);
      if (rf) recent[rf] = (recent[rf] ?? 0) + v;
      const field = usageFieldOf(key);
      let h = sums.get(hour);
      if (field === "storage_bytes") {
        if (!h) sums.set(hour, (h = {}));
        const before = s.storage;
        s.storage += v;
        h.storage_max = Math.max(h.storage_max ?? 0, before, s.storage);
        h.storage_end = s.storage;
      } else if (isSummed(field)) {
        if (!h) sums.set(hour, (h = {}));
        h[field] = (h[field] ?? 0) + v;
      }
    }
    const hot = firstHotHour(now);
    for (const [hour, row] of sums) {
      if (hour >= hot) addHour((s.hours[hour] ??= {}), row);
      else this.addHourRow(hour, row); // a late report for an hour already stored
    }
    addRecent(s, now, recent, { conn_mortar: this.seriesValue(CONN_MORTAR), conn_nats: this.seriesValue(CONN_NATS), storage: s.storage });
  }

  /** Moves hours older than the previous one to `usage`, and reporters silent for REPORTER_HOT_MS to `reporters`. */
  private spill(now: number): void {
    const s = this.state;
    const hot = firstHotHour(now);
    for (const [k, row] of Object.entries(s.hours)) {
      if (Number(k) >= hot) continue;
      this.addHourRow(Number(k), row);
      delete s.hours[k];
    }
    for (const [id, [no, seen]] of Object.entries(s.reporters)) {
      if (seen >= now - REPORTER_HOT_MS) continue;
      // An upsert updates a known reporter in place (one row; REPLACE would delete and insert the row and its key's index entry).
      this.storage.sql.exec("INSERT INTO reporters(id, last_no, seen_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET last_no = excluded.last_no, seen_ms = excluded.seen_ms",
        id, no, seen);
      delete s.reporters[id];
    }
  }

  /** Adds `row` to the `usage` row of `hour`. */
  private addHourRow(hour: number, row: HourRow): void {
    const sums = SUMMED_USAGE_FIELDS.filter((c) => row[c]);
    const cols: string[] = [...sums];
    const sets = sums.map((c) => `${c} = ${c} + excluded.${c}`);
    const vals: number[] = sums.map((c) => row[c]!);
    if (row.storage_max !== undefined) {
      cols.push("storage_max", "storage_end");
      sets.push("storage_max = max(storage_max, excluded.storage_max)", "storage_end = excluded.storage_end");
      vals.push(row.storage_max, row.storage_end ?? 0);
    }
    if (cols.length === 0) return;
    this.storage.sql.exec(`INSERT INTO usage(hour, ${cols.join(", ")}) VALUES (?${", ?".repeat(cols.length)})
      ON CONFLICT(hour) DO UPDATE SET ${sets.join(", ")}`, hour, ...vals);
  }

  /** Writes the state row (and drops an earlier layout's tables). */
  private save(): void {
    const sql = this.storage.sql;
    sql.exec("INSERT INTO agg_state(id, v) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET v = excluded.v", JSON.stringify(this.state));
    if (this.legacy.length > 0) {
      for (const t of this.legacy) sql.exec(`DROP TABLE IF EXISTS ${t}`);
      sql.exec("DELETE FROM agg_meta WHERE k = 'storage_now'");
      this.legacy = [];
    }
  }

  /** The recent intervals from the one holding `fromMs` to the one holding `nowMs` (aggregate-state.ts recentBuckets). */
  recent(fromMs: number, nowMs: number): RecentBucket[] {
    return recentBuckets(this.state, fromMs, nowMs, { m: this.seriesValue(CONN_MORTAR), n: this.seriesValue(CONN_NATS), s: this.state.storage });
  }

  /** Adds `v` to a series. */
  private addSeries(key: string, v: number): void {
    this.state.series[key] = (this.state.series[key] ?? 0) + v;
  }

  /** Every series with its cumulative value, sorted by key. */
  allSeries(): [string, number][] {
    return Object.entries(this.state.series).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** Every reporter known, with its last report number and when it was last heard from (ms), sorted by id (tests, diagnostics). */
  reporters(): [id: string, no: number, seenMs: number][] {
    const all = new Map<string, [number, number]>();
    for (const r of this.storage.sql.exec<{ id: string; last_no: number; seen_ms: number }>("SELECT id, last_no, seen_ms FROM reporters")) all.set(r.id, [r.last_no, r.seen_ms]);
    for (const [id, v] of Object.entries(this.state.reporters)) all.set(id, v);
    return [...all].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([id, [no, seen]]) => [id, no, seen]);
  }

  /** Moves every reporter's last-heard time `ms` into the past (tests: an outage). */
  ageReporters(ms: number, only?: string): void {
    this.storage.sql.exec("UPDATE reporters SET seen_ms = seen_ms - ? WHERE ? IS NULL OR id = ?", ms, only ?? null, only ?? null);
    for (const [id, v] of Object.entries(this.state.reporters)) if (only === undefined || id === only) v[1] -= ms;
    this.save();
  }

  /** Value of one series (0 when never reported). */
  seriesValue(key: string): number {
    return this.state.series[key] ?? 0;
  }

  /** Stored bytes now (MortarMQ + mq9), as reported. */
  storageNow(): number {
    return this.state.storage;
  }

  /**
   * Usage of every hour in [fromHour, toHour) (hour starts, ms), one entry
   * per hour, zeros where nothing was counted; storage carries the level of
   * the last hour before when nothing changed in an hour.
   */
  usage(fromHour: number, toHour: number): HourUsage[] {
    const sql = this.storage.sql;
    const rows = new Map<number, HourRow>();
    const hourRow = (r: Row): HourRow => Object.fromEntries(HOUR_COLUMNS.map((c) => [c, r[c] as number]));
    for (const r of sql.exec<Row>("SELECT * FROM usage WHERE hour >= ? AND hour < ? ORDER BY hour", fromHour, toHour)) rows.set(r.hour as number, hourRow(r));
    for (const [k, row] of Object.entries(this.state.hours)) {
      const h = Number(k);
      if (h < fromHour || h >= toHour) continue;
      const into = rows.get(h) ?? {};
      addHour(into, row);
      rows.set(h, into);
    }
    // The level before the range: the last hour before it that saw stored bytes change (state hours are the newest).
    let level = 0;
    let levelHour = -Infinity;
    for (const r of sql.exec<{ hour: number; storage_end: number }>(
      "SELECT hour, storage_end FROM usage WHERE hour < ? AND (storage_max > 0 OR storage_end > 0) ORDER BY hour DESC LIMIT 1", fromHour)) {
      level = r.storage_end;
      levelHour = r.hour;
    }
    for (const [k, row] of Object.entries(this.state.hours)) {
      const h = Number(k);
      if (h < fromHour && h > levelHour && row.storage_max !== undefined) {
        level = row.storage_end ?? 0;
        levelHour = h;
      }
    }
    const out: HourUsage[] = [];
    for (let h = fromHour; h < toHour; h += HOUR_MS) {
      const r = rows.get(h);
      const u: HourUsage = {
        hour: h, requests: 0, messages_in: 0, messages_out: 0, bytes_in: 0, bytes_out: 0, connection_seconds: 0,
        rows_written: 0, rows_read: 0, do_requests: 0, worker_requests: 0, storage_bytes: level,
      };
      if (r) {
        for (const f of SUMMED_USAGE_FIELDS) u[f] = r[f] ?? 0;
        if ((r.storage_max ?? 0) > 0 || (r.storage_end ?? 0) > 0) {
          u.storage_bytes = Math.max(level, r.storage_max ?? 0);
          level = r.storage_end ?? 0;
        }
      }
      out.push(u);
    }
    return out;
  }

  /**
   * Forgets reporters silent for `ttlMs` before the latest report seen
   * (never later than `now`), and usage hours before `usageCutoff`. Relative
   * to the latest report, not the clock: after the broker was down longer
   * than `ttlMs`, a retry of a report applied just before the outage must
   * still be recognised (ms).
   */
  prune(now: number, ttlMs: number, usageCutoff: number): void {
    const sql = this.storage.sql;
    let newest = sql.exec<{ m: number | null }>("SELECT MAX(seen_ms) AS m FROM reporters").one().m ?? -Infinity;
    for (const [, seen] of Object.values(this.state.reporters)) newest = Math.max(newest, seen);
    if (newest !== -Infinity) {
      const cutoff = Math.min(now, newest) - ttlMs;
      sql.exec("DELETE FROM reporters WHERE seen_ms < ?", cutoff);
      const gone = Object.entries(this.state.reporters).filter(([, [, seen]]) => seen < cutoff);
      for (const [id] of gone) delete this.state.reporters[id];
      if (gone.length > 0) this.save();
    }
    sql.exec("DELETE FROM usage WHERE hour < ?", usageCutoff);
  }

  // ------------------------------------------------------------ index role

  addTenant(name: string, now: number): void {
    this.storage.sql.exec("INSERT OR IGNORE INTO tenants(name, since_ms) VALUES (?, ?)", name, now);
  }

  removeTenant(name: string): void {
    this.storage.sql.exec("DELETE FROM tenants WHERE name = ?", name);
  }

  tenants(): string[] {
    return this.storage.sql.exec<{ name: string }>("SELECT name FROM tenants ORDER BY name").toArray().map((r) => r.name);
  }
}

