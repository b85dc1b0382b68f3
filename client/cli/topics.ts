/**
 * `mortarmq topics create|alter|delete|list|describe`. Create, alter and
 * delete use the wire protocol (DECLARE, as spec §5 says for the CLI write
 * path; retention settings go in its RETENTION tail); list and describe
 * read GET /stats (spec §5: the CLI read path is admin HTTP). A location
 * hint has no field in DECLARE (the wire format is not extended): `topics
 * create --location-hint` creates the topic over HTTP (`POST /v0/topics`,
 * docs/deploy.md "Placement"), then DECLAREs it as usual.
 */
import type { Command } from "commander";
import { DeclareCreated } from "../../wire/mortar/constants";
import { action, printJson, printLine } from "./context";
import { CliError, unknownTopic, usageError } from "./errors";
import { parseChoice, parseIntOption } from "./parse";
import { LOCATION_HINTS, LOCATION_HINT_REGIONS, type LocationHint } from "../../wire/admin/location-hint";
import type { GlobalOptions } from "./context";
import { addRetentionOptions, renderRetention, retentionFromFlags, retentionJson, type RetentionFlags } from "./retention";

// The SDK (./connect) and zod (./stats) are imported by the actions that use them, so
// that starting the CLI for another command does not load them (docs/cli.md, "Startup").

/** Registers `topics` and its subcommands on `program`. */
export function registerTopics(program: Command): void {
  const topics = program.command("topics").description("create, alter, delete, list and describe MortarMQ topics");

  addRetentionOptions(topics
    .command("create <name>")
    .description("create a topic and its .dlq dead-letter twin (DECLARE); an existing topic with the same count is fine (retention flags then alter it)")
    .option("-p, --partitions <n>", "number of partitions (1..65535)", "1")
    .option("--location-hint <region>", `where on Cloudflare the topic's partitions start: ${LOCATION_HINTS.join(", ")} (only when it is created; over HTTP, POST /v0/topics)`))
    .action(action(async (g, name: string, opts: { partitions: string; locationHint?: string } & RetentionFlags) => {
      const partitions = parseIntOption("--partitions", opts.partitions, 1, 0xffff);
      const set = retentionFromFlags(opts);
      const given = Object.keys(set).length > 0;
      const hint = opts.locationHint === undefined ? null : parseChoice("--location-hint", opts.locationHint, LOCATION_HINTS);
      const httpCreated = hint === null ? false : await createWithHint(g, name, partitions, hint);
      const { connectBroker } = await import("./connect");
      const client = await connectBroker(g);
      try {
        if (given && !client.supportsRetention) throw noRetention();
        // A broker that knows retention answers its settings even when none is given (a tail with no field set).
        const r = await client.declare(name, partitions, client.supportsRetention ? { retention: set } : {});
        const created = httpCreated || r.created === DeclareCreated.CREATED;
        if (g.json) {
          printJson({
            topic: name, topic_id: r.topicId, partition_count: r.partitionCount, created, ...(hint ? { location_hint: hint } : {}),
            ...(r.retention ? { altered: !httpCreated && r.created === DeclareCreated.ALTERED } : {}),
            dlq: { topic: `${name}.dlq`, topic_id: r.topicId + 1 }, ...(r.retention ? { retention: retentionJson(r.retention) } : {}),
          });
        } else {
          const where = hint ? `, location hint ${hint} (${LOCATION_HINT_REGIONS[hint]})` : "";
          printLine(created
            ? `created topic ${name} (topic_id ${r.topicId}, ${plural(r.partitionCount, "partition")}${where}) with dead-letter twin ${name}.dlq`
            : `topic ${name} already exists (topic_id ${r.topicId}, ${plural(r.partitionCount, "partition")}${where})${r.created === DeclareCreated.ALTERED ? "; retention altered" : ""}`);
          if (given && r.retention) printLine(`retention: ${renderRetention(r.retention)}`);
        }
      } finally {
        await client.close();
      }
    }));

  addRetentionOptions(topics
    .command("alter <name>")
    .description("change a topic's retention settings (DECLARE with the RETENTION flag); the flags not given keep their value. <name>.dlq alters the dead-letter twin"))
    .action(action(async (g, name: string, opts: RetentionFlags) => {
      const set = retentionFromFlags(opts);
      if (Object.keys(set).length === 0) {
        throw usageError(`nothing to alter: give --retention-ms, --retention-bytes, --retention-messages or --discard (\`mortarmq topics describe ${name}\` shows the settings)`);
      }
      const { connectBroker } = await import("./connect");
      const client = await connectBroker(g);
      try {
        if (!client.supportsRetention) throw noRetention();
        const r = await client.alterTopic(name, set).catch((e: { name?: string }) => {
          throw e.name === "UNKNOWN_TOPIC" ? unknownTopic(name) : e;
        });
        const altered = r.created === DeclareCreated.ALTERED;
        if (g.json) printJson({ topic: name, topic_id: r.topicId, partition_count: r.partitionCount, altered, retention: retentionJson(r.retention) });
        else printLine(`${altered ? "altered" : "unchanged:"} topic ${name} (topic_id ${r.topicId}): retention ${renderRetention(r.retention)}`);
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
    .description("one topic's retention settings, partitions (first sequence, high watermark, size, producers) and consumer groups (committed floor, lag, in flight, skipped by retention) (GET /stats)")
    .action(action(async (g, name: string) => {
      const { fetchStats, renderTopicDescribe } = await import("./stats");
      const s = await fetchStats(g);
      const t = s.topics.find((x) => x.name === name);
      if (!t) throw unknownTopic(name); // the same report as a pub or sub of that name (errors.ts)
      if (g.json) printJson(t);
      else process.stdout.write(renderTopicDescribe(t));
    }));
}

/**
 * Creates topic `name` with location hint `hint` over HTTP (`POST
 * /v0/topics`: DECLARE has no field for it); true when this call created
 * it, false when it existed with the same count and hint.
 * @throws CliError from the broker's answer: 400 (name, count), 403, 409
 *   (another count or hint), 429 (partitions quota); NOT_SERVED from a broker
 *   without the route
 */
async function createWithHint(g: GlobalOptions, name: string, partitions: number, hint: LocationHint): Promise<boolean> {
  const [{ z }, { apiRequest }] = await Promise.all([import("zod"), import("./http")]);
  const answer = await apiRequest(g, "/v0/topics", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name, partitions, location_hint: hint }),
  }, z.object({ created: z.boolean() }), {
    400: ["USAGE", "check the topic name and --partitions"],
    403: ["PERMISSION_DENIED", "creating a topic needs mortar.admin on its name"],
    409: ["TOPIC_EXISTS", `\`mortarmq topics describe ${name}\` shows its partitions and location hint`],
    429: ["QUOTA_EXCEEDED", "delete topics or raise the tenant's partitions quota"],
  }, "this broker has no POST /v0/topics: create the topic without --location-hint");
  return answer.created;
}

/** A broker without the retention extension (its CONNECT answer named none). */
function noRetention(): CliError {
  return new CliError("UNSUPPORTED_BY_BROKER", "this broker does not support topic retention settings",
    "upgrade the broker; topics create without --retention-… flags works as before");
}

/** "1 partition", "3 partitions". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
