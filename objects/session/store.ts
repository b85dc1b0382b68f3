/**
 * SQLite storage of one MortarSession (all its SQL): the read path's
 * snapshot (snapshot.ts), one row in table `consumer`, rewritten only when
 * its JSON changed (subscriptions opened or closed, epochs, NOTICEs, owned
 * partitions, credit window) — a hot path of deliveries and ACKs writes
 * nothing. The object rebuilt after the runtime evicted it (the socket is
 * still open) restores its Consumer from it; rebuilt without its socket,
 * it makes the members leave their groups.
 *
 * The table is created by the first snapshot holding a subscription, so a
 * session that never subscribes writes nothing and its object file holds
 * nothing (the local runtime removes such files: client/local/state-reaper.ts).
 * Table `subs` is what an earlier version wrote (memberships only, no
 * state to resume): found after a restart, those members leave and the
 * connection closes (1011).
 */
import { structuralKey, validSnapshot, type ConsumerSnapshot } from "./snapshot";

/** One recorded membership (what a member needs to leave its group). */
export interface MemberRow {
  subscriptionId: number;
  tenant: string;
  incarnation: number;
  topicId: number;
  group: string;
  memberId: number;
  membershipEpoch: number;
}

/** What a rebuilt session found. */
export type Stored =
  | { kind: "none" }
  | { kind: "snapshot"; tenant: string; snapshot: ConsumerSnapshot }
  /** Memberships without a usable state (an earlier version's `subs` rows, or a malformed snapshot). */
  | { kind: "lost"; members: MemberRow[] };

interface LegacyRow extends Record<string, SqlStorageValue> {
  sub_id: number; tenant: string; incarnation: number; topic_id: number; grp: string; member_id: number; membership_epoch: number;
}

/** The `consumer` table of one MortarSession object (created by the first snapshot with a subscription). */
export class SessionStore {
  /** Whether `consumer` exists (read once, then kept). */
  private created: boolean;
  /** JSON last written ("" = no row), and its structural key. */
  private written = "";
  private writtenKey = "";

  constructor(private readonly storage: DurableObjectStorage) {
    this.created = this.hasTable("consumer");
  }

  private hasTable(name: string): boolean {
    return this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;
  }

  /** What the object holds from before (read once, at construction). */
  load(): Stored {
    const lost: MemberRow[] = [];
    if (this.hasTable("subs")) {
      for (const r of this.storage.sql.exec<LegacyRow>("SELECT * FROM subs")) {
        lost.push({ subscriptionId: r.sub_id, tenant: r.tenant, incarnation: r.incarnation, topicId: r.topic_id, group: r.grp, memberId: r.member_id, membershipEpoch: r.membership_epoch });
      }
    }
    let found: { tenant: string; snapshot: ConsumerSnapshot } | null = null;
    let malformed = false;
    if (this.created) {
      const row = this.storage.sql.exec<{ tenant: string; state: string }>("SELECT tenant, state FROM consumer WHERE id = 0").toArray()[0];
      if (row) {
        this.written = row.state;
        let snap: unknown = null;
        try {
          snap = JSON.parse(row.state);
        } catch {
          /* malformed */
        }
        if (validSnapshot(snap)) {
          found = { tenant: row.tenant, snapshot: snap };
          this.writtenKey = structuralKey(snap);
        }
        else malformed = true;
      }
    }
    if (found && lost.length === 0) return { kind: "snapshot", ...found };
    if (found) lost.push(...membersOf(found.tenant, found.snapshot));
    return lost.length > 0 || malformed ? { kind: "lost", members: lost } : { kind: "none" };
  }

  /**
   * Writes `snap` for `tenant` (one row; an empty one removes it) when it
   * differs from what is stored — while `busy`, only when its structure
   * does (structuralKey): parked flags flip with every delivery cycle.
   */
  save(tenant: string, snap: ConsumerSnapshot, busy: boolean): void {
    const empty = snap.subs.length === 0;
    const json = empty ? "" : JSON.stringify(snap);
    const key = empty ? "" : structuralKey(snap);
    if (json === this.written || (busy && key === this.writtenKey)) return;
    if (empty) {
      this.storage.sql.exec("DELETE FROM consumer");
    } else {
      if (!this.created) {
        this.storage.sql.exec("CREATE TABLE IF NOT EXISTS consumer(id INTEGER PRIMARY KEY CHECK (id = 0), tenant TEXT NOT NULL, state TEXT NOT NULL)");
        this.created = true;
      }
      this.storage.sql.exec("INSERT OR REPLACE INTO consumer VALUES (0, ?, ?)", tenant, json);
    }
    this.written = json;
    this.writtenKey = key;
  }

  /** Drops everything recorded (snapshot and an earlier version's rows). */
  clear(): void {
    if (this.created) this.storage.sql.exec("DELETE FROM consumer");
    if (this.hasTable("subs")) this.storage.sql.exec("DELETE FROM subs");
    this.written = this.writtenKey = "";
  }
}

/** The joined members of a snapshot (to make them leave). */
export function membersOf(tenant: string, snap: ConsumerSnapshot): MemberRow[] {
  return snap.subs.filter((s) => s.memberId !== 0 && !s.removed).map((s) => ({
    subscriptionId: s.id, tenant, incarnation: s.topic.incarnation, topicId: s.topic.topicId, group: s.group,
    memberId: s.memberId, membershipEpoch: s.membershipEpoch,
  }));
}
