/**
 * Human output for mq9 replies: message tables (FETCH, QUERY) with payloads
 * as text when printable (base64 otherwise), and agent tables (DISCOVER).
 */
import type { Mq9Message } from "../../wire/mq9";
import { formatTable, formatUnixSeconds, payloadCell, viewPayload, type Cell } from "./format";

/** The messages table: msg_id, priority, created (UTC), key, tags, payload. */
export function renderMessages(messages: Mq9Message[], payloadWidth = 80): string {
  if (messages.length === 0) return "no messages\n";
  const rows: Cell[][] = messages.map((m) => [
    m.msg_id,
    m.priority,
    typeof m.create_time === "number" ? formatUnixSeconds(m.create_time) : null,
    m.key,
    Array.isArray(m.tags) && m.tags.length > 0 ? m.tags.join(",") : null,
    payloadCell(viewPayload(m.payload ?? ""), payloadWidth),
  ]);
  return formatTable(["msg_id", "priority", "created", "key", "tags", "payload"], rows);
}

/** A string field of an agent card, or null. */
function str(v: unknown): string | null {
  return typeof v === "string" && v.length > 0 ? v : null;
}

/** The latest REPORT's `status` field (under the reserved `_mq9` key, docs/agents.md), or null. */
export function reportedStatus(card: Record<string, unknown>): string | null {
  const meta = card._mq9 as { report?: Record<string, unknown> } | undefined;
  const s = meta?.report?.status;
  return s === undefined || s === null ? null : typeof s === "string" ? s : JSON.stringify(s);
}

/** The agents table: name, mailbox, description (cut to 60 characters), reported status. */
export function renderAgents(cards: Record<string, unknown>[]): string {
  if (cards.length === 0) return "no agents\n";
  const cut = (s: string | null) => (s !== null && [...s].length > 60 ? [...s].slice(0, 59).join("") + "…" : s);
  return formatTable(["name", "mailbox", "description", "status"],
    cards.map((c) => [str(c.name), str(c.mailbox), cut(str(c.description)), reportedStatus(c)]));
}
