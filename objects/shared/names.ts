/**
 * Durable Object names: built and parsed here, nowhere else. Every name
 * starts with the object kind and the tenant, so tenants never share an
 * object (DESIGN.md §6). Parts are joined with "/" after URI-component
 * encoding, so no part can forge another.
 *
 * | kind        | parts after the tenant                       | object            |
 * |-------------|----------------------------------------------|-------------------|
 * | `registry`  | —                                            | TopicRegistry     |
 * | `partition` | topic incarnation, topic_id, partition       | Partition         |
 * | `group`     | topic incarnation, topic_id, group name      | ConsumerGroup     |
 * | `mailbox`   | mail_address                                 | Mailbox           |
 * | `agents`    | —                                            | AgentRegistry     |
 * | `tenants`   | — (`tenants-index/all`: the index)           | TenantDirectory   |
 * | `usage`     | — (`usage-index/all`: the index)             | UsageAggregator   |
 * | `mailbox-index` | —                                        | MailboxIndex      |
 */

/** Builds the `idFromName` name for an object of `kind` in `tenant`. */
export function objectName(kind: string, tenant: string, ...parts: (string | number)[]): string {
  return [kind, tenant, ...parts].map((p) => encodeURIComponent(String(p))).join("/");
}

/** The decoded parts of a name built by {@link objectName} (kind first), or null when unnamed. */
export function nameParts(name: string | null | undefined): string[] | null {
  if (!name) return null;
  return name.split("/").map(decodeURIComponent);
}

/** The tenant of an object named `<kind>/<tenant>/…`, or null when unnamed. */
export function tenantOfName(name: string | null | undefined): string | null {
  return nameParts(name)?.[1] ?? null;
}

/** Which partition a Partition object is. */
export interface PartitionIdentity {
  tenant: string;
  /** Topic incarnation (a topic recreated under the same name gets fresh objects). */
  incarnation: number;
  topicId: number;
  partition: number;
}

/** The name of the Partition object of `id`. */
export function partitionName(id: PartitionIdentity): string {
  return objectName("partition", id.tenant, id.incarnation, id.topicId, id.partition);
}

/** Parses a {@link partitionName}. Throws Error when `name` is not one (the object was not addressed by name). */
export function parsePartitionName(name: string | null | undefined): PartitionIdentity {
  const p = nameParts(name);
  if (!p || p.length !== 5 || p[0] !== "partition") throw new Error("Partition must be addressed by name (partitionStub)");
  return { tenant: p[1]!, incarnation: Number(p[2]), topicId: Number(p[3]), partition: Number(p[4]) };
}

/** Which consumer group of which topic a ConsumerGroup object is. */
export interface GroupIdentity {
  tenant: string;
  incarnation: number;
  topicId: number;
  group: string;
}

/** The name of the ConsumerGroup object of `id`. */
export function groupName(id: GroupIdentity): string {
  return objectName("group", id.tenant, id.incarnation, id.topicId, id.group);
}

/** Parses a {@link groupName}. Throws Error when `name` is not one. */
export function parseGroupName(name: string | null | undefined): GroupIdentity {
  const p = nameParts(name);
  if (!p || p.length !== 5 || p[0] !== "group") throw new Error("ConsumerGroup must be addressed by name (groupStub)");
  return { tenant: p[1]!, incarnation: Number(p[2]), topicId: Number(p[3]), group: p[4]! };
}

/** The name of the Mailbox object of `address` in `tenant`. */
export function mailboxName(tenant: string, address: string): string {
  return objectName("mailbox", tenant, address);
}
