/**
 * Worker entry point: the HTTP app plus every Durable Object class named in
 * wrangler.toml (they must be exported from the main module).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { app } from "./app";
import { drainUnreadBody } from "./body-limit";
import type { Env } from "../objects/env";

/** Every HTTP request and WebSocket upgrade: the hono app, then the unread rest of the body dropped. */
async function handle(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const res = await app.fetch(req, env, ctx);
  await drainUnreadBody(req); // before the answer: keeps the client's connection usable (worker/body-limit.ts)
  return res;
}

export default { fetch: handle } satisfies ExportedHandler<Env>;

/**
 * The same handler as a named entrypoint, for the local runtime's direct
 * socket (client/local/miniflare-host.ts): a socket bound to it reaches the
 * Worker with no Miniflare entry worker and no assets router in between
 * (the default entrypoint of a Worker with `[assets]` is reached through
 * both). Unreachable on Cloudflare except by a service binding to it.
 */
export class DirectHttp extends WorkerEntrypoint<Env> {
  override fetch(req: Request): Promise<Response> {
    return handle(req, this.env, this.ctx);
  }
}

import { metered } from "../objects/usage/cost";
import { MortarSession as MortarSessionObject } from "../objects/session/MortarSession";
import { Partition as PartitionObject } from "../objects/partition/Partition";
import { Mailbox as MailboxObject } from "../objects/mailbox/Mailbox";
import { NatsSession as NatsSessionObject } from "../objects/nats/NatsSession";
import { UsageAggregator as UsageAggregatorObject } from "../objects/usage/UsageAggregator";
import { MailboxIndex as MailboxIndexObject } from "../objects/mailbox-index/MailboxIndex";
import { TopicRegistry as TopicRegistryObject } from "../objects/registry/TopicRegistry";
import { ConsumerGroup as ConsumerGroupObject } from "../objects/group/ConsumerGroup";
import { AgentRegistry as AgentRegistryObject } from "../objects/agents/AgentRegistry";
import { TenantDirectory as TenantDirectoryObject } from "../objects/tenants/TenantDirectory";
import { DIRECTORY_OPERATOR_METHODS, directoryCostsAttributed } from "../objects/tenants/cost-scope";

// Objects whose traffic belongs to one tenant have their billable units counted (rows written and
// read, requests received) and reported with their telemetry: objects/usage/cost.ts, docs/tenants.md
// "What a tenant costs".
export const MortarSession = metered(MortarSessionObject);
export const Partition = metered(PartitionObject);
export const Mailbox = metered(MailboxObject);
export const NatsSession = metered(NatsSessionObject);
export const UsageAggregator = metered(UsageAggregatorObject);
export const MailboxIndex = metered(MailboxIndexObject);
// Objects that count nothing per message report their costs themselves, at most once per flush interval,
// to the tenant in their name (objects/usage/cost-report.ts; the directory's index is the operator's).
export const TopicRegistry = metered(TopicRegistryObject, { reports: { kind: "registry" } });
export const ConsumerGroup = metered(ConsumerGroupObject, { reports: { kind: "group" } });
export const AgentRegistry = metered(AgentRegistryObject, { reports: { kind: "agents" } });
export const TenantDirectory = metered(TenantDirectoryObject, {
  reports: { kind: "tenants", attributed: directoryCostsAttributed, operatorMethods: DIRECTORY_OPERATOR_METHODS },
});
