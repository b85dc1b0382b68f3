/**
 * MortarMQ v0 connections for the CLI: connect with the global options, and
 * look a topic up by name without creating it.
 */
import { ErrorCode, MAX_TOPIC_LEN } from "../../wire/mortar";
import { MortarClient, MortarClientError } from "../sdk";
import type { GlobalOptions } from "./context";
import { CliError, unknownTopic, unreachable, usageError } from "./errors";

/**
 * Connects (WebSocket for http(s)/ws(s) URLs, raw TCP for tcp://) and
 * authenticates with `g.token`.
 * @throws CliError USAGE for a URL that is not one of those; BROKER_UNREACHABLE when nothing answers;
 *   MortarClientError (AUTH_FAILED, …) otherwise
 */
export async function connectBroker(g: GlobalOptions): Promise<MortarClient> {
  let protocol: string;
  try {
    protocol = new URL(g.url).protocol;
  } catch {
    throw usageError(`--url ${g.url} is not a URL`, "use e.g. http://127.0.0.1:8787");
  }
  if (!["http:", "https:", "ws:", "wss:", "tcp:"].includes(protocol)) {
    throw usageError(`--url ${g.url}: MortarMQ commands need an http(s)://, ws(s):// or tcp:// broker URL`, "use e.g. http://127.0.0.1:8787");
  }
  try {
    return await MortarClient.connect(g.url, { token: g.token, timeoutMs: 10_000 });
  } catch (e) {
    if (e instanceof MortarClientError && e.source === "connection") throw unreachable(g.url, e.message);
    if (e instanceof MortarClientError) throw e;
    throw unreachable(g.url, (e as Error).message);
  }
}

/** A topic as the CLI addresses it. */
export interface ResolvedTopic {
  name: string;
  topicId: number;
  partitionCount: number;
}

/** `exists with N partitions` in PARTITION_COUNT_MISMATCH messages (objects/registry). */
const COUNT_IN_MESSAGE = /exists with (\d+) partitions?/;

/**
 * Finds topic `name` without creating it. A broker that speaks the retention
 * extension is asked with an empty retention DECLARE (partition_count 0:
 * it reads an existing topic's settings, changes nothing and is no error —
 * UNKNOWN_TOPIC when it does not exist). Otherwise, since MortarMQ v0 has no
 * lookup op, this DECLAREs the topic's `.dlq` twin: DECLARE of a `.dlq` name never
 * creates anything — it answers the twin of an existing topic (topic_id =
 * source + 1, same partition count), TOPIC_NAME_RESERVED when the source does
 * not exist, or PARTITION_COUNT_MISMATCH naming the real count, which a second
 * DECLARE confirms. For a name that is itself a `.dlq` twin, that name is
 * declared directly.
 * @throws MortarClientError UNKNOWN_TOPIC when the topic does not exist; other broker errors as they come
 */
export async function resolveTopic(client: MortarClient, name: string): Promise<ResolvedTopic> {
  const isTwin = name.endsWith(".dlq");
  const probe = isTwin ? name : `${name}.dlq`;
  if (new TextEncoder().encode(probe).length > MAX_TOPIC_LEN) {
    throw new CliError("UNSUPPORTED", `cannot look up "${name}": the CLI finds a topic by DECLAREing its .dlq twin, whose name would exceed ${MAX_TOPIC_LEN} bytes`,
      "topics of more than 251 bytes can be published to with the SDK (client.publish with the topic_id)");
  }
  const toResult = (r: { topicId: number; partitionCount: number }): ResolvedTopic => ({
    name, topicId: isTwin ? r.topicId : r.topicId - 1, partitionCount: r.partitionCount,
  });
  if (client.supportsRetention) {
    // No probe with a guessed count: its PARTITION_COUNT_MISMATCH would count in the broker's
    // mortarmq_errors_total on every pub to a topic of more than one partition.
    try {
      const r = await client.alterTopic(name, {});
      return { name, topicId: r.topicId, partitionCount: r.partitionCount };
    } catch (e) {
      if (e instanceof MortarClientError && e.source === "broker" && e.code === ErrorCode.UNKNOWN_TOPIC) throw unknownTopic(name);
      throw e;
    }
  }
  try {
    return toResult(await client.declare(probe, 1));
  } catch (e) {
    if (!(e instanceof MortarClientError) || e.source !== "broker") throw e;
    if (e.code === ErrorCode.TOPIC_NAME_RESERVED) {
      throw unknownTopic(name);
    }
    const m = e.code === ErrorCode.PARTITION_COUNT_MISMATCH ? COUNT_IN_MESSAGE.exec(e.message) : null;
    if (!m) throw e;
    return toResult(await client.declare(probe, Number(m[1])));
  }
}
