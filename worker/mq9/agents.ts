/**
 * mq9 `$mq9.AI.AGENT.*` handler. Placeholder until the agent registry issue
 * lands: answers every agent subject with a clear error.
 */
import type { Env } from "../env";

/** Agent verbs of the mq9 spec. */
export type AgentVerb = "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER";

/** Handles one agent request for `tenant`; returns HTTP-ish status and the JSON reply. */
export async function handleAgentRequest(
  _env: Env,
  _tenant: string,
  _verb: AgentVerb,
  _payload: Uint8Array,
): Promise<{ status: number; body: { error: string } & Record<string, unknown> }> {
  return { status: 501, body: { error: "agent registry is not available on this broker yet" } };
}
