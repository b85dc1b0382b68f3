/**
 * `mortarmq pub TOPIC [VALUE]`: publishes one value, or one message per line
 * of `--file` / stdin, pipelined on one connection, as an idempotent producer
 * by default. Progress bar on a terminal; a summary line (or a JSON summary)
 * at the end; exit status 1 if any message failed. Ctrl-C (SIGINT) or
 * SIGTERM stops reading, waits up to DRAIN_MS for the answers outstanding,
 * stops the bar (which restores the cursor and line wrap), prints the
 * summary and exits 130 (SIGTERM: 143); a second Ctrl-C exits at once, the
 * terminal restored too (docs/cli.md).
 */
import { statSync } from "node:fs";
import type { Command } from "commander";
import type { SingleBar } from "cli-progress";
import type { ResolvedTopic } from "./connect";
import { action, printJson, printLine, type GlobalOptions } from "./context";
import { describeError, errorTag, usageError, type ErrorReport } from "./errors";
import { formatBytes, formatDuration, ratePerSecond } from "./format";
import { lineToMessage, linesAsMessages, openLineSource, type LineSource } from "./input";
import { parseIntOption, parseU64Option, randomProducerId } from "./parse";
import { PartitionRouter } from "./partition";
import { publishAll, type OutgoingMessage, type PublishSummary } from "./publisher";

/** After Ctrl-C, how long `pub` waits for the answers of what it sent, ms (then counts the rest as unanswered). */
export const DRAIN_MS = 10_000;

/** Exit status after a stop by signal: 128 + the signal number, as a shell reports a process killed by it. */
const SIGNAL_EXIT: Readonly<Record<"SIGINT" | "SIGTERM", number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Publishes outstanding at most by default (the SDK keeps at most 1024 of
 * them in flight per partition for an idempotent producer, so a topic with
 * several partitions uses the rest). Measured on wrangler dev, 100k short
 * lines: 1 partition 256 → ~80k msg/s; 4 partitions 256 → ~47k, 4096 → ~83k.
 */
export const DEFAULT_IN_FLIGHT = 4096;

/** Key + value bytes outstanding at most: half the broker's 32 MiB bound on a connection's unanswered requests. */
export const MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024;

interface PubOptions {
  file?: string;
  key?: string;
  keySeparator?: string;
  partition?: string;
  producerId?: string;
  idempotence: boolean;
  inFlight: string;
  progress: boolean;
}

/** Registers `pub` on `program`. */
export function registerPub(program: Command): void {
  program
    .command("pub <topic> [value]")
    .description("publish VALUE, or one message per line of --file / stdin, to a topic (idempotent producer by default)")
    .option("-f, --file <path>", "read messages from this file, one per line")
    .option("-k, --key <key>", "message key (UTF-8) for every message; keyed messages go to hash(key) mod partitions")
    .option("--key-separator <sep>", "each line is KEY<sep>VALUE (split at the first <sep>)")
    .option("-p, --partition <n>", "send every message to this partition (default: by key hash, else round-robin from 0)")
    .option("--producer-id <id>", "idempotent producer id, decimal or 0x-hex (default: a random 64-bit id)")
    .option("--no-idempotence", "publish without a producer id (producer_id = 0, no deduplication)")
    .option("--in-flight <n>", "publishes outstanding at most (pipelining window)", String(DEFAULT_IN_FLIGHT))
    .option("--no-progress", "no progress bar, even on a terminal")
    .action(action(async (g, topic: string, value: string | undefined, opts: PubOptions) => runPub(g, topic, value, opts)));
}

async function runPub(g: GlobalOptions, topicName: string, value: string | undefined, opts: PubOptions): Promise<void> {
  if (value !== undefined && opts.file !== undefined) throw usageError("give a VALUE argument or --file, not both");
  if (!opts.idempotence && opts.producerId !== undefined) throw usageError("--producer-id and --no-idempotence exclude each other");
  const inFlight = parseIntOption("--in-flight", opts.inFlight, 1, 100_000);
  const fixed = opts.partition === undefined ? undefined : parseIntOption("--partition", opts.partition, 0, 0xfffe);
  const producerId = !opts.idempotence ? 0n : opts.producerId !== undefined ? parseU64Option("--producer-id", opts.producerId, 1n) : randomProducerId();
  const lineOpts = { key: opts.key, keySeparator: opts.keySeparator };

  const { connectBroker, resolveTopic } = await import("./connect"); // the SDK, loaded only when needed (startup)
  const client = await connectBroker(g);
  try {
    const topic = await resolveTopic(client, topicName);
    if (fixed !== undefined && fixed >= topic.partitionCount) {
      throw usageError(`--partition ${fixed} does not exist: ${topicName} has ${topic.partitionCount} partition(s) (0..${topic.partitionCount - 1})`);
    }
    const router = new PartitionRouter(topic.partitionCount, fixed);
    let messages: Iterable<OutgoingMessage> | AsyncIterable<OutgoingMessage>;
    let bar: ProgressBar | null = null;
    let input: LineSource | null = null;
    if (value !== undefined) {
      messages = [lineToMessage(value, 1, { key: opts.key })];
    } else {
      input = openLineSource(opts.file, (p) => statSync(p).size);
      if (opts.file === undefined && process.stdin.isTTY && !g.json) process.stderr.write("mortarmq: reading messages from stdin, one per line (Ctrl-D ends)\n");
      messages = linesAsMessages(input.stream, lineOpts);
      if (opts.progress && !g.json && process.stderr.isTTY) bar = new ProgressBar(await import("cli-progress"), input.totalBytes, input.bytesRead);
    }
    // The first Ctrl-C / SIGTERM stops reading (the summary follows); a second Ctrl-C exits at once.
    const stop = new AbortController();
    let stoppedBy: keyof typeof SIGNAL_EXIT | null = null;
    const onSignal = (signal: keyof typeof SIGNAL_EXIT) => {
      if (stoppedBy === null) {
        stoppedBy = signal;
        stop.abort(`interrupted (${signal})`);
        input?.stream.destroy(); // a pending read (a terminal, a pipe) would never end
        return;
      }
      bar?.stop();
      process.stderr.write("mortarmq: stopped without waiting for the outstanding answers\n");
      process.exit(SIGNAL_EXIT[signal]);
    };
    const onInt = () => onSignal("SIGINT");
    const onTerm = () => onSignal("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    let summary: PublishSummary;
    try {
      summary = await publishAll(messages, {
        router, producerId, inFlight, maxInFlightBytes: MAX_IN_FLIGHT_BYTES,
        send: (partition, key, val, producerSeq) => client.publish(topic.topicId, partition, key, val, { producerId, producerSeq }),
        isClosed: () => client.closed,
        signal: stop.signal,
        drainMs: DRAIN_MS,
        onProgress: bar ? (answered, failed) => bar!.count(answered, failed) : undefined,
      });
    } finally {
      bar?.stop(); // also when reading the input failed: the cursor and line wrap come back
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    }
    report(g, topic, producerId, summary);
    if (stoppedBy !== null) process.exitCode = SIGNAL_EXIT[stoppedBy];
    else if (summary.failed > 0 || summary.stopped) process.exitCode = 1;
  } finally {
    await client.close();
  }
}

/** The `--json` summary object of a run (docs/cli.md). */
export function summaryJson(topic: ResolvedTopic, producerId: bigint, s: PublishSummary, errors: (ErrorReport & { line: number })[]) {
  return {
    topic: topic.name,
    topic_id: topic.topicId,
    producer_id: producerId === 0n ? null : producerId.toString(),
    published: s.published,
    deduplicated: s.deduplicated,
    failed: s.failed,
    bytes: s.bytes,
    elapsed_ms: Math.round(s.elapsedMs),
    rate_per_s: ratePerSecond(s.published, s.elapsedMs),
    partitions: s.partitions.map((p) => ({
      partition: p.partition,
      published: p.published,
      first_sequence: p.firstSequence?.toString() ?? null,
      last_sequence: p.lastSequence?.toString() ?? null,
    })),
    errors,
    stopped: s.stopped,
    unanswered: s.unanswered,
  };
}

/** The human summary line. */
export function summaryLine(topic: ResolvedTopic, s: PublishSummary): string {
  const total = s.published + s.failed + s.unanswered;
  if (total === 1 && s.published === 1) {
    const p = s.partitions[0]!;
    return s.deduplicated === 1
      ? `duplicate: already published to ${topic.name} partition ${p.partition} at sequence ${p.firstSequence}`
      : `published to ${topic.name} partition ${p.partition} at sequence ${p.firstSequence}`;
  }
  const rate = ratePerSecond(s.published, s.elapsedMs);
  return `published ${s.published} of ${total} message${total === 1 ? "" : "s"} to ${topic.name} in ${formatDuration(s.elapsedMs)}`
    + ` (${rate} msg/s, ${formatBytes(s.bytes)}): ${s.failed} failed, ${s.deduplicated} deduplicated`
    + (s.stopped ? `; stopped early: ${s.stopped}` : "")
    + (s.unanswered > 0 ? `; ${s.unanswered} unanswered (appended or not: unknown)` : "");
}

function report(g: GlobalOptions, topic: ResolvedTopic, producerId: bigint, s: PublishSummary): void {
  const errors = s.errors.map((f) => ({ line: f.line, ...describeError(f.error, g.url) }));
  if (g.json) {
    printJson(summaryJson(topic, producerId, s, errors));
    return;
  }
  for (const e of errors) process.stderr.write(`mortarmq: line ${e.line}: ${errorTag(e)}: ${e.message}\n`);
  if (s.failed > errors.length) process.stderr.write(`mortarmq: … and ${s.failed - errors.length} more failures\n`);
  if (errors[0]?.hint) process.stderr.write(`  what to do${errors[0].action ? ` (${errors[0].action})` : ""}: ${errors[0].hint}\n`);
  printLine(summaryLine(topic, s));
}

/** A cli-progress bar on stderr: bytes of a file when its size is known, else a message counter. */
class ProgressBar {
  private readonly bar: SingleBar;
  private readonly started = performance.now();
  private answered = 0;
  private failed = 0;
  private stopped = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(lib: typeof import("cli-progress"), private readonly totalBytes: number | null, private readonly bytesRead: () => number) {
    const format = totalBytes !== null
      ? "{bar} {percentage}% | {answered} messages | {rate} msg/s | {failed} failed"
      : "{answered} messages | {rate} msg/s | {failed} failed";
    this.bar = new lib.SingleBar({ format, stream: process.stderr, hideCursor: true, clearOnComplete: true, fps: 10 }, lib.Presets.shades_classic);
    this.bar.start(totalBytes ?? 0, 0, { answered: 0, rate: 0, failed: 0 });
    this.timer = setInterval(() => this.render(), 100);
    this.timer.unref();
  }

  count(answered: number, failed: number): void {
    this.answered = answered;
    this.failed = failed;
  }

  private render(): void {
    const rate = ratePerSecond(this.answered, performance.now() - this.started);
    this.bar.update(this.totalBytes !== null ? Math.min(this.bytesRead(), this.totalBytes) : 0, { answered: this.answered, rate, failed: this.failed });
  }

  /** Last render, then cli-progress's stop: clears the line, shows the cursor, turns line wrap back on. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.render();
    this.bar.stop();
  }
}
