/**
 * What `mortarmq groups …` needs when it runs (client/cli/groups.ts): the
 * API's schemas and reset targets (wire/admin/groups.ts), the error names
 * per HTTP status, and the pure renderers of the answers.
 */
import type { DeleteAnswer, GroupDoc, GroupList, ResetAnswer } from "../../wire/admin/groups";
import { formatFields, formatTable, type Cell } from "./format";
import type { StatusHints } from "./http";

export {
  deleteAnswerSchema, formatResetTarget, groupDocSchema, groupListSchema, parseResetTarget, resetAnswerSchema,
} from "../../wire/admin/groups";
export type { DeleteAnswer };

/** Error names of the group API's statuses. */
export const GROUP_STATUS_HINTS: StatusHints = {
  400: ["BAD_REQUEST", "check the arguments (see mortarmq groups --help)"],
  401: ["UNAUTHORIZED", "pass the tenant's token with --token or MORTARMQ_TOKEN"],
  403: ["FORBIDDEN", "the token may not do this: a scoped token needs the scope the message names (reset, delete, pause and resume: mortar.admin on the group, docs/tenants.md \"Permissions\"), and --tenant needs the operator token"],
  404: ["NOT_FOUND", "see mortarmq topics list and mortarmq groups list TOPIC"],
  409: ["CONFLICT", "stop the group's consumers first, or add --force"],
  503: ["UNAVAILABLE", "retry in a moment"],
};

/** `groups list`: one row per group. */
export function renderGroupList(l: GroupList): string {
  if (l.groups.length === 0) return `no consumer groups on topic ${l.topic}\n`;
  return formatTable(["group", "members", "lag", "in flight", "paused until"],
    l.groups.map((x) => [x.group, x.members, x.lag, x.in_flight, x.paused_until ?? "-"]));
}

/** `groups describe`: the group's fields, its members, and one row per partition. */
export function renderGroup(d: GroupDoc): string {
  let out = formatFields([
    ["group", d.group],
    ["topic", `${d.topic} (topic id ${d.topic_id}, ${d.partition_count} partitions)`],
    ["start policy", d.start_policy],
    ["paused until", d.paused_until ?? "not paused"],
    ["members", d.members.length],
    ["lag", d.lag],
    ["in flight", d.in_flight],
    ["dead-lettered", d.dead_lettered],
  ]);
  if (d.members.length > 0) {
    out += "\n" + formatTable(["member", "membership epoch", "assignment epoch", "partitions"],
      d.members.map((m) => [m.member_id, m.membership_epoch, m.assignment_epoch, m.partitions.join(",") || "-"]));
  }
  const state = (p: GroupDoc["partitions"][number]): string =>
    p.reset_pending !== null ? `reset to ${p.reset_pending} pending` : p.revoking ? "revoking" : p.owner === null ? "unowned" : "owned";
  out += "\n" + formatTable(["partition", "owner", "epoch", "committed floor", "high watermark", "lag", "in flight", "dead-lettered", "state"],
    d.partitions.map((p): Cell[] => [p.partition, p.owner, p.ownership_epoch, p.committed_floor, p.high_watermark, p.lag, p.in_flight, p.dead_lettered, state(p)]));
  return out;
}

/** `groups reset`: where each partition moved. */
export function renderReset(r: ResetAnswer): string {
  const pending = r.partitions.some((p) => p.pending);
  return `reset group ${r.group} of topic ${r.topic} to ${r.to}\n`
    + formatTable(["partition", "next sequence", "committed floor", "applied"],
      r.partitions.map((p) => [p.partition, p.next_sequence, p.committed_floor, p.pending ? "after the owner's REVOKE" : "yes"]))
    + (pending ? "(a partition with a live owner moves once the owner confirms its REVOKE, at the latest after the revocation timeout)\n" : "");
}
