/**
 * Test helper: a Mailbox's stored messages as rows, read inside the object
 * (runInDurableObject) from its segments (objects/mailbox/segment-store.ts),
 * in the shape the per-message table had, and how many rows hold them.
 */
import { decodeSegment } from "../../../objects/mailbox/segment-pack";

/** One stored message as the per-message `messages` table had it (size = payload bytes). */
export interface MessageRow {
  msg_id: number;
  lane: number;
  key: string | null;
  tags: string | null;
  payload: Uint8Array;
  size: number;
  create_ms: number;
  expires_ms: number | null;
  reply_to: string | null;
  correlation_id: string | null;
  dead_letter: string | null;
}

/** Every stored visible message of the mailbox whose SQL is `sql` (expired ones not yet swept included), msg_id ascending. */
export function messageRows(sql: SqlStorage): MessageRow[] {
  const out: MessageRow[] = [];
  for (const r of sql.exec("SELECT seg_id, body FROM segments ORDER BY seg_id")) {
    for (const e of decodeSegment(r.seg_id as number, r.body as ArrayBuffer)) {
      out.push({
        msg_id: e.msgId, lane: e.lane, key: e.key, tags: e.tags, payload: e.payload.slice(), size: e.payload.byteLength,
        create_ms: e.createMs, expires_ms: e.expiresMs, reply_to: e.replyTo, correlation_id: e.correlationId, dead_letter: e.deadLetter,
      });
    }
  }
  return out;
}

/** Rows that hold the mailbox's messages: segment rows and key rows. */
export function messageTableRows(sql: SqlStorage): { segments: number; keys: number } {
  const n = (t: string) => sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${t}`).one().n;
  return { segments: n("segments"), keys: n("keys") };
}
