/**
 * The CLI's mq9 requests go through the typed mq9 client (client/mq9/)
 * over its `http` transport (`POST /mq9/<subject>`, docs/mq9.md). This
 * module opens the client for the global options and turns its errors into
 * CliErrors: named after the HTTP status, with the broker's `error` string
 * and what to do; BROKER_UNREACHABLE and TIMEOUT when nothing answered.
 */
import type { Mq9Client, Mq9ClientError, Mq9WireMessage } from "@mortarmq/mq9";
import type { GlobalOptions } from "./context";
import { CliError, unreachable } from "./errors";
import { HTTP_TIMEOUT_MS, httpBase } from "./http";

/** A JSON reply of the broker (`error` is "" on success), as `--json` prints it. */
export type Mq9Reply = Record<string, unknown> & { error: string };

/** Error names by HTTP status, for mq9 failures. */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE", 429: "OVERLOADED", 500: "INTERNAL_ERROR", 503: "UNAVAILABLE",
};

/** What to do about an mq9 error, from its status and text. */
export function mq9Hint(status: number, error: string): string {
  if (/^mailbox .* does not exist$/.test(error)) return "create it with mortarmq mq9 create <address> (or it expired: mailboxes live for their TTL)";
  if (/already exists/.test(error)) return "pick another name, or use the existing mailbox";
  if (error === "message not found") return "list the mailbox's messages with mortarmq mq9 query <address>";
  if (/has not fetched from mailbox/.test(error)) return "fetch with the same --group first; ACK applies to what the group fetched";
  if (/is not registered/.test(error)) return "register the agent first with mortarmq mq9 register";
  if (/^permission denied: /.test(error)) return "the token's scopes do not allow this (docs/tenants.md \"Permissions\"): ask the operator for a token with the scope the message names (mortarmq admin tokens scopes)";
  switch (status) {
    case 400: return "fix the request (docs/mq9.md lists the rules)";
    case 401: return "pass a valid token with --token or MORTARMQ_TOKEN";
    case 413: return "payloads are at most 1 MiB (1048576 bytes)";
    case 429: case 503: return "retry after a short backoff";
    default: return status >= 500 ? "retry; if it persists, check the broker's logs" : "";
  }
}

/** The short cause of a failed fetch (`ECONNREFUSED`, …). */
function causeOf(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? "";
}

/** True for the mq9 client's errors (checked by name: the client module is loaded lazily). */
function isMq9ClientError(e: unknown): e is Mq9ClientError {
  return e instanceof Error && e.name === "Mq9ClientError" && "source" in e;
}

/** The CliError for a client error (other errors unchanged). `base` is the broker's http(s) origin. */
export function mq9CliError(e: unknown, base: string): unknown {
  if (!isMq9ClientError(e)) return e;
  switch (e.source) {
    case "broker": {
      const status = e.status ?? 0;
      return new CliError(STATUS_NAMES[status] ?? `HTTP_${status}`, e.message, mq9Hint(status, e.message), e.status);
    }
    case "connection":
      return unreachable(base, causeOf(e.cause));
    case "timeout":
      return new CliError("TIMEOUT", `no answer from ${base}/mq9/${encodeURIComponent(e.subject ?? "")} within ${e.timeoutMs} ms`, "check that the broker is healthy (GET /healthz)");
    case "client":
      return new CliError("BAD_REQUEST", e.message, mq9Hint(400, e.message));
  }
}

/**
 * Runs `fn` with an mq9 client for the broker named by `g` (http
 * transport, bearer token), closes it, and turns its errors into CliErrors.
 * @throws CliError USAGE for a URL that is not http(s)/ws(s); the CliError of any mq9 failure
 */
export async function withMq9<T>(g: GlobalOptions, fn: (mq: Mq9Client) => Promise<T>): Promise<T> {
  const base = httpBase(g.url);
  const { Mq9Client: Client } = await import("@mortarmq/mq9"); // loaded by the commands that use it (docs/cli.md "Startup")
  const mq = await Client.connect(base, { transport: "http", token: g.token, timeoutMs: HTTP_TIMEOUT_MS });
  try {
    return await fn(mq);
  } catch (e) {
    throw mq9CliError(e, base);
  } finally {
    await mq.close();
  }
}

/** The `--json` form of a FETCH/QUERY result: the broker's reply. */
export function messagesReply(messages: readonly { toJSON(): Mq9WireMessage }[]): Mq9Reply & { messages: Mq9WireMessage[] } {
  return { error: "", messages: messages.map((m) => m.toJSON()) };
}
