/**
 * Mailboxes created before segments (segment-store.ts) kept one row per
 * message in table `messages` (msg_id PK, lane, key, tags, payload, size,
 * create_ms, expires_ms, reply_to, correlation_id, dead_letter; indexes on
 * lane, key and correlation_id) with one `schedule` row (kind `expire`,
 * ref = msg_id) per message with a TTL. When such a mailbox loads, its
 * messages move into segments — in msg_id order, in batches of at most
 * {@link BATCH_ROWS} rows and about {@link BATCH_BYTES} of payload, each
 * batch its own transaction (the moved rows
 * deleted, their schedule rows replaced by their segments') — and the
 * table is dropped once empty. A start cut short (a huge mailbox) leaves
 * a consistent state: the next start carries on where it stopped.
 */
import type { Lane } from "../../wire/mq9";
import { cutSegments, type SegmentEntry } from "./segment-pack";
import { ScheduleKind } from "./schedule";
import type { SegmentStore } from "./segment-store";

/** Most legacy rows moved per transaction. */
export const BATCH_ROWS = 512;

/** A batch stops at the row that takes its payloads to this many bytes (rows of up to 1 MiB each). */
export const BATCH_BYTES = 4 * 1024 * 1024;

/** True when the mailbox still has the per-message table. */
export function hasLegacyMessages(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").toArray().length > 0;
}

/** Highest msg_id of the legacy table, or -1 (call before migrating: the ids it held stay taken). */
export function legacyTopId(sql: SqlStorage): number {
  if (!hasLegacyMessages(sql)) return -1;
  return (sql.exec("SELECT MAX(msg_id) AS t FROM messages").one().t as number | null) ?? -1;
}

/**
 * Moves every legacy message row into segments (see the file's comment);
 * `transact` runs one batch all or nothing (storage.transactionSync).
 * The legacy table must have every column (MailboxStore.upgradeSchema).
 * Returns the number of messages moved.
 */
export function migrateLegacyMessages(sql: SqlStorage, segments: SegmentStore, transact: (fn: () => void) => void): number {
  if (!hasLegacyMessages(sql)) return 0;
  let moved = 0;
  for (;;) {
    let n = 0;
    transact(() => {
      let upTo = -1;
      let bytes = 0;
      for (const r of sql.exec("SELECT msg_id, length(payload) AS n FROM messages ORDER BY msg_id LIMIT ?", BATCH_ROWS).toArray()) {
        upTo = r.msg_id as number;
        bytes += r.n as number;
        if (bytes >= BATCH_BYTES) break; // large messages: fewer rows a batch
      }
      const rows = sql.exec(
        `SELECT msg_id, lane, key, tags, payload, create_ms, expires_ms, reply_to, correlation_id, dead_letter
           FROM messages WHERE msg_id <= ? ORDER BY msg_id`, upTo,
      ).toArray();
      n = rows.length;
      if (n === 0) return;
      const entries: SegmentEntry[] = rows.map((r) => ({
        msgId: r.msg_id as number,
        lane: r.lane as Lane,
        createMs: r.create_ms as number,
        expiresMs: r.expires_ms as number | null,
        key: r.key as string | null,
        tags: r.tags as string | null,
        replyTo: r.reply_to as string | null,
        correlationId: r.correlation_id as string | null,
        deadLetter: r.dead_letter as string | null,
        payload: new Uint8Array(r.payload as ArrayBuffer),
      }));
      const last = entries[entries.length - 1]!.msgId;
      sql.exec("DELETE FROM schedule WHERE kind = ? AND ref <= ? AND ref IN (SELECT msg_id FROM messages WHERE msg_id <= ?)", ScheduleKind.expire, last, last);
      sql.exec("DELETE FROM messages WHERE msg_id <= ?", last);
      for (const run of cutSegments(entries)) segments.adopt(run);
      for (const e of entries) {
        if (e.key !== null) sql.exec("INSERT OR REPLACE INTO keys (key, msg_id) VALUES (?, ?)", e.key, e.msgId);
      }
      moved += n;
    });
    if (n === 0) break;
  }
  transact(() => sql.exec("DROP TABLE IF EXISTS messages"));
  return moved;
}
