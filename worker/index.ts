/**
 * Worker entry point: the HTTP app plus every Durable Object class named in
 * wrangler.toml (they must be exported from the main module).
 */
import { app } from "./app";

export default { fetch: app.fetch } satisfies ExportedHandler<import("../objects/env").Env>;

export { MortarSession } from "../objects/session/MortarSession";
export { TopicRegistry } from "../objects/registry/TopicRegistry";
export { Partition } from "../objects/partition/Partition";
export { ConsumerGroup } from "../objects/group/ConsumerGroup";
export { Mailbox } from "../objects/mailbox/Mailbox";
export { AgentRegistry } from "../objects/agents/AgentRegistry";
export { NatsSession } from "../objects/nats/NatsSession";
export { TenantDirectory } from "../objects/tenants/TenantDirectory";
export { UsageAggregator } from "../objects/usage/UsageAggregator";
export { MailboxIndex } from "../objects/mailbox-index/MailboxIndex";
