/**
 * Encoder for what a NATS server sends: INFO, MSG, HMSG, +OK, -ERR, PING,
 * PONG. Every function returns the complete wire bytes of one operation,
 * CRLF included — except {@link msgText}, which returns a MSG with a text
 * payload as a string, so that many of them (the mq9 replies of one
 * round) are encoded together, once ({@link encodeOut}).
 */
const te = new TextEncoder();

/** The INFO fields this broker announces (nats-server names). */
export interface ServerInfo {
  server_id: string;
  server_name: string;
  version: string;
  proto: number;
  headers: boolean;
  /** Largest PUB payload / HPUB header+payload, bytes. */
  max_payload: number;
  /** This connection's id (nats.go GetClientID). */
  client_id?: number;
  /** The client's address as the broker's front door saw it (nats.go GetClientIP). */
  client_ip?: string;
  auth_required?: boolean;
  tls_required?: boolean;
  [extra: string]: unknown;
}

export const OK = te.encode("+OK\r\n");
export const PING = te.encode("PING\r\n");
export const PONG = te.encode("PONG\r\n");

/** `INFO {json}\r\n`. */
export function encodeInfo(info: ServerInfo): Uint8Array {
  return te.encode(`INFO ${JSON.stringify(info)}\r\n`);
}

/** `-ERR '<text>'\r\n`. */
export function encodeErr(text: string): Uint8Array {
  return te.encode(`-ERR '${text}'\r\n`);
}

function withBody(line: string, parts: Uint8Array[]): Uint8Array {
  const head = te.encode(line);
  let n = head.length + 2;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  out.set(head, 0);
  let o = head.length;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  out[o] = 0x0d;
  out[o + 1] = 0x0a;
  return out;
}

/** `MSG <subject> <sid> [reply] <#bytes>\r\n<payload>\r\n`. */
export function encodeMsg(subject: string, sid: string, reply: string | undefined, payload: Uint8Array): Uint8Array {
  const r = reply ? ` ${reply}` : "";
  return withBody(`MSG ${subject} ${sid}${r} ${payload.length}\r\n`, [payload]);
}

/**
 * UTF-8 length of `text` in bytes, as TextEncoder would encode it (a lone
 * surrogate becomes U+FFFD, 3 bytes).
 */
export function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 2 UTF-16 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

/**
 * `MSG <subject> <sid> [reply] <#bytes>\r\n<text>\r\n` as a string;
 * `bytes` is the UTF-8 length of `text` ({@link utf8Length}).
 */
export function msgText(subject: string, sid: string, reply: string | undefined, text: string, bytes: number): string {
  const r = reply ? ` ${reply}` : "";
  return `MSG ${subject} ${sid}${r} ${bytes}\r\n${text}\r\n`;
}

/**
 * Wire bytes of an outbox's parts in order: each run of consecutive
 * strings ({@link msgText}) encoded as one buffer, byte parts as they are.
 */
export function encodeOut(parts: readonly (Uint8Array | string)[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let text = "";
  for (const p of parts) {
    if (typeof p === "string") text += p;
    else {
      if (text) out.push(te.encode(text));
      text = "";
      out.push(p);
    }
  }
  if (text) out.push(te.encode(text));
  return out;
}

/** `HMSG <subject> <sid> [reply] <#hdr> <#total>\r\n<header><payload>\r\n`; `header` is an encoded header block. */
export function encodeHmsg(
  subject: string,
  sid: string,
  reply: string | undefined,
  header: Uint8Array,
  payload: Uint8Array,
): Uint8Array {
  const r = reply ? ` ${reply}` : "";
  return withBody(`HMSG ${subject} ${sid}${r} ${header.length} ${header.length + payload.length}\r\n`, [header, payload]);
}

export { chunkBytes, concatBytes } from "../bytes";
