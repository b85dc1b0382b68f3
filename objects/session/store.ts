/**
 * SQLite storage of one MortarSession (all its SQL): the group memberships
 * of its open subscriptions, table `subs`, so that a session that restarts
 * without its in-memory state (crash, eviction) can make those members
 * leave their groups. Rows are rewritten whenever the open subscriptions
 * change; the table is created when the object starts.
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

/** The `subs` table of one MortarSession object (created when the object starts). */
export class SessionStore {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(`CREATE TABLE IF NOT EXISTS subs(sub_id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, incarnation INTEGER NOT NULL,
      topic_id INTEGER NOT NULL, grp TEXT NOT NULL, member_id INTEGER NOT NULL, membership_epoch INTEGER NOT NULL)`);
  }

  /** Every recorded membership (after a restart: the members whose state was lost). */
  members(): MemberRow[] {
    return this.storage.sql.exec<SubRow>("SELECT * FROM subs").toArray().map((r) => ({
      subscriptionId: r.sub_id, tenant: r.tenant, incarnation: r.incarnation, topicId: r.topic_id, group: r.grp,
      memberId: r.member_id, membershipEpoch: r.membership_epoch,
    }));
  }

  /** Replaces the records with the joined members of `subs` (memberId 0: not joined yet, not recorded), for `tenant`. */
  record(tenant: string, subs: Iterable<Subscription>): void {
    this.storage.transactionSync(() => {
      this.storage.sql.exec("DELETE FROM subs");
      for (const s of subs) {
        if (s.memberId === 0) continue;
        this.storage.sql.exec("INSERT INTO subs VALUES (?,?,?,?,?,?,?)",
          s.id, tenant, s.topic.incarnation, s.topic.topicId, s.group, s.memberId, s.membershipEpoch);
      }
    });
  }

  /** Drops every record. */
  clear(): void {
    this.storage.sql.exec("DELETE FROM subs");
  }
}
