/**
 * SQLite persistence of one NATS connection's subscriptions, so they
 * survive hibernation. The table is created lazily on the first SUB: a
 * connection that never subscribes writes nothing.
 */
import type { Subscription } from "../../wire/nats/subscriptions";

interface SubRow extends Record<string, SqlStorageValue> {
  sid: string;
  subject: string;
  queue: string | null;
  max: number | null;
  delivered: number;
}

/** Subscription rows of one NatsSession object. */
export class SubscriptionStore {
  private ready: boolean;

  constructor(private readonly storage: DurableObjectStorage) {
    this.ready =
      storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'subs'").toArray().length > 0;
  }

  /** True once anything was written (the caller must clean up on close). */
  get used(): boolean {
    return this.ready;
  }

  /** All stored subscriptions. */
  load(): Subscription[] {
    if (!this.ready) return [];
    return this.storage.sql
      .exec<SubRow>("SELECT sid, subject, queue, max, delivered FROM subs")
      .toArray()
      .map((r) => {
        const s: Subscription = { sid: r.sid, subject: r.subject, delivered: r.delivered };
        if (r.queue !== null) s.queue = r.queue;
        if (r.max !== null) s.max = r.max;
        return s;
      });
  }

  /** Applies changes (sid → row, or null = delete) in one transaction. Returns true if the table was just created. */
  apply(changes: Map<string, Subscription | null>): boolean {
    if (changes.size === 0) return false;
    const created = !this.ready;
    this.storage.transactionSync(() => {
      if (!this.ready) {
        this.storage.sql.exec(
          "CREATE TABLE IF NOT EXISTS subs (sid TEXT PRIMARY KEY, subject TEXT NOT NULL, queue TEXT, max INTEGER, delivered INTEGER NOT NULL)",
        );
        this.ready = true;
      }
      for (const [sid, s] of changes) {
        if (s === null) this.storage.sql.exec("DELETE FROM subs WHERE sid = ?", sid);
        else
          this.storage.sql.exec(
            "INSERT OR REPLACE INTO subs (sid, subject, queue, max, delivered) VALUES (?, ?, ?, ?, ?)",
            s.sid, s.subject, s.queue ?? null, s.max ?? null, s.delivered,
          );
      }
    });
    return created;
  }

  /** Deletes everything this object stored (connection closed). */
  async clear(): Promise<void> {
    if (!this.ready) return;
    this.storage.sql.exec("DROP TABLE IF EXISTS subs");
    this.ready = false;
    await this.storage.deleteAlarm();
    await this.storage.deleteAll();
  }
}
