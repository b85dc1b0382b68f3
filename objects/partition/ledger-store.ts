/**
 * SQLite persistence of the consumer-group ledgers of one partition
 * (ledger.ts).
 *
 * Tables:
 * - `consumer_groups(gid, name, next, epoch, owner, delivered, acked, redelivered, dead_lettered,
 *   retention_skipped)`: one row per group that ever owned the partition;
 *   `owner` is JSON (OwnerRef) or NULL; `retention_skipped` (records
 *   retention deleted before the group settled them) is added to tables a
 *   release wrote without it when the object starts.
 * - `deliveries(gid, seq, delivery_id, attempt, deadline, state, reason)`:
 *   one row per unsettled delivery (in flight, waiting for redelivery, or
 *   waiting to be dead-lettered). An ACK deletes the row.
 * - `group_pauses(name, until)`: a paused group (consumer-group management,
 *   docs/groups.md) and when its pause ends (unix ms); kept by name, so a
 *   group may be paused before it owns the partition.
 *
 * Every ledger change is flushed in the same transaction as the call that
 * made it, so a restart resumes with the same attempts, delivery ids and
 * deadlines.
 */
import { GroupLedger, type PendingDelivery } from "./ledger";
import type { OwnerRef } from "./rpc";

interface GroupRow extends Record<string, SqlStorageValue> {
  gid: number; name: string; next: number; epoch: number; owner: string | null;
  delivered: number; acked: number; redelivered: number; dead_lettered: number; retention_skipped: number;
}
interface DeliveryRow extends Record<string, SqlStorageValue> {
  gid: number; seq: number; delivery_id: number; attempt: number; deadline: number; state: number; reason: number;
}

/** Creates the tables if missing. */
export function ensureLedgerSchema(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS consumer_groups(gid INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
      next INTEGER NOT NULL, epoch INTEGER NOT NULL, owner TEXT, delivered INTEGER NOT NULL DEFAULT 0, acked INTEGER NOT NULL DEFAULT 0,
      redelivered INTEGER NOT NULL DEFAULT 0, dead_lettered INTEGER NOT NULL DEFAULT 0, retention_skipped INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS deliveries(gid INTEGER NOT NULL, seq INTEGER NOT NULL, delivery_id INTEGER NOT NULL,
      attempt INTEGER NOT NULL, deadline INTEGER NOT NULL, state INTEGER NOT NULL, reason INTEGER NOT NULL,
      PRIMARY KEY(gid, seq)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS group_pauses(name TEXT PRIMARY KEY, until INTEGER NOT NULL);`);
  // Released layouts before retention had no retention_skipped column.
  if (sql.exec("SELECT 1 FROM pragma_table_info('consumer_groups') WHERE name = 'retention_skipped'").toArray().length === 0) {
    sql.exec("ALTER TABLE consumer_groups ADD COLUMN retention_skipped INTEGER NOT NULL DEFAULT 0");
  }
}

export class LedgerStore {
  constructor(private readonly sql: SqlStorage) {
    ensureLedgerSchema(sql);
  }

  /**
   * Every stored ledger, by group name. `maxAttempts` repairs deliveries
   * left waiting for redelivery after their last attempt (GroupLedger.restored);
   * `repaired` counts them (the caller flushes and schedules the transfer).
   */
  loadAll(maxAttempts?: number, repaired?: { count: number }): Map<string, GroupLedger> {
    const out = new Map<string, GroupLedger>();
    const byGid = new Map<number, GroupLedger>();
    for (const r of this.sql.exec<GroupRow>("SELECT * FROM consumer_groups")) {
      const l = new GroupLedger(r.gid, r.name, r.next, r.epoch, r.owner === null ? null : (JSON.parse(r.owner) as OwnerRef));
      l.counters = { delivered: r.delivered, acked: r.acked, redelivered: r.redelivered, deadLettered: r.dead_lettered, retentionSkipped: r.retention_skipped };
      out.set(r.name, l);
      byGid.set(r.gid, l);
    }
    for (const r of this.sql.exec<DeliveryRow>("SELECT * FROM deliveries")) {
      const d: PendingDelivery = { seq: r.seq, deliveryId: r.delivery_id, attempt: r.attempt, deadline: r.deadline, state: r.state, reason: r.reason };
      byGid.get(r.gid)?.restore(d);
    }
    for (const l of out.values()) {
      const n = l.restored(maxAttempts);
      if (repaired) repaired.count += n;
    }
    return out;
  }

  /** Creates the row of a new group; returns its ledger. */
  create(name: string, next: number): GroupLedger {
    const gid = this.sql.exec<{ gid: number }>(
      "INSERT INTO consumer_groups(name, next, epoch, owner) VALUES (?, ?, 0, NULL) RETURNING gid", name, next).one().gid;
    return new GroupLedger(gid, name, next);
  }

  /** Deletes a group's ledger, its deliveries and its pause (group delete). */
  drop(l: GroupLedger): void {
    this.sql.exec("DELETE FROM deliveries WHERE gid = ?", l.gid);
    this.sql.exec("DELETE FROM consumer_groups WHERE gid = ?", l.gid);
  }

  /** Every paused group and the end of its pause, unix ms. */
  loadPauses(): Map<string, number> {
    return new Map(this.sql.exec<{ name: string; until: number }>("SELECT name, until FROM group_pauses").toArray().map((r) => [r.name, r.until]));
  }

  /** Pauses `name` until `until` (unix ms), or resumes it (null). */
  setPause(name: string, until: number | null): void {
    if (until === null) this.sql.exec("DELETE FROM group_pauses WHERE name = ?", name);
    else this.sql.exec("INSERT OR REPLACE INTO group_pauses(name, until) VALUES (?, ?)", name, until);
  }

  /** Writes what changed in `l` (call inside transactionSync). */
  flush(l: GroupLedger): void {
    if (l.metaDirty) {
      const c = l.counters;
      this.sql.exec("UPDATE consumer_groups SET next = ?, epoch = ?, owner = ?, delivered = ?, acked = ?, redelivered = ?, dead_lettered = ?, retention_skipped = ? WHERE gid = ?",
        l.next, l.ownershipEpoch, l.owner === null ? null : JSON.stringify(l.owner), c.delivered, c.acked, c.redelivered, c.deadLettered, c.retentionSkipped, l.gid);
      l.metaDirty = false;
    }
    // One statement per kind of change, whatever the batch size: the rows travel as one JSON array.
    if (l.removed.size > 0) {
      this.sql.exec("DELETE FROM deliveries WHERE gid = ? AND seq IN (SELECT value FROM json_each(?))", l.gid, JSON.stringify([...l.removed]));
    }
    if (l.dirty.size > 0) {
      const rows: number[][] = [];
      for (const s of l.dirty) {
        const d = l.pending.get(s);
        if (d) rows.push([s, d.deliveryId, d.attempt, d.deadline, d.state, d.reason]);
      }
      this.sql.exec(`INSERT OR REPLACE INTO deliveries SELECT ?, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5
        FROM json_each(?)`, l.gid, JSON.stringify(rows));
    }
    l.removed.clear();
    l.dirty.clear();
  }
}
