/**
 * MCP authorization discovery (MCP specification 2025-11-25, "Authorization";
 * RFC 9728 OAuth 2.0 Protected Resource Metadata; docs/mcp.md "Discovery"):
 *
 * - `GET /.well-known/oauth-protected-resource/mcp` (the path-inserted form
 *   MCP clients try first for the resource `<origin>/mcp`) and
 *   `GET /.well-known/oauth-protected-resource` (the root form) answer the
 *   metadata of the MCP endpoint: `resource` (`<origin>/mcp`),
 *   `bearer_methods_supported: ["header"]`, `resource_name`, and `authorization_servers` when the operator
 *   fronts the broker with an OAuth authorization server
 *   (`MCP_AUTHORIZATION_SERVERS`: comma-separated issuer URLs; unset = the
 *   field is left out, tokens are the broker's own).
 * - A 401 from `POST /mcp` carries `WWW-Authenticate: Bearer realm="mortarmq",
 *   resource_metadata="<origin>/.well-known/oauth-protected-resource/mcp"`.
 *
 * The documents are public and the same for everyone (no token, no object
 * request: answered by the Worker alone), readable from any web origin.
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { UNAUTHORIZED_HEADERS } from "../admin/access";

/** Path of the MCP endpoint. */
export const MCP_PATH = "/mcp";
/** Path of its protected-resource metadata (RFC 9728 §3.1, path inserted after the well-known prefix). */
export const MCP_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";
/** The root form of the well-known path. */
export const ROOT_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/** RFC 9728 §2 metadata of the MCP endpoint served at `origin`. */
export interface ProtectedResourceMetadata {
  resource: string;
  bearer_methods_supported: ["header"];
  resource_name: string;
  authorization_servers?: string[];
}

/**
 * The issuer URLs of `MCP_AUTHORIZATION_SERVERS` (comma-separated); entries
 * that are not absolute https URLs (http only on loopback) are dropped.
 */
export function authorizationServers(value: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (value ?? "").split(",")) {
    const s = raw.trim();
    if (s === "") continue;
    try {
      const u = new URL(s);
      const loopback = u.hostname === "127.0.0.1" || u.hostname === "localhost" || u.hostname === "[::1]";
      if (u.protocol === "https:" || (u.protocol === "http:" && loopback)) out.push(s);
    } catch {
      // not a URL: left out
    }
  }
  return out;
}

/** The metadata for a broker reached at `origin` (scheme://host[:port]). */
export function resourceMetadata(origin: string, env: Env): ProtectedResourceMetadata {
  const servers = authorizationServers(env.MCP_AUTHORIZATION_SERVERS);
  return {
    resource: `${origin}${MCP_PATH}`,
    bearer_methods_supported: ["header"],
    resource_name: "MortarMQ Edge mq9 (MCP)",
    ...(servers.length > 0 ? { authorization_servers: servers } : {}),
  };
}

/** The `WWW-Authenticate` value of a 401 from `/mcp` at `origin`. */
export function mcpChallenge(origin: string): string {
  return `${UNAUTHORIZED_HEADERS["WWW-Authenticate"]}, resource_metadata="${origin}${MCP_RESOURCE_METADATA_PATH}"`;
}

const PUBLIC_CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, OPTIONS",
  "Access-Control-Allow-Headers": "mcp-protocol-version",
  "Access-Control-Max-Age": "86400",
};

/** `GET` of either well-known path: the metadata as JSON, cacheable for an hour. */
export function resourceMetadataHandler(c: Context<{ Bindings: Env }>): Response {
  const origin = new URL(c.req.url).origin;
  return c.json(resourceMetadata(origin, c.env), 200, { ...PUBLIC_CORS, "Cache-Control": "public, max-age=3600" });
}

/** `OPTIONS` of either well-known path: a CORS preflight any origin passes (the document is public). */
export function resourceMetadataPreflight(c: Context<{ Bindings: Env }>): Response {
  return c.body(null, 204, { ...PUBLIC_CORS, Allow: "GET, HEAD, OPTIONS" });
}
