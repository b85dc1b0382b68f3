/**
 * Input for commands that read data: one message per line from a file or
 * stdin (`pub`), or a whole payload from an argument, a file or stdin
 * (`mq9 send`, `mq9 register`, …).
 */
import { createReadStream, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { usageError } from "./errors";
import { parseJsonObject } from "./parse";
import type { OutgoingMessage } from "./publisher";

const encoder = new TextEncoder();

/** How lines become messages. */
export interface LineOptions {
  /** Key for every message (UTF-8), unless the line carries one. */
  key?: string;
  /** Split each line at the first occurrence: `key<SEP>value`; a line without it keeps `key`. */
  keySeparator?: string;
}

/** Splits one input line into key and value bytes (see LineOptions). */
export function lineToMessage(line: string, lineNo: number, o: LineOptions): OutgoingMessage {
  let key = o.key ?? null;
  let value = line;
  if (o.keySeparator) {
    const i = line.indexOf(o.keySeparator);
    if (i >= 0) {
      key = line.slice(0, i);
      value = line.slice(i + o.keySeparator.length);
    }
  }
  return { line: lineNo, key: key === null ? null : encoder.encode(key), value: encoder.encode(value) };
}

/**
 * Messages from the lines of `stream` (LF or CRLF; a final line without a
 * newline counts; every line, also an empty one, is one message).
 */
export async function* linesAsMessages(stream: Readable, o: LineOptions): AsyncGenerator<OutgoingMessage> {
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  for await (const line of rl) yield lineToMessage(line, ++n, o);
}

/** A line source for `pub`: the stream, and how many bytes of it were read so far (for the progress bar). */
export interface LineSource {
  stream: Readable;
  /** Total bytes when known (a regular file), else null. */
  totalBytes: number | null;
  bytesRead(): number;
}

/**
 * Opens `path` (or stdin when undefined) for line reading.
 * @throws CliError USAGE when the file cannot be read
 */
export function openLineSource(path: string | undefined, fileSize: (p: string) => number): LineSource {
  if (path === undefined) return { stream: process.stdin, totalBytes: null, bytesRead: () => process.stdin.bytesRead ?? 0 };
  let size: number;
  try {
    size = fileSize(path);
  } catch (e) {
    throw usageError(`cannot read --file ${path}: ${(e as Error).message}`);
  }
  const stream = createReadStream(path);
  return { stream, totalBytes: size, bytesRead: () => stream.bytesRead };
}

/** Where a command's payload comes from. */
export interface PayloadInput {
  /** The positional argument, if given. */
  arg?: string;
  /** `--file PATH`. */
  file?: string;
}

/**
 * The payload bytes: the argument (UTF-8), the file's bytes, or all of
 * stdin when neither is given and stdin is not a terminal. `fallback` is used
 * when there is no input at all (undefined → USAGE error).
 * @throws CliError USAGE for both an argument and a file, an unreadable file, or no input
 */
export async function readPayload(input: PayloadInput, what: string, fallback?: Uint8Array): Promise<Uint8Array> {
  if (input.arg !== undefined && input.file !== undefined) throw usageError(`give the ${what} as an argument or with --file, not both`);
  if (input.arg !== undefined) return encoder.encode(input.arg);
  if (input.file !== undefined) {
    try {
      return new Uint8Array(readFileSync(input.file));
    } catch (e) {
      throw usageError(`cannot read --file ${input.file}: ${(e as Error).message}`);
    }
  }
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    if (chunks.length > 0 || fallback === undefined) return new Uint8Array(Buffer.concat(chunks));
  }
  if (fallback !== undefined) return fallback;
  throw usageError(`no ${what}: give it as an argument, with --file PATH, or on stdin`);
}

/** A JSON object from the argument, `--file` or stdin; `{}` when there is no input. @throws CliError USAGE when it is not a JSON object */
export async function readJsonObject(arg: string | undefined, file: string | undefined, what: string): Promise<Record<string, unknown>> {
  const bytes = await readPayload({ arg, file }, what, encoder.encode("{}"));
  const text = new TextDecoder().decode(bytes).trim();
  return parseJsonObject(what, text === "" ? "{}" : text);
}
