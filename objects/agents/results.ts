/**
 * Building the AgentRegistry's answers (rpc.ts): a failure, and the
 * DISCOVER result form of a stored card. Pure.
 */
import { RESERVED_CARD_KEY } from "../../wire/mq9/agent-requests";

/** A failure answer. */
export function agentFailure(status: number, error: string): { ok: false; status: number; error: string } {
  return { ok: false, status, error };
}

/**
 * The JSON text of a stored card as DISCOVER returns it: the registered
 * JSON object itself, verbatim (not wrapped, never parsed and serialized
 * again, so a card of any nesting depth comes back as stored). When the
 * agent has REPORTed, the reserved key `_mq9` is spliced in as the last
 * member: `{"report": <latest REPORT body, verbatim>, "report_time": <unix s>}`.
 *
 * Returns null when the stored card (or report) is not a JSON object: such a
 * row is left out of the reply rather than breaking it for every card.
 */
export function discoveredCardJson(cardJson: string, reportJson: string | null, reportAtMs: number | null): string | null {
  const card = parsedObject(cardJson);
  if (card === null) return null;
  if (reportJson === null || reportAtMs === null) return cardJson.trim();
  if (parsedObject(reportJson) === null) return null;
  const open = cardJson.trim().slice(0, -1).trimEnd(); // without the closing brace
  const sep = Object.keys(card).length === 0 ? "" : ",";
  return `${open}${sep}"${RESERVED_CARD_KEY}":{"report":${reportJson.trim()},"report_time":${Math.floor(reportAtMs / 1000)}}}`;
}

/** `text` parsed when it is one JSON object, else null. JSON.parse is iterative in V8: deep nesting is fine. */
function parsedObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
