/**
 * `mortarmq mq9 …`: one subcommand per mq9 subject (mq9 spec, 协议总览),
 * sent as `POST /mq9/<subject>` with the `mq9-*` headers and JSON fields as
 * flags. `--json` prints the broker's reply as it came; otherwise a line or
 * a table. `mq9 request` sends any subject raw, like `nats request`.
 */
import type { Command } from "commander";
import { PRIORITIES } from "../../wire/mq9/priority"; // not the index: that loads zod
import { action, output, printJson } from "./context";
import { usageError } from "./errors";
import { readPayload } from "./input";
import { mq9Request, mq9Subject, replyMessages, type Mq9Reply } from "./mq9-http";
import { renderMessages } from "./mq9-render";
import { parseChoice, parseIntOption, parseList, parseTimeOption } from "./parse";
import { registerMq9Agents } from "./mq9-agents";

const U32_MAX = 0xffff_ffff;
const DELIVER = ["latest", "earliest", "from_time", "from_id"] as const;

interface FetchOptions {
  group?: string;
  deliver?: string;
  fromTime?: string;
  fromId?: string;
  forceDeliver?: boolean;
  numMsgs?: string;
  maxWaitMs?: string;
  ack?: boolean;
}

/** The FETCH request body for the flags (mq9 spec, FETCH 请求字段); `--from-time`/`--from-id` imply their `deliver`. */
export function fetchBody(o: FetchOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.group !== undefined) body.group_name = o.group;
  let deliver = o.deliver === undefined ? undefined : parseChoice("--deliver", o.deliver.replace("-", "_"), DELIVER);
  if (o.fromTime !== undefined) {
    body.from_time = parseTimeOption("--from-time", o.fromTime);
    deliver ??= "from_time";
  }
  if (o.fromId !== undefined) {
    body.from_id = parseIntOption("--from-id", o.fromId, 0, Number.MAX_SAFE_INTEGER);
    deliver ??= "from_id";
  }
  if (o.fromTime !== undefined && o.fromId !== undefined) throw usageError("give --from-time or --from-id, not both");
  if (deliver !== undefined) body.deliver = deliver;
  if (o.forceDeliver) {
    if (o.group === undefined) throw usageError("--force-deliver needs --group (it resets a group's position)");
    body.force_deliver = true;
  }
  const config: Record<string, number> = {};
  if (o.numMsgs !== undefined) config.num_msgs = parseIntOption("--num-msgs", o.numMsgs, 1, U32_MAX);
  if (o.maxWaitMs !== undefined) config.max_wait_ms = parseIntOption("--max-wait-ms", o.maxWaitMs, 0, Number.MAX_SAFE_INTEGER);
  if (Object.keys(config).length > 0) body.config = config;
  return body;
}

/** The QUERY request body for the flags (docs/mq9.md, QUERY). */
export function queryBody(o: { key?: string; limit?: string; since?: string; tags?: string }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.key !== undefined) body.key = o.key;
  if (o.limit !== undefined) body.limit = parseIntOption("--limit", o.limit, 1, Number.MAX_SAFE_INTEGER);
  if (o.since !== undefined) body.since = parseTimeOption("--since", o.since);
  if (o.tags !== undefined) body.tags = parseList(o.tags);
  return body;
}

/** The `mq9-*` SEND headers for the flags (values passed as given; the broker validates them). */
export function sendHeaders(o: { key?: string; delay?: string; ttl?: string; tags?: string; priority?: string }): Record<string, string | undefined> {
  if (o.priority !== undefined) parseChoice("--priority", o.priority, PRIORITIES);
  return { "mq9-key": o.key, "mq9-delay": o.delay, "mq9-ttl": o.ttl, "mq9-tags": o.tags, "mq9-priority": o.priority };
}

/** Registers `mq9` and its subcommands on `program`. */
export function registerMq9(program: Command): void {
  const mq9 = program.command("mq9").description("mq9 mailboxes and agents over HTTP (POST /mq9/<subject>)");

  mq9
    .command("create [address]")
    .description("create a mailbox ($mq9.AI.MAILBOX.CREATE); without an address the broker generates one")
    .option("--ttl <seconds>", "mailbox lifetime in seconds; 0 = never expires (broker default: 86400)")
    .action(action(async (g, address: string | undefined, o: { ttl?: string }) => {
      const body: Record<string, unknown> = {};
      if (address !== undefined) body.name = address;
      if (o.ttl !== undefined) body.ttl = parseIntOption("--ttl", o.ttl, 0, Number.MAX_SAFE_INTEGER);
      const r = await mq9Request(g, mq9Subject.create(), body);
      output(g, r, () => `created mailbox ${String(r.mail_address)}`);
    }));

  mq9
    .command("send <address> [payload]")
    .description("send a message ($mq9.AI.MSG.SEND); payload from the argument, --file or stdin")
    .option("-f, --file <path>", "read the payload bytes from this file")
    .option("-k, --key <key>", "mq9-key: only the newest message per key is kept")
    .option("--delay <seconds>", "mq9-delay: becomes visible after this many seconds")
    .option("--ttl <seconds>", "mq9-ttl: message expires this many seconds after sending")
    .option("--tags <a,b>", "mq9-tags: comma-separated tags (QUERY --tags filters on them)")
    .option("--priority <p>", "mq9-priority: normal (default), urgent or critical")
    .action(action(async (g, address: string, payload: string | undefined, o: { file?: string; key?: string; delay?: string; ttl?: string; tags?: string; priority?: string }) => {
      const headers = sendHeaders(o);
      const bytes = await readPayload({ arg: payload, file: o.file }, "payload");
      const r = await mq9Request(g, mq9Subject.send(address), bytes, { headers });
      output(g, r, () => (r.msg_id === -1
        ? `scheduled for ${address} in ${o.delay} s (msg_id -1: the id is assigned when it becomes visible)`
        : `sent to ${address}: msg_id ${String(r.msg_id)}`));
    }));

  mq9
    .command("fetch <address>")
    .description("fetch messages ($mq9.AI.MSG.FETCH): stateless, or for a consumer group with --group")
    .option("-g, --group <name>", "consumer group (stateful: the broker keeps its position)")
    .option("--deliver <policy>", "start: latest (default), earliest, from_time, from_id")
    .option("--from-time <time>", "start at this time: unix seconds or ISO-8601 (implies --deliver from_time)")
    .option("--from-id <msg_id>", "start at this msg_id, inclusive (implies --deliver from_id)")
    .option("--force-deliver", "reset the group's position to --deliver")
    .option("-n, --num-msgs <n>", "at most this many messages (broker default 100, max 1000)")
    .option("--max-wait-ms <ms>", "long-poll: wait up to this long for a message (broker default 500; 0 = answer at once)")
    .option("--ack", "with --group: ACK the last message of the batch (acknowledges the whole batch)")
    .option("--payload-width <n>", "cut payloads in the table to this many characters", "80")
    .action(action(async (g, address: string, o: FetchOptions & { payloadWidth: string }) => {
      if (o.ack && o.group === undefined) throw usageError("--ack needs --group");
      const width = parseIntOption("--payload-width", o.payloadWidth, 8, 1_000_000);
      const body = fetchBody(o);
      const wait = (body.config as { max_wait_ms?: number } | undefined)?.max_wait_ms ?? 500;
      const r: Mq9Reply = await mq9Request(g, mq9Subject.fetch(address), body, { extraTimeoutMs: Math.min(wait, 30_000) });
      const messages = replyMessages(r);
      const last = messages[messages.length - 1];
      let acked: number | null = null;
      if (o.ack && last) {
        await mq9Request(g, mq9Subject.ack(address), { group_name: o.group, mail_address: address, msg_id: last.msg_id });
        acked = last.msg_id;
      }
      output(g, o.ack ? { ...r, acked_msg_id: acked } : r, () =>
        renderMessages(messages, width) + (acked !== null ? `acked the batch through msg_id ${acked} for group ${o.group}\n` : ""));
    }));

  mq9
    .command("ack <address> <msg_id>")
    .description("acknowledge a fetched message for a group ($mq9.AI.MSG.ACK)")
    .requiredOption("-g, --group <name>", "consumer group, as used with fetch")
    .action(action(async (g, address: string, msgId: string, o: { group: string }) => {
      const id = parseIntOption("msg_id", msgId, 0, Number.MAX_SAFE_INTEGER);
      const r = await mq9Request(g, mq9Subject.ack(address), { group_name: o.group, mail_address: address, msg_id: id });
      output(g, r, () => `acked msg_id ${id} in ${address} for group ${o.group}`);
    }));

  mq9
    .command("query <address>")
    .description("list stored messages without moving any position ($mq9.AI.MSG.QUERY); filters combine with AND")
    .option("-k, --key <key>", "only the message with this mq9-key")
    .option("--limit <n>", "the newest N matching messages (broker default and max 1000)")
    .option("--since <time>", "created at or after: unix seconds or ISO-8601")
    .option("--tags <a,b>", "only messages carrying every one of these tags")
    .option("--payload-width <n>", "cut payloads in the table to this many characters", "80")
    .action(action(async (g, address: string, o: { key?: string; limit?: string; since?: string; tags?: string; payloadWidth: string }) => {
      const width = parseIntOption("--payload-width", o.payloadWidth, 8, 1_000_000);
      const r = await mq9Request(g, mq9Subject.query(address), queryBody(o));
      output(g, r, () => renderMessages(replyMessages(r), width));
    }));

  mq9
    .command("delete <address> <msg_id>")
    .description("delete one message ($mq9.AI.MSG.DELETE)")
    .action(action(async (g, address: string, msgId: string) => {
      const id = parseIntOption("msg_id", msgId, 0, Number.MAX_SAFE_INTEGER);
      const r = await mq9Request(g, mq9Subject.delete(address, id), new Uint8Array(0));
      output(g, r, () => `deleted msg_id ${id} from ${address}`);
    }));

  registerMq9Agents(mq9);

  mq9
    .command("request <subject> [payload]")
    .description("send any mq9 subject raw, like `nats request` (prints the JSON reply)")
    .option("-f, --file <path>", "read the payload bytes from this file")
    .option("-H, --header <name:value>", "a request header (repeatable)", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(action(async (g, subject: string, payload: string | undefined, o: { file?: string; header: string[] }) => {
      const headers: Record<string, string> = {};
      for (const h of o.header) {
        const i = h.indexOf(":");
        if (i <= 0) throw usageError(`--header "${h}" must be name:value`);
        headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
      }
      const bytes = await readPayload({ arg: payload, file: o.file }, "payload", new Uint8Array(0));
      printJson(await mq9Request(g, subject, bytes, { headers }));
    }));
}
