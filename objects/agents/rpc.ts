/**
 * Types of the AgentRegistry RPC surface (objects/agents/AgentRegistry.ts):
 * the requests as wire/mq9/agent-requests.ts decodes and checks them, and
 * the answers.
 */
export type { AgentSelector, DiscoverSpec, RegisterSpec, ReportSpec } from "../../wire/mq9/agent-requests";

/**
 * An AgentRegistry answer: success fields, or an mq9 error string with its
 * HTTP status; a REGISTER refused by `replaceOnlyMailboxKey` (403) also
 * names the mailbox key the agent is registered with (null: none).
 */
export type AgentResult<T extends object = object> =
  | ({ ok: true } & T)
  | { ok: false; status: number; error: string; registeredMailbox?: string | null };

/** `counts()`: agents registered, and vectors still to (re-)embed for the embedder in force. */
export interface AgentCounts {
  agents: number;
  staleVectors: number;
}
