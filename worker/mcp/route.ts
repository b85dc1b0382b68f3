/**
 * `POST /mcp`: the Model Context Protocol over Streamable HTTP (DESIGN.md
 * §8 "MCP"; docs/mcp.md), stateless — every POST gets a fresh server and
 * transport (no session id, JSON responses, no server-initiated stream), so
 * any isolate can answer any request. Authenticated like every other route
 * (`Authorization: Bearer`, objects/tenants/auth.ts): the token's tenant is
 * the tenant every tool call acts for; a missing or refused token is 401
 * before any MCP message is read. Tool calls go through the mq9 service
 * (objects/mq9/dispatch.ts) with the tenant's quotas, and are counted as mq9
 * requests with `transport="mcp"`.
 */
import type { Context } from "hono";
import { authenticateToken, bearerToken } from "../../objects/tenants/auth";
import type { Env } from "../../objects/env";
import { handleMq9Request } from "../../objects/mq9/dispatch";
import { replyJson } from "../../objects/mq9/reply";
import { mq9RequestSeries } from "../../objects/mq9/request-metrics";
import { series } from "../../objects/usage/catalog";
import { isolateMeter, WORKER_REQUESTS } from "../telemetry";
import { httpQuota } from "../quota";
import { metered, waitUntilOf } from "../mq9/http";
import { tokenRefusal } from "../admin/access";
import { mcpChallenge } from "./discovery";
import { answerDiscardingRest, readLimitedBody } from "../body-limit";

const BYTES_IN = series("mortarmq_bytes_received_total", { protocol: "http" });
const BYTES_OUT = series("mortarmq_bytes_sent_total", { protocol: "http" });

/** JSON-RPC error code for a refused token (the SDK's "server error" range). */
const UNAUTHORIZED_CODE = -32001;

/**
 * Largest request body, bytes: the SDK transport's own default (4 MiB). The
 * body is read here, not by the SDK, so that one over the limit is answered
 * 413 while its rest is drained (worker/body-limit.ts): the SDK stops
 * reading and leaves the rest unread, and workerd then resets the client's
 * keep-alive connection, losing its next request.
 */
export const MCP_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** JSON-RPC "Invalid Request" (an empty batch, JSON-RPC 2.0 §6). */
const INVALID_REQUEST_CODE = -32600;

/** A JSON-RPC error answer without an id (the request was not read). */
function rpcError(c: Context, status: 400 | 401 | 405 | 503, code: number, message: string, headers: Record<string, string> = {}): Response {
  return c.json({ jsonrpc: "2.0", error: { code, message }, id: null }, status, headers);
}

/** True when `bytes` is a JSON empty array (`[]`, any whitespace): a batch of nothing. */
function isEmptyBatch(bytes: Uint8Array): boolean {
  if (bytes.byteLength > 64) return false;
  return /^\s*\[\s*\]\s*$/.test(new TextDecoder().decode(bytes));
}

/** Handler for `POST /mcp`. */
export async function mcpHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const auth = await authenticateToken(c.env, bearerToken(c.req.header("authorization")));
  if (!auth.ok) {
    const r = tokenRefusal(auth);
    // A 401 names the resource metadata (RFC 9728 §5.1), where MCP clients start their authorization discovery.
    const headers = r.status === 401 ? { ...r.headers, "WWW-Authenticate": mcpChallenge(new URL(c.req.url).origin) } : r.headers;
    return rpcError(c, r.status, UNAUTHORIZED_CODE, r.error, headers);
  }
  const tenant = auth.tenant;
  isolateMeter.add(tenant, WORKER_REQUESTS);
  const waitUntil = waitUntilOf(c);
  const body = await readLimitedBody(c.req.raw, MCP_MAX_BODY_BYTES);
  if (!body.ok) {
    const [status, message] = body.encoding
      ? [body.encoding.status, body.encoding.error]
      : [413, `Payload Too Large: Request body must not exceed ${MCP_MAX_BODY_BYTES} bytes`];
    const answer = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
    return answerDiscardingRest(answer, { status, headers: { "Content-Type": "application/json" } }, body.rest, waitUntil);
  }
  // JSON-RPC 2.0 §6: an empty batch is answered with one Invalid Request error (the SDK would answer 202, no body).
  if (isEmptyBatch(body.bytes)) return rpcError(c, 400, INVALID_REQUEST_CODE, "Invalid Request: the batch is empty");
  const { buildMcpServer } = await import("./server"); // the SDK is evaluated only by isolates that serve /mcp
  const { WebStandardStreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
  const quota = httpQuota(c.env, tenant, auth.state);
  const permit = metered(auth);
  const clientGone = c.req.raw.signal;
  const server = buildMcpServer(async (req, signal) => {
    const reply = await handleMq9Request(c.env, tenant, req, { signal: AbortSignal.any([signal, clientGone]), waitUntil, quota, permit });
    isolateMeter.add(tenant, mq9RequestSeries(req.subject, reply, "mcp"));
    return replyJson(reply);
  }, { origin: new URL(c.req.url).origin });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  // The body read (and decoded) above, handed to the SDK as a request of its own (it checks Accept and
  // Content-Type, then parses); without Content-Encoding / Content-Length, which described the body as sent.
  const raw = c.req.raw;
  const headers = new Headers(raw.headers);
  headers.delete("content-encoding");
  headers.delete("content-length");
  const res = await transport.handleRequest(new Request(raw.url, { method: raw.method, headers, body: body.bytes as Uint8Array<ArrayBuffer>, signal: raw.signal }));
  const answer = await res.arrayBuffer(); // JSON mode: the answer is complete here
  await server.close();
  isolateMeter.add(tenant, BYTES_IN, body.bytes.byteLength);
  isolateMeter.add(tenant, BYTES_OUT, answer.byteLength);
  isolateMeter.maybeFlush(c.env, waitUntil);
  return new Response(res.status === 202 || answer.byteLength === 0 ? null : answer, { status: res.status, headers: res.headers });
}

/** `GET` / `DELETE /mcp`: no server-initiated stream and no sessions (stateless) — 405, as the transport spec allows. */
export function mcpMethodNotAllowed(c: Context<{ Bindings: Env }>): Response {
  return rpcError(c, 405, -32000, "Method not allowed: this MCP endpoint is stateless; send JSON-RPC messages with POST /mcp", { Allow: "POST" });
}
