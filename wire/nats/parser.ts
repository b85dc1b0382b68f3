/**
 * Streaming parser for what NATS clients send (CONNECT, PING, PONG, SUB,
 * UNSUB, PUB, HPUB). Bytes arrive in arbitrary pieces (WebSocket message
 * boundaries are not operation boundaries): a control line or a payload may
 * be split anywhere, and one piece may hold many operations.
 *
 * Operation names are case-insensitive; arguments are separated by spaces
 * or tabs; lines end in CRLF (a bare LF is accepted, as nats-server does).
 * Limits and error texts follow nats-server (server/parser.go,
 * server/client.go); every failure is a fatal {@link NatsProtocolError} and
 * the parser stays failed afterwards. It never throws.
 */
import { DEFAULT_MAX_PAYLOAD, MAX_CONTROL_LINE, NatsErr, NatsProtocolError, fatal } from "./errors";

/** One operation from a client. Payload/header views may alias the pushed chunk. */
export type ClientOp =
  | { op: "CONNECT"; json: string }
  | { op: "PING" }
  | { op: "PONG" }
  | { op: "SUB"; subject: string; queue?: string; sid: string }
  /** `max` absent = unsubscribe now; otherwise auto-unsubscribe after `max` messages (0 = now). */
  | { op: "UNSUB"; sid: string; max?: number }
  | { op: "PUB"; subject: string; reply?: string; payload: Uint8Array }
  /** `header` is the raw header block (`#hdr` bytes), `payload` the rest. */
  | { op: "HPUB"; subject: string; reply?: string; header: Uint8Array; payload: Uint8Array };

/** Result of {@link NatsParser.push}: complete operations, then the error that stopped parsing, if any. */
export interface ParseResult {
  ops: ClientOp[];
  error?: NatsProtocolError;
}

export interface ParserOptions {
  /** Largest PUB size / HPUB total size, bytes (default 1 MiB). */
  maxPayload?: number;
  /** Longest control line without CRLF, bytes (default 4096). */
  maxControlLine?: number;
}

type PubHead =
  | { op: "PUB"; subject: string; reply?: string; size: number }
  | { op: "HPUB"; subject: string; reply?: string; hdr: number; size: number };

const LF = 0x0a;
const CR = 0x0d;
const td = new TextDecoder();

/** nats-server parseSize: 1–9 ASCII digits, otherwise -1. */
export function parseSize(s: string): number {
  if (s.length === 0 || s.length > 9) return -1;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const d = s.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

const isBlank = (c: number) => c === 0x20 || c === 0x09;

/** The space/tab-separated arguments of a control line (empty ones dropped), in one scan. */
function splitArgs(arg: string): string[] {
  const out: string[] = [];
  let start = -1;
  for (let i = 0; i < arg.length; i++) {
    if (isBlank(arg.charCodeAt(i))) {
      if (start >= 0) out.push(arg.slice(start, i));
      start = -1;
    } else if (start < 0) start = i;
  }
  if (start >= 0) out.push(arg.slice(start));
  return out;
}

/** Index of the first space or tab in `line` at or after `from`, or -1. */
function blankAt(line: string, from: number): number {
  for (let i = from; i < line.length; i++) if (isBlank(line.charCodeAt(i))) return i;
  return -1;
}

/** Go's %q, close enough for error texts: a double-quoted, escaped string. */
function q(s: string): string {
  return JSON.stringify(s);
}

/** Streaming client-protocol parser; one instance per connection. */
export class NatsParser {
  readonly maxPayload: number;
  readonly maxControlLine: number;
  private lineParts: Uint8Array[] = [];
  private lineLen = 0;
  private head: PubHead | null = null;
  private buf: Uint8Array | null = null;
  private filled = 0;
  private error: NatsProtocolError | undefined;

  constructor(opts: ParserOptions = {}) {
    this.maxPayload = opts.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.maxControlLine = opts.maxControlLine ?? MAX_CONTROL_LINE;
  }

  /** True while part of an operation is buffered (a control line or a payload). */
  get partial(): boolean {
    return this.head !== null || this.lineLen > 0;
  }

  /** Bytes currently buffered for the incomplete operation. */
  get bufferedBytes(): number {
    return this.head ? this.filled : this.lineLen;
  }

  /** The fatal error that stopped this parser, if any. */
  get failed(): NatsProtocolError | undefined {
    return this.error;
  }

  /** Feeds the next piece of the byte stream; returns the operations it completed. */
  push(chunk: Uint8Array): ParseResult {
    const ops: ClientOp[] = [];
    if (this.error) return { ops, error: this.error };
    let i = 0;
    while (i < chunk.length) {
      if (this.head) {
        i = this.readPayload(chunk, i, ops);
      } else {
        const j = chunk.indexOf(LF, i);
        if (j < 0) {
          this.lineParts.push(chunk.slice(i));
          this.lineLen += chunk.length - i;
          // +1: the CR of a CRLF may already be here while the LF is not.
          if (this.lineLen > this.maxControlLine + 1) this.error = fatal(NatsErr.MaxControlLine);
          i = chunk.length;
        } else {
          const line = this.takeLine(chunk.subarray(i, j));
          i = j + 1;
          if (line.length > this.maxControlLine) this.error = fatal(NatsErr.MaxControlLine);
          else this.onLine(td.decode(line), ops);
        }
      }
      if (this.error) return { ops, error: this.error };
    }
    return { ops };
  }

  /** Joins buffered line parts with the tail and drops a trailing CR. */
  private takeLine(tail: Uint8Array): Uint8Array {
    let line = tail;
    if (this.lineParts.length > 0) {
      line = new Uint8Array(this.lineLen + tail.length);
      let o = 0;
      for (const p of this.lineParts) {
        line.set(p, o);
        o += p.length;
      }
      line.set(tail, o);
      this.lineParts = [];
      this.lineLen = 0;
    }
    return line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
  }

  private onLine(line: string, ops: ClientOp[]): void {
    const c0 = line.charCodeAt(0) | 0x20; // lower case of an ASCII letter
    if (c0 === 0x70 || c0 === 0x63) { // p, c
      const upper = line.slice(0, 8).toUpperCase();
      // nats-server ignores anything after PING/PONG up to the LF, and CONNECT
      // needs no separator before its JSON.
      if (upper.startsWith("PING")) return void ops.push({ op: "PING" });
      if (upper.startsWith("PONG")) return void ops.push({ op: "PONG" });
      if (upper.startsWith("CONNECT")) return void ops.push({ op: "CONNECT", json: line.slice(7).replace(/^[ \t]+/, "") });
    }
    const sep = blankAt(line, 0);
    const name = sep < 0 ? "" : line.slice(0, sep).toUpperCase();
    let argAt = sep;
    while (argAt >= 0 && argAt < line.length && isBlank(line.charCodeAt(argAt))) argAt++;
    const arg = sep < 0 ? "" : line.slice(argAt);
    switch (name) {
      case "PUB":
        return this.onPub(arg);
      case "HPUB":
        return this.onHpub(arg);
      case "SUB": {
        const a = splitArgs(arg);
        if (a.length === 2) return void ops.push({ op: "SUB", subject: a[0], sid: a[1] });
        if (a.length === 3) return void ops.push({ op: "SUB", subject: a[0], queue: a[1], sid: a[2] });
        this.error = fatal(`processSub Parse Error: ${q(arg)}`);
        return;
      }
      case "UNSUB": {
        const a = splitArgs(arg);
        if (a.length === 1) return void ops.push({ op: "UNSUB", sid: a[0] });
        if (a.length === 2) return void ops.push({ op: "UNSUB", sid: a[0], max: Math.max(0, parseSize(a[1])) });
        this.error = fatal(`processUnsub Parse Error: ${q(arg)}`);
        return;
      }
      default:
        this.error = fatal(NatsErr.UnknownOp);
    }
  }

  private onPub(arg: string): void {
    const a = splitArgs(arg);
    if (a.length !== 2 && a.length !== 3) return void (this.error = fatal(`processPub Parse Error: ${q(arg)}`));
    const size = parseSize(a[a.length - 1]);
    if (size < 0) return void (this.error = fatal(`processPub Bad or Missing Size: ${q(arg)}`));
    if (size > this.maxPayload) return void (this.error = fatal(NatsErr.MaxPayload));
    this.startPayload({ op: "PUB", subject: a[0], reply: a.length === 3 ? a[1] : undefined, size });
  }

  private onHpub(arg: string): void {
    const a = splitArgs(arg);
    if (a.length !== 3 && a.length !== 4) return void (this.error = fatal(`processHeaderPub Parse Error: ${q(arg)}`));
    const hdr = parseSize(a[a.length - 2]);
    const size = parseSize(a[a.length - 1]);
    if (hdr < 0) return void (this.error = fatal(`processHeaderPub Bad or Missing Header Size: ${q(arg)}`));
    if (size < 0) return void (this.error = fatal(`processHeaderPub Bad or Missing Total Size: ${q(arg)}`));
    if (hdr > size) return void (this.error = fatal(`processHeaderPub Header Size larger then TotalSize: ${q(arg)}`));
    if (size > this.maxPayload) return void (this.error = fatal(NatsErr.MaxPayload));
    this.startPayload({ op: "HPUB", subject: a[0], reply: a.length === 4 ? a[1] : undefined, hdr, size });
  }

  private startPayload(head: PubHead): void {
    this.head = head;
    this.buf = null;
    this.filled = 0;
  }

  /** Consumes payload bytes + CRLF from `chunk` at `i`; returns the new index. */
  private readPayload(chunk: Uint8Array, i: number, ops: ClientOp[]): number {
    const head = this.head!;
    const need = head.size + 2;
    let body: Uint8Array;
    if (this.filled === 0 && chunk.length - i >= need) {
      body = chunk.subarray(i, i + need); // whole payload in this chunk: no copy
      i += need;
    } else {
      if (!this.buf) this.buf = new Uint8Array(need);
      const n = Math.min(need - this.filled, chunk.length - i);
      this.buf.set(chunk.subarray(i, i + n), this.filled);
      this.filled += n;
      i += n;
      if (this.filled < need) return i;
      body = this.buf;
    }
    this.head = null;
    this.buf = null;
    this.filled = 0;
    if (body[head.size] !== CR || body[head.size + 1] !== LF) {
      this.error = fatal(NatsErr.UnknownOp);
      return i;
    }
    if (head.op === "PUB") {
      ops.push({ op: "PUB", subject: head.subject, reply: head.reply, payload: body.subarray(0, head.size) });
    } else {
      ops.push({
        op: "HPUB",
        subject: head.subject,
        reply: head.reply,
        header: body.subarray(0, head.hdr),
        payload: body.subarray(head.hdr, head.size),
      });
    }
    return i;
  }
}
