/** Helpers for the agent registry workers-pool tests: the real dispatcher and Durable Objects. */
import { env } from "cloudflare:test";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import type { Env } from "../../../objects/env";
import { AGENT_CARDS } from "../../fixtures/agent-cards";

export interface AgentReply {
  status: number;
  body: { error: string; agents?: Record<string, unknown>[]; [k: string]: unknown };
}

let counter = 0;
/** A fresh tenant id, so each test has its own AgentRegistry object. */
export function freshTenant(prefix = "ag"): string {
  return `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** `nats request '$mq9.AI.AGENT.<verb>' <body>` for `tenant`, through handleMq9Request. */
export async function agentRequest(tenant: string, verb: string, body: unknown): Promise<AgentReply> {
  const payload = body instanceof Uint8Array ? body : new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
  const r = await handleMq9Request(env as unknown as Env, tenant, { subject: `$mq9.AI.AGENT.${verb}`, headers: new Map(), payload });
  return { status: r.status, body: r.body as AgentReply["body"] };
}

/** DISCOVER returning the names of the agents found (throws on an error reply). */
export async function discoverNames(tenant: string, req: Record<string, unknown> = {}): Promise<string[]> {
  const r = await agentRequest(tenant, "DISCOVER", req);
  if (r.body.error !== "") throw new Error(`DISCOVER failed: ${r.body.error}`);
  return r.body.agents!.map((a) => a.name as string);
}

/** Registers every fixture card in `tenant`. */
export async function registerFixture(tenant: string): Promise<void> {
  for (const card of AGENT_CARDS) {
    const r = await agentRequest(tenant, "REGISTER", card);
    if (r.body.error !== "") throw new Error(`REGISTER ${card.name}: ${r.body.error}`);
  }
}
