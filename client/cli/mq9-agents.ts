/**
 * `mortarmq mq9 register|unregister|report|discover`: the agent registry
 * subjects ($mq9.AI.AGENT.*, docs/agents.md), through the mq9 client's
 * `agents` API (client/mq9/agents.ts). Cards and reports are JSON
 * objects from an argument, `--file` or stdin; `--name`, `--mailbox`,
 * `--description` and `--status` set those fields on top.
 */
import type { Command } from "commander";
import { action, output } from "./context";
import { usageError } from "./errors";
import { readJsonObject } from "./input";
import type { AgentCard, AgentRef, DiscoverOptions } from "@mortarmq/mq9";
import { withMq9 } from "./mq9-http";
import { renderAgents } from "./mq9-render";
import { parseIntOption } from "./parse";

/** `fields` over `base`, leaving out undefined values. */
export function withFields(base: Record<string, unknown>, fields: Record<string, string | undefined>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

/** The agent a body names, for messages ("translator", or its mailbox). */
function agentLabel(body: Record<string, unknown>): string {
  return typeof body.name === "string" ? body.name : typeof body.mailbox === "string" ? `with mailbox ${body.mailbox}` : "?";
}

/** The DISCOVER options for the flags (docs/agents.md, DISCOVER). */
export function discoverOptions(o: { text?: string; semantic?: string; limit?: string; page?: string }): DiscoverOptions {
  const body: DiscoverOptions = {};
  if (o.text !== undefined) body.text = o.text;
  if (o.semantic !== undefined) body.semantic = o.semantic;
  if (o.limit !== undefined) body.limit = parseIntOption("--limit", o.limit, 1, Number.MAX_SAFE_INTEGER);
  if (o.page !== undefined) body.page = parseIntOption("--page", o.page, 1, Number.MAX_SAFE_INTEGER);
  return body;
}

/** Registers the agent subcommands on the `mq9` command. */
export function registerMq9Agents(mq9: Command): void {
  mq9
    .command("register [card]")
    .description("register (or replace) an agent card ($mq9.AI.AGENT.REGISTER); card JSON from the argument, --file or stdin")
    .option("-f, --file <path>", "read the card JSON from this file")
    .option("--name <name>", "the card's name (required in the card or here)")
    .option("--description <text>", "the card's description")
    .option("--mailbox <address>", "the agent's mailbox (e.g. mq9://broker/agent.x.inbox)")
    .action(action(async (g, card: string | undefined, o: { file?: string; name?: string; description?: string; mailbox?: string }) => {
      const body = withFields(await readJsonObject(card, o.file, "agent card"), { name: o.name, description: o.description, mailbox: o.mailbox });
      if (typeof body.name !== "string" || body.name === "") throw usageError("the agent card needs a name: put \"name\" in the card or pass --name");
      await withMq9(g, (mq) => mq.agents.register(body as AgentCard));
      output(g, { error: "" }, () => `registered agent ${String(body.name)}`);
    }));

  mq9
    .command("unregister")
    .description("remove an agent by name or mailbox ($mq9.AI.AGENT.UNREGISTER); an unknown agent is not an error")
    .option("--name <name>", "the agent's name")
    .option("--mailbox <address>", "the agent's mailbox")
    .action(action(async (g, o: { name?: string; mailbox?: string }) => {
      if (o.name === undefined && o.mailbox === undefined) throw usageError("give --name or --mailbox");
      const body = withFields({}, { name: o.name, mailbox: o.mailbox });
      const { removed } = await withMq9(g, (mq) => mq.agents.unregister(body as AgentRef));
      output(g, { error: "", removed }, () => (removed ? `unregistered agent ${agentLabel(body)}` : `agent ${agentLabel(body)} was not registered`));
    }));

  mq9
    .command("report [body]")
    .description("report an agent's status ($mq9.AI.AGENT.REPORT); body JSON from the argument, --file or stdin")
    .option("-f, --file <path>", "read the report JSON from this file")
    .option("--name <name>", "the agent's name")
    .option("--mailbox <address>", "the agent's mailbox")
    .option("--status <status>", "sets the report's \"status\" field")
    .action(action(async (g, report: string | undefined, o: { file?: string; name?: string; mailbox?: string; status?: string }) => {
      const body = withFields(await readJsonObject(report, o.file, "report"), { name: o.name, mailbox: o.mailbox, status: o.status });
      if (body.name === undefined && body.mailbox === undefined) throw usageError("a report names its agent: pass --name or --mailbox (or put them in the body)");
      await withMq9(g, (mq) => mq.agents.report(body as AgentRef & Record<string, unknown>));
      output(g, { error: "" }, () => `reported for agent ${agentLabel(body)}`);
    }));

  mq9
    .command("discover")
    .description("find agents ($mq9.AI.AGENT.DISCOVER): full-text, semantic, or all")
    .option("--text <keywords>", "full-text search (BM25)")
    .option("--semantic <description>", "semantic (vector) search; wins over --text")
    .option("--limit <n>", "results per page (broker default 20, max 100)")
    .option("--page <n>", "1-based page (default 1)")
    .action(action(async (g, o: { text?: string; semantic?: string; limit?: string; page?: string }) => {
      const query = discoverOptions(o);
      const agents = await withMq9(g, (mq) => mq.agents.discover(query));
      output(g, { error: "", agents }, () => renderAgents(agents));
    }));
}
