/**
 * `mortarmq groups list|describe|delete|reset|pause|resume`: consumer-group
 * management through the tenant's HTTP API (docs/groups.md, docs/cli.md
 * "Consumer groups"). The token (`--token`) is the tenant's, or the
 * operator's with `--tenant`. The zod schemas and renderers (groups-render.ts)
 * are imported when a command runs.
 */
import type { Command } from "commander";
import { action, printJson, printLine, type GlobalOptions } from "./context";
import { usageError } from "./errors";
import { parseInstantMs, parseIntOption } from "./parse";
import type { BrokerRequestOptions } from "./http";

/** Options every `groups` command takes. */
interface ScopeOptions {
  tenant?: string;
}

/** Registers `groups` and its subcommands on `program`. */
export function registerGroups(program: Command): void {
  const groups = program.command("groups").description("list, describe, delete, reset, pause and resume consumer groups of a MortarMQ topic");
  const scoped = (c: Command) => c.option("--tenant <id>", "the tenant (only with the operator token; a tenant's token is its own tenant)");

  scoped(groups.command("list <topic>"))
    .description("the topic's consumer groups: members, lag, in flight, paused until")
    .action(action(async (g, topic: string, o: ScopeOptions) => {
      const r = await import("./groups-render");
      const l = await call(g, o, `${base(topic)}/groups`, { method: "GET" }, r.groupListSchema);
      if (g.json) printJson(l);
      else process.stdout.write(r.renderGroupList(l));
    }));

  scoped(groups.command("describe <topic> <group>"))
    .description("one group: members, and per partition owner, committed floor, lag, in flight, dead-lettered; paused until")
    .action(action(async (g, topic: string, group: string, o: ScopeOptions) => {
      const r = await import("./groups-render");
      const d = await call(g, o, groupPath(topic, group), { method: "GET" }, r.groupDocSchema);
      if (g.json) printJson(d);
      else process.stdout.write(r.renderGroup(d));
    }));

  scoped(groups.command("delete <topic> <group>"))
    .description("delete a group and its positions; refused while it has members unless --force")
    .option("--force", "remove its members first, as a session timeout would (their next HEARTBEAT is refused)")
    .action(action(async (g, topic: string, group: string, o: ScopeOptions & { force?: boolean }) => {
      const r = await import("./groups-render");
      const d = await call(g, o, groupPath(topic, group), { method: "DELETE" }, r.deleteAnswerSchema, o.force ? { force: "1" } : {});
      if (g.json) printJson(d);
      else printLine(`deleted group ${d.group} of topic ${d.topic}${d.removed_members ? ` (removed ${d.removed_members} member${d.removed_members === 1 ? "" : "s"})` : ""}`);
    }));

  scoped(groups.command("reset <topic> <group>"))
    .description("move the group's position: --to earliest, latest, sequence:N (N is delivered next) or time:ISO8601 (the first record at or after it)")
    .requiredOption("--to <target>", "earliest | latest | sequence:N | time:ISO8601")
    .option("--partition <p>", "only this partition (default: every partition)")
    .action(action(async (g, topic: string, group: string, o: ScopeOptions & { to: string; partition?: string }) => {
      const r = await import("./groups-render");
      const target = r.parseResetTarget(o.to);
      if ("error" in target) throw usageError(`--to: ${target.error}`);
      const body: Record<string, unknown> = { to: r.formatResetTarget(target) };
      if (o.partition !== undefined) body.partition = parseIntOption("--partition", o.partition, 0, 0xffff);
      const d = await call(g, o, `${groupPath(topic, group)}/reset`, jsonPost(body), r.resetAnswerSchema);
      if (g.json) printJson(d);
      else process.stdout.write(r.renderReset(d));
    }));

  scoped(groups.command("pause <topic> <group>"))
    .description("stop deliveries until a time (members stay and heartbeat; in-flight messages may still be settled)")
    .requiredOption("--until <time>", "ISO 8601 time with a zone (2026-05-02T10:00Z, …+02:00; a date alone is UTC midnight) or a duration from now (30m, 2h, 7d)")
    .action(action(async (g, topic: string, group: string, o: ScopeOptions & { until: string }) => {
      const r = await import("./groups-render");
      const until = new Date(parseInstantMs("--until", o.until)).toISOString();
      const d = await call(g, o, `${groupPath(topic, group)}/pause`, jsonPost({ until }), r.groupDocSchema);
      if (g.json) printJson(d);
      else printLine(`paused group ${d.group} of topic ${d.topic} until ${d.paused_until}`);
    }));

  scoped(groups.command("resume <topic> <group>"))
    .description("resume deliveries of a paused group")
    .action(action(async (g, topic: string, group: string, o: ScopeOptions) => {
      const r = await import("./groups-render");
      const d = await call(g, o, `${groupPath(topic, group)}/resume`, jsonPost({}), r.groupDocSchema);
      if (g.json) printJson(d);
      else printLine(`resumed group ${d.group} of topic ${d.topic}`);
    }));
}

function base(topic: string): string {
  return `/v0/topics/${encodeURIComponent(topic)}`;
}

function groupPath(topic: string, group: string): string {
  return `${base(topic)}/groups/${encodeURIComponent(group)}`;
}

function jsonPost(body: unknown): BrokerRequestOptions {
  return { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } };
}

/** One call of the group API, with `--tenant` and `extra` as query parameters. */
async function call<S extends import("zod").ZodType>(g: GlobalOptions, o: ScopeOptions, path: string, opts: BrokerRequestOptions, schema: S,
  extra: Record<string, string> = {}): Promise<import("zod").infer<S>> {
  const { apiRequest } = await import("./http");
  const { GROUP_STATUS_HINTS } = await import("./groups-render");
  const q = new URLSearchParams(extra);
  if (o.tenant !== undefined) q.set("tenant", o.tenant);
  return apiRequest(g, q.size ? `${path}?${q}` : path, opts, schema, GROUP_STATUS_HINTS, "this broker build has no consumer-group API");
}
