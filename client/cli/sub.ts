/**
 * `mortarmq sub TOPIC --group G`: joins consumer group G on TOPIC, prints
 * every message and ACKs it after printing. Stops after `--count` messages,
 * after `--timeout` ms without a message, on Ctrl-C / SIGTERM, or when stdout
 * is closed (`| head`): then it waits for the ACKs of what it printed and
 * leaves the group cleanly. Without `--count` the broker pushes (SUB push
 * mode, the default credit window); with `--count` the CLI PULLs exactly the
 * messages it still has to print (SUB pull mode), so it never takes one it
 * will not print — pushed-but-unprinted messages would each wait out the ack
 * deadline and come back as another attempt. Messages taken but not printed
 * (Ctrl-C, a closed stdout) are not ACKed, so the group redelivers them
 * (at-least-once).
 */
import type { Command } from "commander";
import { DEFAULT_PULL_MAX_MSGS } from "../../wire/mortar/constants";
import type { Message, Subscription } from "../sdk";
import { action, type GlobalOptions } from "./context";
import { describeError, errorTag } from "./errors";
import { payloadCell, printableText } from "./format";
import { parseChoice, parseIntOption } from "./parse";

interface SubOptions {
  group: string;
  count?: string;
  from: string;
  timeout?: string;
}

/** The `--json` line for one message (NDJSON: one object per line). */
export function messageJson(topic: string, m: Pick<Message, "partition" | "sequence" | "attempt" | "key" | "value" | "producerId" | "producerSeq">) {
  const text = printableText(m.value);
  const key = m.key.length === 0 ? null : printableText(m.key) ?? `base64:${Buffer.from(m.key).toString("base64")}`;
  return {
    topic,
    partition: m.partition,
    sequence: m.sequence.toString(),
    attempt: m.attempt,
    key,
    value: text ?? Buffer.from(m.value).toString("base64"),
    value_encoding: text === null ? "base64" : "utf8",
    producer_id: m.producerId.toString(),
    producer_seq: m.producerSeq.toString(),
  };
}

/** The human line for one message: `<partition>:<sequence>  <key or ->  <value>` (value as in tables, uncut). */
export function messageLine(m: Pick<Message, "partition" | "sequence" | "key" | "value">): string {
  const key = m.key.length === 0 ? "-" : payloadCell(view(m.key), Number.MAX_SAFE_INTEGER);
  return `${m.partition}:${m.sequence}  ${key}  ${payloadCell(view(m.value), Number.MAX_SAFE_INTEGER)}`;
}

function view(bytes: Uint8Array) {
  const text = printableText(bytes);
  return text === null ? { encoding: "base64" as const, text: Buffer.from(bytes).toString("base64") } : { encoding: "utf8" as const, text };
}

/** Registers `sub` on `program`. */
export function registerSub(program: Command): void {
  program
    .command("sub <topic>")
    .description("consume a topic as a member of a consumer group: print each message, then ACK it")
    .requiredOption("-g, --group <name>", "consumer group")
    .option("-n, --count <n>", "stop after this many messages")
    .option("--from <where>", "where a group with no committed position starts: earliest or latest", "earliest")
    .option("--timeout <ms>", "stop when no message arrived for this long (default: wait until Ctrl-C)")
    .action(action(async (g, topic: string, opts: SubOptions) => runSub(g, topic, opts)));
}

/** Writes `text` to stdout; resolves false when it could not be written (e.g. EPIPE: the reader of a pipe is gone). */
function writeStdout(text: string): Promise<boolean> {
  if (process.stdout.destroyed) return Promise.resolve(false);
  return new Promise((res) => process.stdout.write(text, (err) => res(!err)));
}

/** Longest single PULL wait, ms: a member's first PULL may come before its partitions are assigned, and waits out this slice with none. */
const PULL_SLICE_MS = 500;

/**
 * `next(timeoutMs)` over a pull-mode subscription: one message at a time
 * (null after `timeoutMs` without one; never, without), PULLing at most
 * `left()` messages at once.
 */
function puller(sub: Subscription, left: () => number): (timeoutMs?: number) => Promise<Message | null> {
  const batch: Message[] = [];
  return async (timeoutMs) => {
    const until = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    while (batch.length === 0) {
      const wait = Math.min(PULL_SLICE_MS, until - Date.now());
      if (wait <= 0) return null;
      batch.push(...(await sub.pull({ maxMsgs: Math.min(left(), DEFAULT_PULL_MAX_MSGS), waitMs: wait })));
    }
    return batch.shift()!;
  };
}

async function runSub(g: GlobalOptions, topicName: string, opts: SubOptions): Promise<void> {
  const count = opts.count === undefined ? undefined : parseIntOption("--count", opts.count, 1, Number.MAX_SAFE_INTEGER);
  const from = parseChoice("--from", opts.from, ["earliest", "latest"] as const);
  const timeoutMs = opts.timeout === undefined ? undefined : parseIntOption("--timeout", opts.timeout, 1, 2 ** 31 - 1);
  const { connectBroker, resolveTopic } = await import("./connect"); // the SDK, loaded only when needed (startup)
  const client = await connectBroker(g);
  let received = 0;
  let ackFailures = 0;
  const acks: Promise<void>[] = [];
  try {
    const topic = await resolveTopic(client, topicName);
    // With --count: pull mode, PULLing no more than is left to print (see the module comment).
    const sub = await client.subscribe(topic.topicId, opts.group, { startPolicy: from, pull: count !== undefined });
    const take = count === undefined ? (wait?: number) => sub.next(wait) : puller(sub, () => count - received);
    // Ctrl-C / SIGTERM / a closed stdout (`| head`) end the loop; the ACKs of what was printed go out
    // before the LEAVE (an ACK after it is refused: UNKNOWN_SUBSCRIPTION). A second Ctrl-C kills.
    let stopping = false;
    let wake: () => void = () => {};
    const stopped = new Promise<null>((r) => (wake = () => r(null)));
    const stop = () => {
      stopping = true;
      wake();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    try {
      while (!stopping && (count === undefined || received < count)) {
        const m = await Promise.race([take(timeoutMs), stopped]);
        if (!m || stopping) break; // a message taken but not printed is not ACKed: redelivered
        if (!(await writeStdout((g.json ? JSON.stringify(messageJson(topicName, m)) : messageLine(m)) + "\n"))) break;
        received++;
        acks.push(m.ack().catch((e: unknown) => {
          ackFailures++;
          const r = describeError(e, g.url);
          process.stderr.write(`mortarmq: ACK of ${m.partition}:${m.sequence} failed: ${errorTag(r)}: ${r.message}\n`);
        }));
        if (acks.length >= 1024) await Promise.all(acks.splice(0));
      }
      await Promise.all(acks.splice(0));
    } finally {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      await sub.close();
    }
    if (!g.json) process.stderr.write(`mortarmq: received ${received} message${received === 1 ? "" : "s"} from ${topicName} as group ${opts.group} (${received - ackFailures} acked)\n`);
    if (ackFailures > 0) process.exitCode = 1;
  } finally {
    await client.close();
  }
}
