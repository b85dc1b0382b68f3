/**
 * The one check every request passes before any route (worker/app.ts):
 * which `Host` the broker answers to and which browser `Origin` may drive it
 * (docs/operations.md "Host and Origin checks"). A broker that runs open on
 * a developer's machine must not be drivable by any web page: a page on
 * another origin could otherwise create topics, tenants and mailboxes with
 * "simple" cross-origin POSTs (no preflight), and a DNS-rebinding page
 * (`Host: rebind.evil.example`, resolving to 127.0.0.1) could read every
 * answer and call every MCP tool. The MCP transport specification requires
 * this Origin check on `/mcp` for exactly that reason.
 *
 * - `Host`: when `ALLOWED_HOSTS` is set, the request's host name (port
 *   ignored) must match one of its entries (exact, `*.suffix` for
 *   subdomains, `*` for any) — else 403. `mortarmq dev` always sets it
 *   (client/local/allowed-hosts.ts); unset on a deployment, where
 *   Cloudflare routes to the Worker only the host names of its own routes.
 * - `Origin`: a request that carries one (browsers send it on every
 *   cross-origin request, on every POST and on WebSocket handshakes) must
 *   come from the broker's own origin (the console) or one listed in
 *   `CORS_ORIGINS` (`*` = any) — else 403, before any route reads the body
 *   or opens a session. Requests without `Origin` (curl, the CLI, SDKs,
 *   nats.go, the TCP bridges) are not browsers' cross-origin requests and
 *   pass; their token is checked by the route as always. Reads of public
 *   metadata under `/.well-known/` are not checked by Origin.
 *
 * Refusals: `{"error"}` JSON; a JSON-RPC error without id on `/mcp`;
 * text/plain on a WebSocket upgrade (no script reads it).
 */
import type { MiddlewareHandler } from "hono";
import { echo } from "../wire/mq9";
import { hostMatches } from "../wire/mq9/push-url";
import type { Env } from "../objects/env";
import { allowedOrigin } from "./cors";

/** The `ALLOWED_HOSTS` entries, lower case; null when unset or empty (no Host check). */
export function allowedHosts(env: Env): string[] | null {
  const list = (env.ALLOWED_HOSTS ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  return list.length === 0 ? null : list;
}

/** True when URL host name `hostname` (lower case, IPv6 in brackets) matches an entry of `list`. */
export function hostAllowed(list: readonly string[], hostname: string): boolean {
  return list.some((p) => p === "*" || hostMatches(hostname, p));
}

/**
 * Why `req` is refused, or null to go on: the Host check, then the Origin
 * check (see the module comment). `status` is always 403.
 */
export function guardRefusal(env: Env, req: Request): { status: 403; error: string } | null {
  const url = new URL(req.url);
  const hosts = allowedHosts(env);
  if (hosts !== null && !hostAllowed(hosts, url.hostname)) {
    return { status: 403, error: `host ${JSON.stringify(echo(url.hostname))} is not allowed: it is not in ALLOWED_HOSTS (protection against DNS rebinding)` };
  }
  const origin = req.headers.get("origin");
  if (origin !== null && origin !== url.origin && allowedOrigin(env, origin) === null && !isPublicRead(req.method, url.pathname)) {
    const what = isUpgrade(req) ? "WebSocket upgrade" : "cross-origin request";
    return { status: 403, error: `${what} from origin ${JSON.stringify(echo(origin))} refused: it is not in CORS_ORIGINS` };
  }
  return null;
}

/**
 * True for a read of public metadata under `/.well-known/` (GET, HEAD, or
 * its preflight): documents any page may read (e.g. the MCP endpoint's
 * RFC 9728 resource metadata, served with CORS `*`), which change nothing.
 */
function isPublicRead(method: string, path: string): boolean {
  return path.startsWith("/.well-known/") && (method === "GET" || method === "HEAD" || method === "OPTIONS");
}

/** True for a WebSocket handshake. */
function isUpgrade(req: Request): boolean {
  return req.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/** JSON-RPC code of a refused request on `/mcp` (the transport's "server error" range, as the SDK's own Host/Origin check). */
const MCP_REFUSED_CODE = -32000;

/** hono middleware applying `guardRefusal` to every request (worker/app.ts registers it first). */
export function requestGuard(): MiddlewareHandler<{ Bindings: Env }> {
  return async (c, next) => {
    const refused = guardRefusal(c.env, c.req.raw);
    if (refused === null) {
      await next();
      return;
    }
    if (isUpgrade(c.req.raw)) return c.text(refused.error, refused.status);
    if (c.req.path === "/mcp") return c.json({ jsonrpc: "2.0", error: { code: MCP_REFUSED_CODE, message: refused.error }, id: null }, refused.status);
    return c.json({ error: refused.error }, refused.status);
  };
}
