/**
 * Result types of the AgentRegistry object and the DISCOVER result form of
 * a stored card. Pure.
 */
import { RESERVED_CARD_KEY } from "../../wire/mq9/agent-requests";

/** An AgentRegistry answer: success fields, or an mq9 error string with its HTTP status. */
export type AgentResult<T extends object = object> = ({ ok: true } & T) | { ok: false; status: number; error: string };

/** A failure answer. */
export function agentFailure(status: number, error: string): { ok: false; status: number; error: string } {
  return { ok: false, status, error };
}

/**
 * A stored card as DISCOVER returns it: the registered JSON object itself
 * (not wrapped). When the agent has REPORTed, the reserved key `_mq9` is
 * added to it: `{"report": <latest REPORT body>, "report_time": <unix s>}`.
 */
export function discoveredCard(cardJson: string, reportJson: string | null, reportAtMs: number | null): Record<string, unknown> {
  const card = JSON.parse(cardJson) as Record<string, unknown>;
  if (reportJson !== null && reportAtMs !== null) {
    card[RESERVED_CARD_KEY] = { report: JSON.parse(reportJson) as unknown, report_time: Math.floor(reportAtMs / 1000) };
  }
  return card;
}
