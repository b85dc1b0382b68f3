/**
 * Encoder for what a NATS server sends: INFO, MSG, HMSG, +OK, -ERR, PING,
 * PONG. Every function returns the complete wire bytes of one operation,
 * CRLF included.
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
