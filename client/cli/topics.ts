/**
 * `mortarmq topics create|delete|list|describe`. Create and delete use the
 * wire protocol (DECLARE, as spec §5 says for the CLI write path); list and
 * describe read GET /stats (spec §5: the CLI read path is admin HTTP).
 */
import type { Command } from "commander";
import { DeclareCreated } from "../../wire/mortar/constants";
import { action, printJson, printLine } from "./context";
import { unknownTopic } from "./errors";
import { parseIntOption } from "./parse";

// The SDK (./connect) and zod (./stats) are imported by the actions that use them, so
// that starting the CLI for another command does not load them (docs/cli.md, "Startup").

/** Registers `topics` and its subcommands on `program`. */
export function registerTopics(program: Command): void {
  const topics = program.command("topics").description("create, delete, list and describe MortarMQ topics");

  topics
    .command("create <name>")
    .description("create a topic and its .dlq dead-letter twin (DECLARE); an existing topic with the same count is fine")
    .option("-p, --partitions <n>", "number of partitions (1..65535)", "1")
    .action(action(async (g, name: string, opts: { partitions: string }) => {
      const partitions = parseIntOption("--partitions", opts.partitions, 1, 0xffff);
      const { connectBroker } = await import("./connect");
      const client = await connectBroker(g);
      try {
        const r = await client.declare(name, partitions);
        const created = r.created === DeclareCreated.CREATED;
        if (g.json) {
          printJson({ topic: name, topic_id: r.topicId, partition_count: r.partitionCount, created, dlq: { topic: `${name}.dlq`, topic_id: r.topicId + 1 } });
        } else {
          printLine(created
            ? `created topic ${name} (topic_id ${r.topicId}, ${plural(r.partitionCount, "partition")}) with dead-letter twin ${name}.dlq`
            : `topic ${name} already exists (topic_id ${r.topicId}, ${plural(r.partitionCount, "partition")})`);
        }
      } finally {
        await client.close();
      }
    }));

  topics
    .command("delete <name>")
    .description("delete a topic and its .dlq twin with all their messages (DECLARE with the DELETE flag)")
    .action(action(async (g, name: string) => {
      const { connectBroker } = await import("./connect");
      const client = await connectBroker(g);
      try {
        const r = await client.deleteTopic(name);
        if (g.json) printJson({ topic: name, topic_id: r.topicId, partition_count: r.partitionCount, deleted: true });
        else printLine(`deleted topic ${name} (topic_id ${r.topicId}, ${plural(r.partitionCount, "partition")}) and its dead-letter twin ${name}.dlq`);
      } finally {
        await client.close();
      }
    }));

  topics
    .command("list")
    .description("list the tenant's topics with appended messages, size, groups and lag (GET /stats)")
    .action(action(async (g) => {
      const { fetchStats, renderTopicList } = await import("./stats");
      const s = await fetchStats(g);
      if (g.json) printJson({ tenant: s.tenant, topics: s.topics });
      else process.stdout.write(renderTopicList(s));
    }));

  topics
    .command("describe <name>")
    .description("one topic's partitions (high watermark, size, producers) and consumer groups (committed floor, lag, in flight) (GET /stats)")
    .action(action(async (g, name: string) => {
      const { fetchStats, renderTopicDescribe } = await import("./stats");
      const s = await fetchStats(g);
      const t = s.topics.find((x) => x.name === name);
      if (!t) throw unknownTopic(name); // the same report as a pub or sub of that name (errors.ts)
      if (g.json) printJson(t);
      else process.stdout.write(renderTopicDescribe(t));
    }));
}

/** "1 partition", "3 partitions". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
