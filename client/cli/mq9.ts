/**
 * `mortarmq mq9 …`: one subcommand per mq9 subject (mq9 spec, 协议总览),
 * sent through the typed mq9 client (client/mq9/, http transport:
 * `POST /mq9/<subject>`) with the `mq9-*` headers and JSON fields as
 * flags. `--json` prints the broker's reply; otherwise a line or a table.
 * `mq9 request` sends any subject raw, like `nats request`.
 */
import type { Command } from "commander";
import type { FetchOptions, QueryOptions, SendOptions } from "@mortarmq/mq9";
import { PRIORITIES } from "../../wire/mq9/priority"; // not the index: that loads zod
import { MAX_BATCH_MSGS } from "../../wire/mq9/limits";
import { action, output, printJson } from "./context";
import { usageError } from "./errors";
import { readPayload } from "./input";
import { messagesReply, withMq9 } from "./mq9-http";
import { renderMessages } from "./mq9-render";
import { parseChoice, parseIntOption, parseList, parseTimeOption } from "./parse";
import { registerMq9Agents } from "./mq9-agents";
import { registerMq9List } from "./mq9-list";

const DELIVER = ["latest", "earliest", "from_time", "from_id"] as const;

interface FetchFlags {
  group?: string;
  deliver?: string;
  fromTime?: string;
  fromId?: string;
  forceDeliver?: boolean;
  numMsgs?: string;
  maxWaitMs?: string;
  ack?: boolean;
}

/** The FETCH options for the flags (mq9 spec, FETCH 请求字段); `--from-time`/`--from-id` imply their `deliver`. */
export function fetchOptions(o: FetchFlags): FetchOptions {
  const out: FetchOptions = {};
  if (o.group !== undefined) out.group = o.group;
  if (o.deliver !== undefined) out.deliver = parseChoice("--deliver", o.deliver.replace("-", "_"), DELIVER);
  if (o.fromTime !== undefined && o.fromId !== undefined) throw usageError("give --from-time or --from-id, not both");
  if (o.fromTime !== undefined) out.fromTime = parseTimeOption("--from-time", o.fromTime);
  if (o.fromId !== undefined) out.fromId = parseIntOption("--from-id", o.fromId, 0, Number.MAX_SAFE_INTEGER);
  if (o.forceDeliver) {
    if (o.group === undefined) throw usageError("--force-deliver needs --group (it resets a group's position)");
    out.forceDeliver = true;
  }
  if (o.numMsgs !== undefined) out.numMsgs = parseIntOption("--num-msgs", o.numMsgs, 1, MAX_BATCH_MSGS); // the broker clamps larger values
  if (o.maxWaitMs !== undefined) out.maxWaitMs = parseIntOption("--max-wait-ms", o.maxWaitMs, 0, Number.MAX_SAFE_INTEGER);
  return out;
}

/** The QUERY options for the flags (docs/mq9.md, QUERY). */
export function queryOptions(o: { key?: string; limit?: string; since?: string; tags?: string; correlationId?: string }): QueryOptions {
  const out: QueryOptions = {};
  if (o.key !== undefined) out.key = o.key;
  if (o.limit !== undefined) out.limit = parseIntOption("--limit", o.limit, 1, Number.MAX_SAFE_INTEGER);
  if (o.since !== undefined) out.since = parseTimeOption("--since", o.since);
  if (o.tags !== undefined) out.tags = parseList(o.tags);
  if (o.correlationId !== undefined) out.correlationId = o.correlationId;
  return out;
}

/** SEND flags. */
interface SendFlags { key?: string; delay?: string; ttl?: string; tags?: string; priority?: string; replyTo?: string; correlationId?: string }

/** The SEND options (`mq9-*` headers) for the flags; the broker checks what the CLI does not (ranges, ttl > delay, addresses). */
export function sendOptions(o: SendFlags): SendOptions {
  const out: SendOptions = {};
  if (o.key !== undefined) out.key = o.key;
  if (o.delay !== undefined) out.delay = parseIntOption("--delay", o.delay, 0, Number.MAX_SAFE_INTEGER);
  if (o.ttl !== undefined) out.ttl = parseIntOption("--ttl", o.ttl, 0, Number.MAX_SAFE_INTEGER);
  if (o.tags !== undefined) out.tags = parseList(o.tags);
  if (o.priority !== undefined) out.priority = parseChoice("--priority", o.priority, PRIORITIES);
  if (o.replyTo !== undefined) out.replyTo = o.replyTo;
  if (o.correlationId !== undefined) out.correlationId = o.correlationId;
  return out;
}

/** Registers `mq9` and its subcommands on `program`. */
export function registerMq9(program: Command): void {
  const mq9 = program.command("mq9").description("mq9 mailboxes and agents over HTTP (POST /mq9/<subject>)");

  mq9
    .command("create [address]")
    .description("create a mailbox ($mq9.AI.MAILBOX.CREATE); without an address the broker generates one")
    .option("--ttl <seconds>", "mailbox lifetime in seconds; 0 = never expires (broker default: 86400)")
    .action(action(async (g, address: string | undefined, o: { ttl?: string }) => {
      const ttl = o.ttl === undefined ? undefined : parseIntOption("--ttl", o.ttl, 0, Number.MAX_SAFE_INTEGER);
      const { mailAddress } = await withMq9(g, (mq) => mq.createMailbox({ name: address, ttl }));
      output(g, { error: "", mail_address: mailAddress }, () => `created mailbox ${mailAddress}`);
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
    .option("--reply-to <address>", "mq9-reply-to: the mailbox answers should go to (conversations)")
    .option("--correlation-id <id>", "mq9-correlation-id: the exchange this message belongs to (conversations)")
    .action(action(async (g, address: string, payload: string | undefined, o: SendFlags & { file?: string }) => {
      const opts = sendOptions(o);
      const bytes = await readPayload({ arg: payload, file: o.file }, "payload");
      const { msgId } = await withMq9(g, (mq) => mq.send(address, bytes, opts));
      output(g, { error: "", msg_id: msgId }, () => (msgId === -1
        ? `scheduled for ${address} in ${opts.delay} s (msg_id -1: the id is assigned when it becomes visible)`
        : `sent to ${address}: msg_id ${msgId}`));
    }));

  mq9
    .command("fetch <address>")
    .description("fetch messages ($mq9.AI.MSG.FETCH): stateless, or for a consumer group with --group")
    .option("-g, --group <name>", "consumer group (stateful: the broker keeps its position)")
    .option("--deliver <policy>", "start: latest (default), earliest, from_time, from_id")
    .option("--from-time <time>", "start at this time: unix seconds or ISO-8601 (implies --deliver from_time)")
    .option("--from-id <msg_id>", "start at this msg_id, inclusive (implies --deliver from_id)")
    .option("--force-deliver", "reset the group's position to --deliver")
    .option("-n, --num-msgs <n>", `at most this many messages (1 to ${MAX_BATCH_MSGS}; broker default 100)`)
    .option("--max-wait-ms <ms>", "long-poll: wait up to this long for a message (broker default 500; 0 = answer at once)")
    .option("--ack", "with --group: ACK the last message of the batch (acknowledges the whole batch)")
    .option("--payload-width <n>", "cut payloads in the table to this many characters", "80")
    .action(action(async (g, address: string, o: FetchFlags & { payloadWidth: string }) => {
      if (o.ack && o.group === undefined) throw usageError("--ack needs --group");
      const width = parseIntOption("--payload-width", o.payloadWidth, 8, 1_000_000);
      const opts = fetchOptions(o);
      let acked: number | null = null;
      const messages = await withMq9(g, async (mq) => {
        const batch = await mq.fetch(address, opts);
        const last = batch[batch.length - 1];
        if (o.ack && last) {
          await last.ack();
          acked = last.msgId;
        }
        return batch;
      });
      const r = messagesReply(messages);
      output(g, o.ack ? { ...r, acked_msg_id: acked } : r, () =>
        renderMessages(r.messages, width) + (acked !== null ? `acked the batch through msg_id ${acked} for group ${o.group}\n` : ""));
    }));

  mq9
    .command("ack <address> <msg_id>")
    .description("acknowledge a fetched message for a group ($mq9.AI.MSG.ACK)")
    .requiredOption("-g, --group <name>", "consumer group, as used with fetch")
    .action(action(async (g, address: string, msgId: string, o: { group: string }) => {
      const id = parseIntOption("msg_id", msgId, 0, Number.MAX_SAFE_INTEGER);
      await withMq9(g, (mq) => mq.ack(address, o.group, id));
      output(g, { error: "" }, () => `acked msg_id ${id} in ${address} for group ${o.group}`);
    }));

  mq9
    .command("query <address>")
    .description("list stored messages without moving any position ($mq9.AI.MSG.QUERY); filters combine with AND")
    .option("-k, --key <key>", "only the message with this mq9-key")
    .option("--limit <n>", "the newest N matching messages (broker default and max 1000)")
    .option("--since <time>", "created at or after: unix seconds or ISO-8601 with a zone (a date alone is UTC midnight)")
    .option("--tags <a,b>", "only messages carrying every one of these tags")
    .option("--correlation-id <id>", "only messages sent with this mq9-correlation-id")
    .option("--payload-width <n>", "cut payloads in the table to this many characters", "80")
    .action(action(async (g, address: string, o: { key?: string; limit?: string; since?: string; tags?: string; correlationId?: string; payloadWidth: string }) => {
      const width = parseIntOption("--payload-width", o.payloadWidth, 8, 1_000_000);
      const opts = queryOptions(o);
      const r = messagesReply(await withMq9(g, (mq) => mq.query(address, opts)));
      output(g, r, () => renderMessages(r.messages, width));
    }));

  mq9
    .command("delete <address> <msg_id>")
    .description("delete one message ($mq9.AI.MSG.DELETE)")
    .action(action(async (g, address: string, msgId: string) => {
      const id = parseIntOption("msg_id", msgId, 0, Number.MAX_SAFE_INTEGER);
      await withMq9(g, (mq) => mq.delete(address, id));
      output(g, { error: "", deleted: true }, () => `deleted msg_id ${id} from ${address}`);
    }));

  registerMq9List(mq9);
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
      printJson(await withMq9(g, (mq) => mq.call(subject, bytes, { headers })));
    }));
}
