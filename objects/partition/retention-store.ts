/**
 * The retention settings one Partition was told by its TopicRegistry
 * (RetentionUpdate; docs/protocol.md "Topic retention"), in one row.
 *
 * Table `retention_settings(id = 0, version, topic, ms, bytes, messages,
 * discard)`: NULL fields follow the deployment defaults (Worker vars);
 * `discard` 0 = old, 1 = new. No row (a partition that registered before
 * retention existed and was not told yet) = nothing set, version −1.
 */
import type { RetentionOverrides } from "../shared/retention-config";
import type { RetentionUpdate } from "./rpc";

interface Row extends Record<string, SqlStorageValue> {
  version: number; topic: string; ms: number | null; bytes: number | null; messages: number | null; discard: number | null;
}

/** What a partition holds before it was told anything. */
export const UNTOLD: RetentionUpdate = Object.freeze({
  version: -1, topic: "", overrides: Object.freeze({ ms: null, bytes: null, messages: null, discard: null }) as RetentionOverrides,
});

export class RetentionSettingsStore {
  /** Creates the table if missing. */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS retention_settings(id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL,
      topic TEXT NOT NULL, ms INTEGER, bytes INTEGER, messages INTEGER, discard INTEGER)`);
  }

  /** The stored settings, or UNTOLD. */
  load(): RetentionUpdate {
    for (const r of this.sql.exec<Row>("SELECT * FROM retention_settings WHERE id = 0")) {
      return {
        version: r.version, topic: r.topic,
        overrides: { ms: r.ms, bytes: r.bytes, messages: r.messages, discard: r.discard === null ? null : r.discard === 1 ? "new" : "old" },
      };
    }
    return UNTOLD;
  }

  /** Stores `u`. */
  save(u: RetentionUpdate): void {
    const o = u.overrides;
    this.sql.exec("INSERT OR REPLACE INTO retention_settings VALUES (0, ?, ?, ?, ?, ?, ?)",
      u.version, u.topic, o.ms, o.bytes, o.messages, o.discard === null ? null : o.discard === "new" ? 1 : 0);
  }
}
