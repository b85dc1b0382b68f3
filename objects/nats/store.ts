/**
 * SQLite persistence of one NATS connection's subscriptions, so they
 * survive hibernation. The table is created lazily on the first SUB: a
 * connection that never subscribes writes nothing. The session base deletes
 * the object's storage when the connection ends.
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

  /** Applies changes (sid → row, or null = delete) in one transaction. */
  apply(changes: Map<string, Subscription | null>): void {
    if (changes.size === 0) return;
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
  }
}
