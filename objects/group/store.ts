/**
 * SQLite persistence of a ConsumerGroup (state.ts) and its effect outbox.
 *
 * Tables:
 * - `group_meta(k, v)`: counters (member/notice sequences, epochs),
 *   partition_count, start_policy, metrics counters.
 * - `members(id, session_id, sub_id, membership_epoch, assignment_epoch, join_seq, lease_ms)`
 *   (last-seen times are kept in memory only: after a restart every member
 *   gets a fresh session timeout, or a fresh lease when it has one —
 *   `lease_ms`, null = the session timeout; the column is added to a table
 *   an earlier version created).
 * - `parts(p, owner, epoch, fenced, revoke_notice, revoke_deadline)`
 * - `notices(id, member_id, kind, partition, membership_epoch, assignment_epoch, ownership_epoch)`
 * - `resets(p, position)`: a reset waiting for partition p's next fence
 *   (consumer-group management, docs/groups.md).
 * - `outbox(id, effect)`: effects (JSON) still to execute, in order. They
 *   are written in the same transaction as the state change that produced
 *   them and deleted once executed, so a restart resumes where it stopped
 *   (an effect may run twice; both kinds are idempotent at the receiver).
 */
import { MetaTable } from "../shared/meta-table";
import { GroupState, type Effect, type GroupTimers } from "./state";

interface MemberRow extends Record<string, SqlStorageValue> {
  id: number; session_id: string; sub_id: number; membership_epoch: number; assignment_epoch: number; join_seq: number; lease_ms: number | null;
}
interface PartRow extends Record<string, SqlStorageValue> {
  p: number; owner: number | null; epoch: number; fenced: number; revoke_notice: number | null; revoke_deadline: number | null;
}
interface NoticeRow extends Record<string, SqlStorageValue> {
  id: number; member_id: number; kind: number; partition: number; membership_epoch: number; assignment_epoch: number; ownership_epoch: number;
}

/** One queued effect. */
export interface OutboxEntry {
  id: number;
  effect: Effect;
}

export class GroupStore {
  private readonly metaTable: MetaTable;

  constructor(private readonly sql: SqlStorage) {
    this.metaTable = new MetaTable(sql, "group_meta");
    sql.exec(`CREATE TABLE IF NOT EXISTS members(id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, sub_id INTEGER NOT NULL,
        membership_epoch INTEGER NOT NULL, assignment_epoch INTEGER NOT NULL, join_seq INTEGER NOT NULL, lease_ms INTEGER);
      CREATE TABLE IF NOT EXISTS parts(p INTEGER PRIMARY KEY, owner INTEGER, epoch INTEGER NOT NULL, fenced INTEGER NOT NULL,
        revoke_notice INTEGER, revoke_deadline INTEGER);
      CREATE TABLE IF NOT EXISTS notices(id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL, kind INTEGER NOT NULL, partition INTEGER NOT NULL,
        membership_epoch INTEGER NOT NULL, assignment_epoch INTEGER NOT NULL, ownership_epoch INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS outbox(id INTEGER PRIMARY KEY AUTOINCREMENT, effect TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS resets(p INTEGER PRIMARY KEY, position INTEGER NOT NULL);`);
    const columns = sql.exec<{ name: string }>("PRAGMA table_info(members)").toArray();
    if (!columns.some((c) => c.name === "lease_ms")) sql.exec("ALTER TABLE members ADD COLUMN lease_ms INTEGER"); // a table of an earlier version
  }

  /** A meta value, or `dflt` when unset. */
  meta(k: string, dflt = 0): number {
    return this.metaTable.get(k, dflt);
  }

  /** Sets a meta value. */
  setMeta(k: string, v: number): void {
    this.metaTable.set(k, v);
  }

  /** Loads the stored state (null when the group was never joined). Members' last-seen = `now`. */
  load(timers: GroupTimers, now: number): GroupState | null {
    const count = this.meta("partition_count", -1);
    if (count < 0) return null;
    const g = new GroupState(count, timers);
    g.meta = {
      memberSeq: this.meta("member_seq"), membershipEpoch: this.meta("membership_epoch"),
      assignmentEpoch: this.meta("assignment_epoch"), noticeSeq: this.meta("notice_seq"),
    };
    g.counters = { rebalances: this.meta("rebalances"), forcedRevocations: this.meta("forced_revocations"), expiredMembers: this.meta("expired_members") };
    const paused = this.meta("paused_until");
    g.pausedUntil = paused > 0 ? paused : null;
    for (const r of this.sql.exec<MemberRow>("SELECT * FROM members")) {
      g.members.set(r.id, {
        id: r.id, session: { sessionId: r.session_id, subscriptionId: r.sub_id },
        membershipEpoch: r.membership_epoch, assignmentEpoch: r.assignment_epoch, joinSeq: r.join_seq, lastSeen: now,
        leaseMs: r.lease_ms ?? null,
      });
    }
    for (const r of this.sql.exec<PartRow>("SELECT * FROM parts")) {
      if (r.p >= count) continue;
      g.partitions[r.p] = {
        owner: r.owner, ownershipEpoch: r.epoch, fenced: r.fenced === 1,
        revoke: r.revoke_notice === null ? null : { noticeId: r.revoke_notice, deadline: r.revoke_deadline ?? now },
        reset: null,
      };
    }
    for (const r of this.sql.exec<{ p: number; position: number }>("SELECT p, position FROM resets")) {
      const part = g.partitions[r.p];
      if (part) part.reset = r.position;
    }
    for (const r of this.sql.exec<NoticeRow>("SELECT * FROM notices")) {
      g.notices.set(r.id, {
        id: r.id, memberId: r.member_id, kind: r.kind, partition: r.partition,
        membershipEpoch: r.membership_epoch, assignmentEpoch: r.assignment_epoch, ownershipEpoch: r.ownership_epoch,
      });
    }
    return g;
  }

  /** Writes what changed in `g` and appends `effects` to the outbox. Call inside transactionSync. */
  save(g: GroupState, effects: readonly Effect[]): void {
    const ch = g.takeChanges();
    for (const id of ch.removedMembers) this.sql.exec("DELETE FROM members WHERE id = ?", id);
    for (const m of ch.members) {
      this.sql.exec("INSERT OR REPLACE INTO members(id, session_id, sub_id, membership_epoch, assignment_epoch, join_seq, lease_ms) VALUES (?,?,?,?,?,?,?)",
        m.id, m.session.sessionId, m.session.subscriptionId, m.membershipEpoch, m.assignmentEpoch, m.joinSeq, m.leaseMs);
    }
    for (const p of ch.partitions) {
      const x = g.partitions[p]!;
      this.sql.exec("INSERT OR REPLACE INTO parts VALUES (?,?,?,?,?,?)",
        p, x.owner, x.ownershipEpoch, x.fenced ? 1 : 0, x.revoke?.noticeId ?? null, x.revoke?.deadline ?? null);
      if (x.reset === null) this.sql.exec("DELETE FROM resets WHERE p = ?", p);
      else this.sql.exec("INSERT OR REPLACE INTO resets(p, position) VALUES (?, ?)", p, x.reset);
    }
    for (const id of ch.removedNotices) this.sql.exec("DELETE FROM notices WHERE id = ?", id);
    for (const n of ch.notices) {
      this.sql.exec("INSERT OR REPLACE INTO notices VALUES (?,?,?,?,?,?,?)",
        n.id, n.memberId, n.kind, n.partition, n.membershipEpoch, n.assignmentEpoch, n.ownershipEpoch);
    }
    const meta: [string, number][] = [
      ["member_seq", g.meta.memberSeq], ["membership_epoch", g.meta.membershipEpoch],
      ["assignment_epoch", g.meta.assignmentEpoch], ["notice_seq", g.meta.noticeSeq],
      ["rebalances", g.counters.rebalances], ["forced_revocations", g.counters.forcedRevocations],
      ["expired_members", g.counters.expiredMembers], ["paused_until", g.pausedUntil ?? 0],
    ];
    // only the values that changed: an alarm that finds nothing to do writes no row (rows read cost 1/1000 of a write)
    for (const [k, v] of meta) if (this.metaTable.get(k, Number.NaN) !== v) this.setMeta(k, v);
    for (const e of effects) this.sql.exec("INSERT INTO outbox(effect) VALUES (?)", JSON.stringify(e));
  }

  /** The oldest queued effect, or null. */
  nextEffect(): OutboxEntry | null {
    for (const r of this.sql.exec<{ id: number; effect: string }>("SELECT id, effect FROM outbox ORDER BY id LIMIT 1")) {
      return { id: r.id, effect: JSON.parse(r.effect) as Effect };
    }
    return null;
  }

  /** Removes an executed effect. */
  done(id: number): void {
    this.sql.exec("DELETE FROM outbox WHERE id = ?", id);
  }

  /** Queued effects. */
  pendingEffects(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM outbox").one().n;
  }
}
