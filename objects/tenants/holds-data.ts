/**
 * Whether a tenant holds data (docs/tenants.md "Jurisdiction"): its
 * jurisdiction may change only while it holds none, since objects already
 * created in one jurisdiction cannot move to another.
 */
import type { Env } from "../env";
import { agentRegistryStub } from "../agents/stub";
import { registryStub } from "../registry/stub";
import { series } from "../usage/catalog";
import { usageStub } from "../usage/stub";

const COUNTED = [
  series("mortarmq_stored_bytes", { system: "mortar" }),
  series("mortarmq_stored_bytes", { system: "mq9" }),
  series("mortarmq_mq9_mailboxes"),
];

/**
 * True when `tenant` has any topic (TopicRegistry), agent (AgentRegistry),
 * mailbox or stored byte (its UsageAggregator's gauges) — asked of its
 * objects in its current jurisdiction. Five object calls.
 * @throws when one of them does not answer
 */
export async function tenantHoldsData(env: Env, tenant: string): Promise<boolean> {
  const usage = usageStub(env, tenant);
  const [topics, agents, ...gauges] = await Promise.all([
    registryStub(env, tenant).topicCount(),
    agentRegistryStub(env, tenant).counts().then((c) => c.agents),
    ...COUNTED.map((k) => usage.seriesValue(k)),
  ]);
  return topics > 0 || agents > 0 || gauges.some((v) => v > 0);
}
