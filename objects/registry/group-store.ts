/**
 * The consumer groups of a tenant's topics, kept in its TopicRegistry so
 * they can be listed (`GET /v0/topics/:topic/groups`, docs/groups.md) and
 * found when the tenant is purged: a Worker cannot enumerate Durable
 * Objects. A ConsumerGroup records itself on its first join
 * (`registerGroup`) and is forgotten when deleted.
 *
 * Table `topic_groups(incarnation, topic_id, name, created_at)`; all SQL
 * for it is here.
 */

/** The `topic_groups` table of one registry. */
export class GroupIndexStore {
  /** Creates the table if missing. */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS topic_groups(incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, name TEXT NOT NULL,
      created_at INTEGER NOT NULL, PRIMARY KEY(incarnation, topic_id, name)) WITHOUT ROWID`);
  }

  /** Records a group (idempotent: the first time stays); `now` unix ms. */
  add(incarnation: number, topicId: number, name: string, now: number): void {
    this.sql.exec("INSERT OR IGNORE INTO topic_groups(incarnation, topic_id, name, created_at) VALUES (?,?,?,?)", incarnation, topicId, name, now);
  }

  /** Whether the group is recorded. */
  has(incarnation: number, topicId: number, name: string): boolean {
    return this.sql.exec("SELECT 1 FROM topic_groups WHERE incarnation = ? AND topic_id = ? AND name = ?", incarnation, topicId, name).toArray().length > 0;
  }

  /** How many groups of one topic incarnation are recorded. */
  count(incarnation: number, topicId: number): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM topic_groups WHERE incarnation = ? AND topic_id = ?", incarnation, topicId).one().n;
  }

  /** How many groups are recorded over all of the tenant's topics (their storage is counted: config.ts GROUP_STORAGE_BYTES). */
  total(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM topic_groups").one().n;
  }

  /** Forgets a group. */
  remove(incarnation: number, topicId: number, name: string): void {
    this.sql.exec("DELETE FROM topic_groups WHERE incarnation = ? AND topic_id = ? AND name = ?", incarnation, topicId, name);
  }

  /** The recorded groups of one topic incarnation, by name. */
  list(incarnation: number, topicId: number): string[] {
    return this.sql.exec<{ name: string }>("SELECT name FROM topic_groups WHERE incarnation = ? AND topic_id = ? ORDER BY name", incarnation, topicId)
      .toArray().map((r) => r.name);
  }
}
