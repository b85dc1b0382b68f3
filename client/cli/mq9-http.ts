/**
 * mq9 requests from the CLI over HTTP (`POST /mq9/<subject>`, docs/mq9.md):
 * the subject builders, and one request function that returns the JSON reply
 * or throws a CliError named after the HTTP status, carrying the broker's
 * `error` string and what to do.
 */
import type { Mq9Message } from "../../wire/mq9";
import type { GlobalOptions } from "./context";
import { CliError } from "./errors";
import { brokerRequest } from "./http";

/** The spec's subjects (mq9 spec, 协议总览). */
export const mq9Subject = {
  create: () => "$mq9.AI.MAILBOX.CREATE",
  send: (addr: string) => `$mq9.AI.MSG.SEND.${addr}`,
  fetch: (addr: string) => `$mq9.AI.MSG.FETCH.${addr}`,
  ack: (addr: string) => `$mq9.AI.MSG.ACK.${addr}`,
  query: (addr: string) => `$mq9.AI.MSG.QUERY.${addr}`,
  delete: (addr: string, msgId: number) => `$mq9.AI.MSG.DELETE.${addr}.${msgId}`,
  agent: (verb: "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER") => `$mq9.AI.AGENT.${verb}`,
} as const;

/** A JSON reply of the broker (`error` is "" on success). */
export type Mq9Reply = Record<string, unknown> & { error: string };

/** Error names by HTTP status, for mq9 failures. */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "BAD_REQUEST", 401: "UNAUTHORIZED", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE", 429: "OVERLOADED", 500: "INTERNAL_ERROR", 503: "UNAVAILABLE",
};

/** What to do about an mq9 error, from its status and text. */
export function mq9Hint(status: number, error: string): string {
  if (/^mailbox .* does not exist$/.test(error)) return "create it with mortarmq mq9 create <address> (or it expired: mailboxes live for their TTL)";
  if (/already exists/.test(error)) return "pick another name, or use the existing mailbox";
  if (error === "message not found") return "list the mailbox's messages with mortarmq mq9 query <address>";
  if (/has not fetched from mailbox/.test(error)) return "fetch with the same --group first; ACK applies to what the group fetched";
  if (/is not registered/.test(error)) return "register the agent first with mortarmq mq9 register";
  switch (status) {
    case 400: return "fix the request (docs/mq9.md lists the rules)";
    case 401: return "pass a valid token with --token or MORTARMQ_TOKEN";
    case 413: return "payloads are at most 1 MiB (1048576 bytes)";
    case 429: case 503: return "retry after a short backoff";
    default: return status >= 500 ? "retry; if it persists, check the broker's logs" : "";
  }
}

/** Options for one mq9 request. */
export interface Mq9RequestOptions {
  /** `mq9-*` headers (name → value); undefined values are left out. */
  headers?: Record<string, string | undefined>;
  /** Extra time on top of the default HTTP timeout, ms (long-poll FETCH). */
  extraTimeoutMs?: number;
}

/**
 * Sends `payload` (bytes, or an object sent as JSON) to `subject` and
 * returns the reply.
 * @throws CliError named after the status (NOT_FOUND, CONFLICT, …) when `error` is not empty; BROKER_UNREACHABLE
 */
export async function mq9Request(g: GlobalOptions, subject: string, payload: Uint8Array | object, o: Mq9RequestOptions = {}): Promise<Mq9Reply> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = v;
  const body = payload instanceof Uint8Array ? payload : JSON.stringify(payload);
  if (!(payload instanceof Uint8Array)) headers["content-type"] = "application/json";
  const a = await brokerRequest(g, `/mq9/${encodeURIComponent(subject)}`, {
    method: "POST", body, headers, timeoutMs: 30_000 + (o.extraTimeoutMs ?? 0),
  });
  const reply = a.json as Partial<Mq9Reply> | undefined;
  const error = typeof reply?.error === "string" ? reply.error : a.status === 200 ? "" : `HTTP ${a.status}: ${a.text.slice(0, 200)}`;
  if (a.status !== 200 || error !== "") {
    throw new CliError(STATUS_NAMES[a.status] ?? `HTTP_${a.status}`, error || `HTTP ${a.status}`, mq9Hint(a.status, error), a.status);
  }
  return reply as Mq9Reply;
}

/** The `messages` of a FETCH/QUERY reply (an empty list when absent). */
export function replyMessages(reply: Mq9Reply): Mq9Message[] {
  return Array.isArray(reply.messages) ? (reply.messages as Mq9Message[]) : [];
}
