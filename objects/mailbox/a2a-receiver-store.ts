/**
 * A mailbox's A2A push-notification receiver token (docs/a2a.md): at most
 * one, stored as its SHA-256 hex in table `a2a_receiver` (created on first
 * use; dropped with the mailbox by `deleteAll`). Synchronous calls on
 * `ctx.storage.sql`.
 */
import { timingSafeEqualStr } from "../../wire/admin/tenants";

const SCHEMA = "CREATE TABLE IF NOT EXISTS a2a_receiver (id INTEGER PRIMARY KEY CHECK (id = 1), token_hash TEXT NOT NULL, created_ms INTEGER NOT NULL)";

/** What the Mailbox's `a2aReceiver` RPC does. */
export type A2aReceiverOp =
  | { op: "set"; tokenHash: string; nowMs: number }
  | { op: "delete" }
  | { op: "check"; tokenHash: string };

/** Runs `op`: `set` replaces the token, `delete` removes it, `check` answers `valid` (constant-time compare). */
export function a2aReceiverOp(sql: SqlStorage, op: A2aReceiverOp): { valid: boolean } {
  sql.exec(SCHEMA);
  switch (op.op) {
    case "set":
      sql.exec("INSERT OR REPLACE INTO a2a_receiver (id, token_hash, created_ms) VALUES (1, ?, ?)", op.tokenHash, op.nowMs);
      return { valid: true };
    case "delete":
      sql.exec("DELETE FROM a2a_receiver");
      return { valid: true };
    case "check": {
      const row = sql.exec<{ token_hash: string }>("SELECT token_hash FROM a2a_receiver WHERE id = 1").toArray()[0];
      return { valid: row !== undefined && timingSafeEqualStr(row.token_hash, op.tokenHash) };
    }
  }
}
