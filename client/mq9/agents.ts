/**
 * The agent registry subjects ($mq9.AI.AGENT.*, docs/agents.md): register
 * a card, unregister, report status, discover (full text, semantic, or all).
 */

/** An A2A-style agent card: `name` required, `mailbox`, `description`, `skills` and any other field optional. */
export type AgentCard = { name: string; mailbox?: string; description?: string; skills?: unknown[] } & Record<string, unknown>;

/** Names an agent for UNREGISTER and REPORT: by name, or by mailbox when no name is given. */
export type AgentRef = { name: string; mailbox?: string } | { name?: undefined; mailbox: string };

/** DISCOVER: `semantic` (vector search) wins over `text` (FTS5); neither lists every agent. */
export interface DiscoverOptions {
  text?: string;
  semantic?: string;
  /** Results per page (broker default 20, max 100). */
  limit?: number;
  /** 1-based page (default 1). */
  page?: number;
  signal?: AbortSignal;
}

/** A registered card as DISCOVER returns it: the card as registered, plus `_mq9.report` once the agent reported. */
export type DiscoveredAgent = AgentCard & { _mq9?: { report: Record<string, unknown>; report_time: number } };

/** Sends one agent subject with a JSON body and returns the reply. */
export type AgentCall = (verb: "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER", body: object, signal?: AbortSignal) => Promise<Record<string, unknown>>;

/** `mq.agents`. */
export class Mq9Agents {
  constructor(private readonly call: AgentCall) {}

  /** Registers `card`, or replaces the card registered under its name. */
  async register(card: AgentCard, o: { signal?: AbortSignal } = {}): Promise<void> {
    await this.call("REGISTER", card, o.signal);
  }

  /** Removes an agent; `removed` is false when it was not registered (not an error). */
  async unregister(agent: AgentRef, o: { signal?: AbortSignal } = {}): Promise<{ removed: boolean }> {
    const r = await this.call("UNREGISTER", agent, o.signal);
    return { removed: r.removed === true };
  }

  /** Stores `report` (any JSON object naming the agent by `name` or `mailbox`) as the agent's latest status. */
  async report(report: AgentRef & Record<string, unknown>, o: { signal?: AbortSignal } = {}): Promise<void> {
    await this.call("REPORT", report, o.signal);
  }

  /** Finds agents (one page). */
  async discover(o: DiscoverOptions = {}): Promise<DiscoveredAgent[]> {
    const { signal, ...query } = o;
    const body: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(query)) if (v !== undefined) body[k] = v;
    const r = await this.call("DISCOVER", body, signal);
    return Array.isArray(r.agents) ? (r.agents as DiscoveredAgent[]) : [];
  }
}
