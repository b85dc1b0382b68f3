/**
 * SQLite persistence of the consumer-group ledgers of one partition
 * (ledger.ts), unsettled deliveries stored as runs (delivery-runs.ts).
 *
 * Tables:
 * - `consumer_groups(gid, name, next, epoch, owner, delivered, acked, redelivered, dead_lettered,
 *   retention_skipped, runs)`: one row per group that ever owned the partition;
 *   `owner` is JSON (OwnerRef) or NULL; `runs` is the group's unsettled
 *   deliveries as JSON runs while there are at most INLINE_RUNS of them,
 *   NULL while they are spilled to `delivery_runs`. Columns a release wrote
 *   without (`retention_skipped`, `runs`) are added when the object starts.
 * - `delivery_runs(gid, start_seq, end_seq, first_id, attempt, deadline, state, reason)`:
 *   a group's runs while it has more than INLINE_RUNS (fragmented by
 *   scattered ACKs/NACKs); only the runs that changed are rewritten.
 * - `deliveries(gid, seq, …)`: the per-delivery rows of earlier releases,
 *   converted to runs (and deleted) when the object starts.
 * - `group_pauses(name, until)`: a paused group (consumer-group management,
 *   docs/groups.md) and when its pause ends (unix ms); kept by name, so a
 *   group may be paused before it owns the partition.
 *
 * Every ledger change is flushed in the same transaction as the call that
 * made it, so a restart resumes with the same attempts, delivery ids and
 * deadlines. Recording or settling any number of deliveries in one call
 * writes one row (the group's) while the runs stay inline.
 */
import { GroupLedger, type PendingDelivery } from "./ledger";
import { INLINE_RUNS, decodeRuns, fromRuns, toRuns, type DeliveryRun } from "./delivery-runs";
import type { OwnerRef } from "./rpc";

interface GroupRow extends Record<string, SqlStorageValue> {
  gid: number; name: string; next: number; epoch: number; owner: string | null;
  delivered: number; acked: number; redelivered: number; dead_lettered: number; retention_skipped: number; runs: string | null;
}
interface DeliveryRow extends Record<string, SqlStorageValue> {
  gid: number; seq: number; delivery_id: number; attempt: number; deadline: number; state: number; reason: number;
}
interface RunRow extends Record<string, SqlStorageValue> {
  gid: number; start_seq: number; end_seq: number; first_id: number; attempt: number; deadline: number; state: number; reason: number;
}

/** What loadAll repaired or converted (the caller flushes every ledger and calls dropLegacy when either is set). */
export interface LoadFixes {
  /** Deliveries left waiting for redelivery after their last attempt, now dead letters. */
  count: number;
  /** Rows of the old per-delivery table were read (convert: flush every ledger, then dropLegacy). */
  migrated?: boolean;
}

/** Creates the tables if missing. */
export function ensureLedgerSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS consumer_groups(gid INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
      next INTEGER NOT NULL, epoch INTEGER NOT NULL, owner TEXT, delivered INTEGER NOT NULL DEFAULT 0, acked INTEGER NOT NULL DEFAULT 0,
      redelivered INTEGER NOT NULL DEFAULT 0, dead_lettered INTEGER NOT NULL DEFAULT 0, retention_skipped INTEGER NOT NULL DEFAULT 0,
      runs TEXT DEFAULT '[]');
    CREATE TABLE IF NOT EXISTS delivery_runs(gid INTEGER NOT NULL, start_seq INTEGER NOT NULL, end_seq INTEGER NOT NULL,
      first_id INTEGER NOT NULL, attempt INTEGER NOT NULL, deadline INTEGER NOT NULL, state INTEGER NOT NULL, reason INTEGER NOT NULL,
      PRIMARY KEY(gid, start_seq)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS deliveries(gid INTEGER NOT NULL, seq INTEGER NOT NULL, delivery_id INTEGER NOT NULL,
      attempt INTEGER NOT NULL, deadline INTEGER NOT NULL, state INTEGER NOT NULL, reason INTEGER NOT NULL,
      PRIMARY KEY(gid, seq)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS group_pauses(name TEXT PRIMARY KEY, until INTEGER NOT NULL);`);
  // Released layouts before retention had no retention_skipped column, before delivery runs no runs column.
  const cols = new Set(sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('consumer_groups')").toArray().map((r) => r.name));
  if (!cols.has("retention_skipped")) sql.exec("ALTER TABLE consumer_groups ADD COLUMN retention_skipped INTEGER NOT NULL DEFAULT 0");
  if (!cols.has("runs")) sql.exec("ALTER TABLE consumer_groups ADD COLUMN runs TEXT DEFAULT '[]'");
}

export class LedgerStore {
  /** Per group (gid) whose runs are spilled: the stored `delivery_runs` by start, as their JSON (to rewrite only changed runs). */
  private readonly spilled = new Map<number, Map<number, string>>();

  constructor(private readonly sql: SqlStorage) {
    ensureLedgerSchema(sql);
  }

  /**
   * Every stored ledger, by group name. `maxAttempts` repairs deliveries
   * left waiting for redelivery after their last attempt (GroupLedger.restored);
   * `fixes` counts them and says whether old per-delivery rows were read
   * (the caller flushes every ledger, then calls dropLegacy, in one transaction).
   */
  loadAll(maxAttempts?: number, fixes?: LoadFixes): Map<string, GroupLedger> {
    const out = new Map<string, GroupLedger>();
    const byGid = new Map<number, GroupLedger>();
    for (const r of this.sql.exec<GroupRow>("SELECT * FROM consumer_groups")) {
      const l = new GroupLedger(r.gid, r.name, r.next, r.epoch, r.owner === null ? null : (JSON.parse(r.owner) as OwnerRef));
      l.counters = { delivered: r.delivered, acked: r.acked, redelivered: r.redelivered, deadLettered: r.dead_lettered, retentionSkipped: r.retention_skipped };
      out.set(r.name, l);
      byGid.set(r.gid, l);
      if (r.runs !== null) for (const d of fromRuns(decodeRuns(r.runs))) l.restore(d);
    }
    for (const r of this.sql.exec<RunRow>("SELECT * FROM delivery_runs ORDER BY gid, start_seq")) {
      const run: DeliveryRun = [r.start_seq, r.end_seq, r.first_id, r.attempt, r.deadline, r.state, r.reason];
      let m = this.spilled.get(r.gid);
      if (!m) this.spilled.set(r.gid, (m = new Map()));
      m.set(r.start_seq, JSON.stringify(run));
      const l = byGid.get(r.gid);
      if (l) for (const d of fromRuns([run])) l.restore(d);
    }
    for (const r of this.sql.exec<DeliveryRow>("SELECT * FROM deliveries")) {
      const d: PendingDelivery = { seq: r.seq, deliveryId: r.delivery_id, attempt: r.attempt, deadline: r.deadline, state: r.state, reason: r.reason };
      const l = byGid.get(r.gid);
      if (!l) continue;
      l.restore(d);
      l.dirty.add(d.seq); // written again as runs
      if (fixes) fixes.migrated = true;
    }
    for (const l of out.values()) {
      const n = l.restored(maxAttempts);
      if (fixes) fixes.count += n;
    }
    return out;
  }

  /** Deletes the old per-delivery rows once loadAll's ledgers were flushed as runs (call inside that transaction). */
  dropLegacy(): void {
    this.sql.exec("DELETE FROM deliveries");
  }

  /** Creates the row of a new group; returns its ledger. */
  create(name: string, next: number): GroupLedger {
    const gid = this.sql.exec<{ gid: number }>(
      "INSERT INTO consumer_groups(name, next, epoch, owner) VALUES (?, ?, 0, NULL) RETURNING gid", name, next).one().gid;
    return new GroupLedger(gid, name, next);
  }

  /** Deletes a group's ledger, its deliveries and its pause (group delete). */
  drop(l: GroupLedger): void {
    if (this.spilled.delete(l.gid)) this.sql.exec("DELETE FROM delivery_runs WHERE gid = ?", l.gid);
    this.sql.exec("DELETE FROM consumer_groups WHERE gid = ?", l.gid);
  }

  /** Every paused group and the end of its pause, unix ms. */
  loadPauses(): Map<string, number> {
    return new Map(this.sql.exec<{ name: string; until: number }>("SELECT name, until FROM group_pauses").toArray().map((r) => [r.name, r.until]));
  }

  /** Pauses `name` until `until` (unix ms), or resumes it (null). */
  setPause(name: string, until: number | null): void {
    if (until === null) this.sql.exec("DELETE FROM group_pauses WHERE name = ?", name);
    else this.sql.exec("INSERT INTO group_pauses(name, until) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET until = excluded.until", name, until);
  }

  /**
   * Writes what changed in `l` (call inside transactionSync): the group's
   * row (position, owner, counters and, while inline, the runs) as one
   * UPDATE; while spilled, only the runs that changed.
   */
  flush(l: GroupLedger): void {
    let runs: string | null | undefined; // undefined: the runs column stays as it is
    if (l.dirty.size > 0 || l.removed.size > 0) runs = this.writeRuns(l.gid, toRuns(l.pending.values()));
    if (l.metaDirty || runs !== undefined) {
      const c = l.counters;
      const owner = l.owner === null ? null : JSON.stringify(l.owner);
      if (runs === undefined) {
        this.sql.exec("UPDATE consumer_groups SET next = ?, epoch = ?, owner = ?, delivered = ?, acked = ?, redelivered = ?, dead_lettered = ?, retention_skipped = ? WHERE gid = ?",
          l.next, l.ownershipEpoch, owner, c.delivered, c.acked, c.redelivered, c.deadLettered, c.retentionSkipped, l.gid);
      } else {
        this.sql.exec("UPDATE consumer_groups SET next = ?, epoch = ?, owner = ?, delivered = ?, acked = ?, redelivered = ?, dead_lettered = ?, retention_skipped = ?, runs = ? WHERE gid = ?",
          l.next, l.ownershipEpoch, owner, c.delivered, c.acked, c.redelivered, c.deadLettered, c.retentionSkipped, runs, l.gid);
      }
      l.metaDirty = false;
    }
    l.removed.clear();
    l.dirty.clear();
  }

  /**
   * Stores a group's runs: at most INLINE_RUNS → their JSON for the group's
   * row (spilled rows deleted); more → the changed `delivery_runs` rows
   * (one statement per kind of change, the rows travel as one JSON array)
   * and null for the row (undefined when it already said spilled).
   */
  private writeRuns(gid: number, runs: DeliveryRun[]): string | null | undefined {
    const old = this.spilled.get(gid);
    if (runs.length <= INLINE_RUNS) {
      if (old) {
        this.sql.exec("DELETE FROM delivery_runs WHERE gid = ?", gid);
        this.spilled.delete(gid);
      }
      return JSON.stringify(runs);
    }
    const next = new Map<number, string>();
    for (const r of runs) next.set(r[0], JSON.stringify(r));
    const gone: number[] = [];
    const changed: DeliveryRun[] = [];
    if (old) for (const k of old.keys()) if (!next.has(k)) gone.push(k);
    for (const r of runs) if (old?.get(r[0]) !== next.get(r[0])) changed.push(r);
    if (gone.length > 0) this.sql.exec("DELETE FROM delivery_runs WHERE gid = ? AND start_seq IN (SELECT value FROM json_each(?))", gid, JSON.stringify(gone));
    if (changed.length > 0) {
      this.sql.exec(`INSERT INTO delivery_runs SELECT ?, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?) WHERE true
        ON CONFLICT(gid, start_seq) DO UPDATE SET end_seq = excluded.end_seq, first_id = excluded.first_id, attempt = excluded.attempt,
        deadline = excluded.deadline, state = excluded.state, reason = excluded.reason`, gid, JSON.stringify(changed));
    }
    this.spilled.set(gid, next);
    return old ? undefined : null;
  }
}
