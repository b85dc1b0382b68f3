/**
 * NATS message header blocks (the first `#hdr` bytes of HPUB/HMSG):
 *
 *   NATS/1.0[ <status>[ <description>]]\r\n
 *   Name: value\r\n ...
 *   \r\n
 *
 * Header names keep their case on the wire; {@link toMq9Headers} gives the
 * lower-cased map the mq9 handler takes.
 */

const te = new TextEncoder();
const td = new TextDecoder();

/** Version line every header block starts with. */
export const HEADER_VERSION = "NATS/1.0";

/** A decoded header block. `headers` keeps wire order and repeats. */
export interface HeaderBlock {
  /** Inline status code, e.g. 503 for "no responders". */
  status?: number;
  /** Text after the status code. */
  description?: string;
  headers: [name: string, value: string][];
}

/**
 * Decodes a header block, strictly: returns null — the HPUB is refused with
 * `-ERR 'bad message header detected'` (docs/nats.md, "Header blocks") —
 * when it does not start with `NATS/1.0`, has a line that is not
 * `Name: value` (no colon, or nothing before it), or does not end with the
 * blank line (missing, or bytes after it). These are the rules nats.go
 * decodes received blocks by; nats-server passes blocks on unchecked. Line
 * ends are CRLF or a bare LF; values are trimmed and decoded as UTF-8, bytes
 * that are not UTF-8 becoming U+FFFD (which mq9 refuses in its values).
 */
export function parseHeaderBlock(bytes: Uint8Array): HeaderBlock | null {
  const lines = td.decode(bytes).split(/\r?\n/);
  // "NATS/1.0\r\nA: b\r\n\r\n" splits into [version, "A: b", "", ""]: the blank line ends the
  // block, and the final "" is what follows its line end — anything else there is extra bytes.
  if (lines.length < 3 || lines[lines.length - 1] !== "" || lines[lines.length - 2] !== "") return null;
  const first = lines[0];
  if (!first.startsWith(HEADER_VERSION)) return null;
  const rest = first.slice(HEADER_VERSION.length);
  if (rest.length > 0 && rest[0] !== " " && rest[0] !== "\t") return null;
  const out: HeaderBlock = { headers: [] };
  const m = /^\s*(\d{3})(?:\s+(.*))?$/.exec(rest);
  if (m) {
    out.status = Number(m[1]);
    if (m[2] && m[2].trim()) out.description = m[2].trim();
  }
  for (const line of lines.slice(1, -2)) {
    const i = line.indexOf(":");
    const name = i < 0 ? "" : line.slice(0, i).trim();
    if (name === "") return null; // also an empty line before the end: the block ended early
    out.headers.push([name, line.slice(i + 1).trim()]);
  }
  return out;
}

/** Encodes a header block (status line, headers, blank line). Names/values must not contain CR or LF. */
export function encodeHeaderBlock(block: HeaderBlock): Uint8Array {
  let s = HEADER_VERSION;
  if (block.status !== undefined) {
    s += ` ${block.status}`;
    if (block.description) s += ` ${block.description}`;
  }
  s += "\r\n";
  for (const [k, v] of block.headers) s += `${k}: ${v}\r\n`;
  s += "\r\n";
  return te.encode(s);
}

/**
 * The header map the mq9 handler takes: names lower-cased; a name that
 * repeats has its values joined with ", " (as HTTP `Headers.get` does, so
 * both transports hand mq9 the same string).
 */
export function toMq9Headers(block: HeaderBlock | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of block?.headers ?? []) {
    const name = k.toLowerCase();
    const prev = out.get(name);
    out.set(name, prev === undefined ? v : `${prev}, ${v}`);
  }
  return out;
}
