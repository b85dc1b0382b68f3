/**
 * Topic retention flags of `mortarmq topics create|alter` and how the CLI
 * shows the settings (docs/cli.md "Topic retention"; the settings:
 * docs/protocol.md "Topic retention"). Pure; the commands live in topics.ts.
 */
import type { Command } from "commander";
import type { TopicRetention } from "../sdk/retention";
import { formatBytes } from "./format";
import { parseBytes, parseChoice, parseDurationMs, parseIntOption } from "./parse";

/** The raw flag values (commander's camelCase names). */
export interface RetentionFlags {
  retentionMs?: string;
  retentionBytes?: string;
  retentionMessages?: string;
  discard?: string;
}

/** Adds the four retention flags to `cmd`. */
export function addRetentionOptions(cmd: Command): Command {
  return cmd
    .option("--retention-ms <duration>", "delete records older than this: 500ms, 90s, 15m, 12h, 7d (a bare number is ms); 0 = keep forever")
    .option("--retention-bytes <bytes>", "per partition, keep this many bytes of keys + values (never less; more by < one 1 MiB segment): 64KiB, 10MiB, 1GiB; 0 = no limit")
    .option("--retention-messages <n>", "per partition, keep exactly the newest N records; 0 = no limit")
    .option("--discard <policy>", "at a size limit: old (delete the oldest records) or new (refuse PUBs)");
}

const isUnlimited = (v: string) => /^(unlimited|none)$/i.test(v.trim());

/**
 * The settings the flags give (only those present), with units parsed;
 * `unlimited` is accepted for 0 on the three limits.
 * @throws CliError USAGE for a malformed value
 */
export function retentionFromFlags(f: RetentionFlags): Partial<TopicRetention> {
  const r: Partial<TopicRetention> = {};
  if (f.retentionMs !== undefined) r.retentionMs = isUnlimited(f.retentionMs) ? 0 : parseDurationMs("--retention-ms", f.retentionMs);
  if (f.retentionBytes !== undefined) r.retentionBytes = isUnlimited(f.retentionBytes) ? 0 : parseBytes("--retention-bytes", f.retentionBytes);
  if (f.retentionMessages !== undefined) {
    r.retentionMessages = isUnlimited(f.retentionMessages) ? 0 : parseIntOption("--retention-messages", f.retentionMessages, 0, Number.MAX_SAFE_INTEGER);
  }
  if (f.discard !== undefined) r.discard = parseChoice("--discard", f.discard, ["old", "new"] as const);
  return r;
}

/** 604800000 → "7d", 5400000 → "90m", 1500 → "1500ms": the largest unit up to days that divides exactly (parseDurationMs reads it back). */
export function formatSpan(ms: number): string {
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** One line: "max age 7d, max size unlimited, max records 1000, discard old" (limits per partition). */
export function renderRetention(r: TopicRetention): string {
  const age = r.retentionMs === 0 ? "forever" : formatSpan(r.retentionMs);
  const size = r.retentionBytes === 0 ? "unlimited" : formatBytes(r.retentionBytes);
  const records = r.retentionMessages === 0 ? "unlimited" : String(r.retentionMessages);
  return `max age ${age}, max size ${size}, max records ${records} per partition, discard ${r.discard}`;
}

/** The JSON form (as /stats has it). */
export function retentionJson(r: TopicRetention): { retention_ms: number; retention_bytes: number; retention_messages: number; discard: string } {
  return { retention_ms: r.retentionMs, retention_bytes: r.retentionBytes, retention_messages: r.retentionMessages, discard: r.discard };
}
