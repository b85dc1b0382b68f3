/**
 * The INFO a NATS server sends when a client connects (nats-server's
 * `Info`; docs/nats.md "INFO"): the fields clients read — nats.go's
 * GetClientID()/GetClientIP() fail without `client_id` / `client_ip`.
 * Pure: the session passes in what it knows about the connection.
 */
import { DEFAULT_MAX_PAYLOAD } from "./errors";
import type { ServerInfo } from "./encoder";

/** `server_name` of every connection. */
export const SERVER_NAME = "mortarmq-edge";

/** What the session knows when the connection opens. */
export interface InfoInput {
  /** The connection's object id (`server_id`: each connection is its own object). */
  serverId: string;
  /** Broker version (`version`). */
  version: string;
  /** A CONNECT with a token is still required (tokens configured, the upgrade carried none). */
  authRequired: boolean;
  /** `client_id`: see {@link newClientId}. */
  clientId: number;
  /** `client_ip`, when known: see {@link clientAddress}. */
  clientIp?: string;
}

/**
 * INFO for a new connection. `tls_required` is false: TLS, where there is
 * any, is the WebSocket's (`wss://`); the NATS-level TLS upgrade is never
 * offered, so a client through the plaintext TCP bridge must not attempt
 * it. No `nonce` (it is for nkey/JWT challenges; tokens need none), no
 * `host`/`port` (clients reach the broker through different front doors —
 * WebSocket, bridge — so no single address is the one to report).
 */
export function serverInfo(input: InfoInput): ServerInfo {
  const info: ServerInfo = {
    server_id: input.serverId,
    server_name: SERVER_NAME,
    version: input.version,
    proto: 1,
    headers: true,
    max_payload: DEFAULT_MAX_PAYLOAD,
    client_id: input.clientId,
    tls_required: false,
  };
  if (input.clientIp !== undefined) info.client_ip = input.clientIp;
  if (input.authRequired) info.auth_required = true;
  return info;
}

/**
 * A `client_id` for a new connection: a random whole number from 1 to
 * 2^53 − 1. nats-server counts connections; here every connection is its
 * own object and there is no counter to share, so the id is random (a
 * collision among 10^6 open connections has odds below 10^-4); 53 bits so
 * JavaScript clients read it exactly; never 0 (nats.go treats 0 as "not
 * supported"). `fill` defaults to `crypto.getRandomValues`.
 */
export function newClientId(fill: (bytes: Uint8Array) => void = (b) => crypto.getRandomValues(b)): number {
  const b = new Uint8Array(7);
  fill(b);
  let n = b[0] & 0x1f; // 5 + 48 = 53 bits
  for (let i = 1; i < 7; i++) n = n * 256 + b[i];
  return n === 0 ? 1 : n;
}

/**
 * The client's address from the WebSocket upgrade's headers: the first
 * address of `X-Forwarded-For` (the `mortarmq` TCP bridge puts the TCP
 * client's address there; proxies append theirs after it), else
 * `CF-Connecting-IP` (what Cloudflare, and the local runtime, saw).
 * IPv4-mapped IPv6 (`::ffff:1.2.3.4`) is given as IPv4; anything that is
 * not an IP address is ignored. Else `listenerPeer`: the address every
 * client of the listener has (a loopback-only socket that passes no client
 * address; Env.LOCAL_CLIENT_ADDRESS). Undefined when none of them has one.
 * The value is reported back to that same client only, never trusted.
 */
export function clientAddress(headers: { get(name: string): string | null }, listenerPeer?: string): string | undefined {
  for (const value of [headers.get("x-forwarded-for")?.split(",")[0], headers.get("cf-connecting-ip"), listenerPeer]) {
    const ip = normalizeIp(value?.trim() ?? "");
    if (ip !== undefined) return ip;
  }
  return undefined;
}

/** `value` as an IP address, or undefined when it is not one. */
function normalizeIp(value: string): string | undefined {
  const v4 = /^(?:::ffff:)?((?:\d{1,3}\.){3}\d{1,3})$/i.exec(value);
  if (v4) return v4[1].split(".").every((o) => Number(o) <= 255) ? v4[1] : undefined;
  const v6 = value.replace(/^\[(.*)\]$/, "$1");
  return /^[0-9a-f:]+$/i.test(v6) && v6.includes(":") && v6.length <= 39 ? v6.toLowerCase() : undefined;
}
