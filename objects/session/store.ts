/**
 * SQLite storage of one MortarSession (all its SQL): the group memberships
 * of its open subscriptions, table `subs`, so that a session that restarts
 * without its in-memory state (crash, eviction) can make those members
 * leave their groups. Rows are rewritten whenever the open subscriptions
 * change. The table is created by the first membership recorded, so a
 * session that never subscribes to a group (one that never authenticates
 * among them) writes nothing and its object file holds nothing (the local
 * runtime removes such files: client/local/state-reaper.ts).
 */
import type { Subscription } from "./subscription";

/** One recorded membership. */
export interface MemberRow {
  subscriptionId: number;
  tenant: string;
  incarnation: number;
  topicId: number;
  group: string;
  memberId: number;
  membershipEpoch: number;
}

interface SubRow extends Record<string, SqlStorageValue> {
  sub_id: number; tenant: string; incarnation: number; topic_id: number; grp: string; member_id: number; membership_epoch: number;
}

/** The `subs` table of one MortarSession object (created by the first membership recorded). */
export class SessionStore {
  /** Whether `subs` exists (read once, then kept). */
  private created: boolean;

  constructor(private readonly storage: DurableObjectStorage) {
    this.created = storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'subs'").toArray().length > 0;
  }

  /** Creates `subs` if it does not exist yet. */
  private ensure(): void {
    if (this.created) return;
    this.storage.sql.exec(`CREATE TABLE IF NOT EXISTS subs(sub_id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, incarnation INTEGER NOT NULL,
      topic_id INTEGER NOT NULL, grp TEXT NOT NULL, member_id INTEGER NOT NULL, membership_epoch INTEGER NOT NULL)`);
    this.created = true;
  }

  /** Every recorded membership (after a restart: the members whose state was lost). */
  members(): MemberRow[] {
    if (!this.created) return [];
    return this.storage.sql.exec<SubRow>("SELECT * FROM subs").toArray().map((r) => ({
      subscriptionId: r.sub_id, tenant: r.tenant, incarnation: r.incarnation, topicId: r.topic_id, group: r.grp,
      memberId: r.member_id, membershipEpoch: r.membership_epoch,
    }));
  }

  /** Replaces the records with the joined members of `subs` (memberId 0: not joined yet, not recorded), for `tenant`. */
  record(tenant: string, subs: Iterable<Subscription>): void {
    const joined = [...subs].filter((s) => s.memberId !== 0);
    if (!this.created && joined.length === 0) return; // nothing recorded, nothing to record
    this.ensure();
    this.storage.transactionSync(() => {
      this.storage.sql.exec("DELETE FROM subs");
      for (const s of joined) {
        this.storage.sql.exec("INSERT INTO subs VALUES (?,?,?,?,?,?,?)",
          s.id, tenant, s.topic.incarnation, s.topic.topicId, s.group, s.memberId, s.membershipEpoch);
      }
    });
  }

  /** Drops every record. */
  clear(): void {
    if (this.created) this.storage.sql.exec("DELETE FROM subs");
  }
}
