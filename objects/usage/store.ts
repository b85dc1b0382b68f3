/**
 * SQLite tables of one UsageAggregator (one per tenant) and of the index
 * instance. Applying a report is one transaction: check its number against
 * the reporter's last applied number, add every entry to its series and to
 * its hour's usage row, track the storage high-water mark, record the new
 * number.
 *
 * Tables:
 * - `reporters(id, last_no, seen_ms)`: last report number applied per reporter
 * - `series_set(id, v)`: ONE row (id 1), every series with its cumulative
 *   value as a JSON object (/metrics), also held in memory: a report rewrites
 *   this one row instead of one row per series it touches (issue #26 (g)).
 *   An earlier version's `series(key, value)` table is merged into it and
 *   dropped with the first report
 * - `usage(hour, requests, messages_in, messages_out, bytes_in, bytes_out,
 *   connection_seconds, storage_max, storage_end)`: one row per tenant-hour
 * - `agg_meta(k, v)`: `storage_now` (running stored bytes), `registered`,
 *   `accepts_from` (set by a tenant purge: older counts are dropped)
 * - `tenants(name, since_ms)`: index instance only
 * - `recent(bucket, messages_in, messages_out, bytes_in, bytes_out, requests,
 *   errors, conn_mortar, conn_nats, storage)`: the last RECENT_KEEP_MS in
 *   RECENT_BUCKET_MS intervals by report arrival — counts added, levels
 *   (open connections, stored bytes) as after the interval's last report —
 *   for the console's live charts (`GET /v0/overview`, docs/console.md)
 */
import { SUMMED_USAGE_FIELDS, metricDef, parseSeries, series, usageFieldOf } from "./catalog";
import { HOUR_MS, type UsageReport } from "./report";
import type { HourUsage } from "./rpc";
import { MetaTable } from "../shared/meta-table";
import type { OverviewBucket } from "../../wire/admin/console";

type Row = Record<string, SqlStorageValue>;

/** Width of one `recent` interval, ms. */
export const RECENT_BUCKET_MS = 10_000;
/** How long `recent` intervals are kept, ms (1 hour). */
export const RECENT_KEEP_MS = 3_600_000;

/** One `recent` interval (`recent()`): counts in the interval, levels at its end — the console's OverviewBucket. */
export type RecentBucket = OverviewBucket;

const RECENT_COUNTS = ["messages_in", "messages_out", "bytes_in", "bytes_out", "requests", "errors"] as const;
const CONN_MORTAR = series("mortarmq_open_connections", { protocol: "mortar" });
const CONN_NATS = series("mortarmq_open_connections", { protocol: "nats" });

/** The `recent` count a series adds to: its usage field (but storage, connection time), or `errors` for error counts; null = none. */
function recentField(key: string): (typeof RECENT_COUNTS)[number] | null {
  const p = parseSeries(key);
  if (!p) return null;
  if (p.name === "mortarmq_errors_total") return "errors";
  if (p.name === "mortarmq_mq9_requests_total" && p.labels.outcome !== "ok") return "errors";
  const f = usageFieldOf(key);
  return f === "storage_bytes" || f === "connection_seconds" ? null : f;
}

const APPLIED = series("mortarmq_telemetry_reports_total", { result: "applied" });
const DUPLICATE = series("mortarmq_telemetry_reports_total", { result: "duplicate" });

export class AggregateStore {
  private readonly metaTable: MetaTable;

  constructor(private readonly storage: DurableObjectStorage) {
    const sql = storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS reporters(id TEXT PRIMARY KEY, last_no INTEGER NOT NULL, seen_ms INTEGER NOT NULL)");
    sql.exec("CREATE TABLE IF NOT EXISTS series_set(id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    for (const r of sql.exec<{ v: string }>("SELECT v FROM series_set WHERE id = 1")) {
      for (const [k, v] of Object.entries(JSON.parse(r.v) as Record<string, number>)) this.series.set(k, v);
    }
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'series'").toArray().length > 0) {
      for (const r of sql.exec<{ key: string; value: number }>("SELECT key, value FROM series")) this.series.set(r.key, (this.series.get(r.key) ?? 0) + r.value);
      this.legacySeries = true;
    }
    sql.exec(`CREATE TABLE IF NOT EXISTS usage(hour INTEGER PRIMARY KEY,
      requests REAL NOT NULL DEFAULT 0, messages_in REAL NOT NULL DEFAULT 0, messages_out REAL NOT NULL DEFAULT 0,
      bytes_in REAL NOT NULL DEFAULT 0, bytes_out REAL NOT NULL DEFAULT 0, connection_seconds REAL NOT NULL DEFAULT 0,
      storage_max REAL NOT NULL DEFAULT 0, storage_end REAL NOT NULL DEFAULT 0)`);
    this.metaTable = new MetaTable(sql, "agg_meta", "REAL");
    sql.exec("CREATE TABLE IF NOT EXISTS tenants(name TEXT PRIMARY KEY, since_ms INTEGER NOT NULL)");
    sql.exec(`CREATE TABLE IF NOT EXISTS recent(bucket INTEGER PRIMARY KEY,
      messages_in REAL NOT NULL DEFAULT 0, messages_out REAL NOT NULL DEFAULT 0, bytes_in REAL NOT NULL DEFAULT 0,
      bytes_out REAL NOT NULL DEFAULT 0, requests REAL NOT NULL DEFAULT 0, errors REAL NOT NULL DEFAULT 0,
      conn_mortar REAL NOT NULL DEFAULT 0, conn_nats REAL NOT NULL DEFAULT 0, storage REAL NOT NULL DEFAULT 0)`);
  }

  /** Every series' cumulative value, as stored in `series_set` (read once at construction). */
  private readonly series = new Map<string, number>();
  /** Values changed by the report being applied, not yet in `series` (written with its transaction). */
  private changed = new Map<string, number>();
  /** An earlier version's `series` table was merged in: dropped with the next write. */
  private legacySeries = false;

  /** The interval `recent` rows were last pruned for (in memory: pruning runs once per new interval). */
  private prunedRecent = 0;

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
   * (no reporter counts those), and negative increments of counters, are skipped.
   */
  apply(r: UsageReport, now: number): boolean {
    this.changed = new Map();
    try {
      const applied = this.storage.transactionSync(() => {
        const applied = this.applyIn(r, now);
        this.saveSeries();
        return applied;
      });
      for (const [k, v] of this.changed) this.series.set(k, v);
      return applied;
    } finally {
      this.changed = new Map();
    }
  }

  /** Writes every series as the one `series_set` row (the changed values of this transaction included). */
  private saveSeries(): void {
    const all: Record<string, number> = Object.fromEntries(this.series);
    for (const [k, v] of this.changed) all[k] = v;
    this.storage.sql.exec("INSERT INTO series_set(id, v) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET v = excluded.v", JSON.stringify(all));
    if (this.legacySeries) {
      this.storage.sql.exec("DROP TABLE series");
      this.legacySeries = false;
    }
  }

  /** The body of `apply`, inside its transaction. */
  private applyIn(r: UsageReport, now: number): boolean {
    const sql = this.storage.sql;
    {
      const last = sql.exec<{ last_no: number }>("SELECT last_no FROM reporters WHERE id = ?", r.reporter).toArray()[0];
      if (last && r.no <= last.last_no) {
        sql.exec("UPDATE reporters SET seen_ms = ? WHERE id = ?", now, r.reporter);
        this.addSeries(DUPLICATE, 1);
        return false;
      }
      const sums = new Map<number, Record<string, number>>();
      const recent: Record<string, number> = {};
      const storageMax = new Map<number, number>();
      let storage = this.meta("storage_now");
      for (const [hour, key, v] of r.entries) {
        const p = parseSeries(key);
        const def = p && metricDef(p.name);
        if (!def || def.scope === "broker" || (def.type === "counter" && v < 0)) continue;
        this.addSeries(key, v);
        const rf = recentField(key);
        if (rf) recent[rf] = (recent[rf] ?? 0) + v;
        const field = usageFieldOf(key);
        if (field === "storage_bytes") {
          const before = storage;
          storage += v;
          storageMax.set(hour, Math.max(storageMax.get(hour) ?? 0, before, storage));
        } else if (field) {
          let s = sums.get(hour);
          if (!s) sums.set(hour, (s = {}));
          s[field] = (s[field] ?? 0) + v;
        }
      }
      for (const [hour, s] of sums) {
        const cols = Object.keys(s);
        sql.exec(`INSERT INTO usage(hour, ${cols.join(", ")}) VALUES (?${", ?".repeat(cols.length)})
          ON CONFLICT(hour) DO UPDATE SET ${cols.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`,
          hour, ...cols.map((c) => s[c]!));
      }
      if (storageMax.size > 0) {
        this.setMeta("storage_now", storage);
        for (const [hour, max] of storageMax) {
          sql.exec(`INSERT INTO usage(hour, storage_max, storage_end) VALUES (?, ?, ?)
            ON CONFLICT(hour) DO UPDATE SET storage_max = max(storage_max, excluded.storage_max), storage_end = excluded.storage_end`,
            hour, max, storage);
        }
      }
      this.addRecent(now, recent, storage);
      // An upsert updates a known reporter in place (one row; REPLACE would delete and insert the row and its key's index entry).
      sql.exec("INSERT INTO reporters(id, last_no, seen_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET last_no = excluded.last_no, seen_ms = excluded.seen_ms",
        r.reporter, r.no, now);
      this.addSeries(APPLIED, 1);
      return true;
    }
  }

  /** Adds one report's counts to the interval holding `now` and records the levels after it; drops intervals older than RECENT_KEEP_MS. */
  private addRecent(now: number, counts: Record<string, number>, storage: number): void {
    const sql = this.storage.sql;
    const bucket = now - (now % RECENT_BUCKET_MS);
    const cols = RECENT_COUNTS.filter((c) => counts[c] !== undefined);
    sql.exec(`INSERT INTO recent(bucket, conn_mortar, conn_nats, storage${cols.map((c) => `, ${c}`).join("")})
      VALUES (?, ?, ?, ?${", ?".repeat(cols.length)})
      ON CONFLICT(bucket) DO UPDATE SET conn_mortar = excluded.conn_mortar, conn_nats = excluded.conn_nats,
        storage = excluded.storage${cols.map((c) => `, ${c} = ${c} + excluded.${c}`).join("")}`,
      bucket, this.seriesValue(CONN_MORTAR), this.seriesValue(CONN_NATS), storage, ...cols.map((c) => counts[c]!));
    if (bucket !== this.prunedRecent) {
      sql.exec("DELETE FROM recent WHERE bucket < ?", bucket - RECENT_KEEP_MS);
      this.prunedRecent = bucket;
    }
  }

  /**
   * The intervals from the one holding `fromMs` to the one holding `nowMs`,
   * oldest first, one per RECENT_BUCKET_MS: zeros where no report arrived,
   * levels carried from the interval before.
   */
  recent(fromMs: number, nowMs: number): RecentBucket[] {
    const sql = this.storage.sql;
    const first = fromMs - (fromMs % RECENT_BUCKET_MS);
    const rows = new Map<number, Row>();
    for (const r of sql.exec<Row>("SELECT * FROM recent WHERE bucket >= ? AND bucket <= ? ORDER BY bucket", first, nowMs)) rows.set(r.bucket as number, r);
    const before = sql.exec<Row>("SELECT conn_mortar, conn_nats, storage FROM recent WHERE bucket < ? ORDER BY bucket DESC LIMIT 1", first).toArray()[0];
    // Levels before the window's first report: the interval before it, else (nothing older kept) that first
    // report's own levels, else (no report in the window) the current levels.
    const start = before ?? rows.values().next().value;
    let levels = start
      ? { m: start.conn_mortar as number, n: start.conn_nats as number, s: start.storage as number }
      : { m: this.seriesValue(CONN_MORTAR), n: this.seriesValue(CONN_NATS), s: this.meta("storage_now") };
    const out: RecentBucket[] = [];
    for (let t = first; t <= nowMs; t += RECENT_BUCKET_MS) {
      const r = rows.get(t);
      if (r) levels = { m: r.conn_mortar as number, n: r.conn_nats as number, s: r.storage as number };
      out.push({
        t,
        messages_in: (r?.messages_in as number) ?? 0, messages_out: (r?.messages_out as number) ?? 0,
        bytes_in: (r?.bytes_in as number) ?? 0, bytes_out: (r?.bytes_out as number) ?? 0,
        requests: (r?.requests as number) ?? 0, errors: (r?.errors as number) ?? 0,
        connections_mortar: Math.max(0, levels.m), connections_nats: Math.max(0, levels.n), storage_bytes: Math.max(0, levels.s),
      });
    }
    return out;
  }

  /** Adds `v` to a series within the report being applied (stored by saveSeries). */
  private addSeries(key: string, v: number): void {
    this.changed.set(key, this.seriesValue(key) + v);
  }

  /** Every series with its cumulative value. */
  allSeries(): [string, number][] {
    return [...this.series].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** Value of one series (0 when never reported). */
  seriesValue(key: string): number {
    return this.changed.get(key) ?? this.series.get(key) ?? 0;
  }

  /**
   * Usage of every hour in [fromHour, toHour) (hour starts, ms), one entry
   * per hour, zeros where nothing was counted; storage carries the level of
   * the last hour before when nothing changed in an hour.
   */
  usage(fromHour: number, toHour: number): HourUsage[] {
    const sql = this.storage.sql;
    const rows = new Map<number, Row>();
    for (const r of sql.exec<Row>("SELECT * FROM usage WHERE hour >= ? AND hour < ? ORDER BY hour", fromHour, toHour)) rows.set(r.hour as number, r);
    let level = sql.exec<{ storage_end: number }>("SELECT storage_end FROM usage WHERE hour < ? AND (storage_max > 0 OR storage_end > 0) ORDER BY hour DESC LIMIT 1", fromHour)
      .toArray()[0]?.storage_end ?? 0;
    const out: HourUsage[] = [];
    for (let h = fromHour; h < toHour; h += HOUR_MS) {
      const r = rows.get(h);
      const u: HourUsage = { hour: h, requests: 0, messages_in: 0, messages_out: 0, bytes_in: 0, bytes_out: 0, connection_seconds: 0, storage_bytes: level };
      if (r) {
        for (const f of SUMMED_USAGE_FIELDS) u[f] = r[f] as number;
        if ((r.storage_max as number) > 0 || (r.storage_end as number) > 0) {
          u.storage_bytes = Math.max(level, r.storage_max as number);
          level = r.storage_end as number;
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
    const newest = this.storage.sql.exec<{ m: number | null }>("SELECT MAX(seen_ms) AS m FROM reporters").one().m;
    if (newest !== null) this.storage.sql.exec("DELETE FROM reporters WHERE seen_ms < ?", Math.min(now, newest) - ttlMs);
    this.storage.sql.exec("DELETE FROM usage WHERE hour < ?", usageCutoff);
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
