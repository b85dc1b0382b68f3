/**
 * CORS for the browser-facing routes (`/mq9/*`, `/nats`; DESIGN.md §5):
 * web-hosted agents call the broker directly. Allowed origins come from
 * `CORS_ORIGINS` (comma-separated; `*` allowed); when it is empty no other
 * origin is allowed — open broker or not (a page on another origin could
 * otherwise drive an open local broker). Preflights allow the `mq9-*`
 * headers, `Authorization` and `Content-Type`; answers expose `Retry-After`
 * and `WWW-Authenticate` to page scripts. Requests from an origin that is
 * not allowed — WebSocket upgrades of `/nats` and `/v0/mortar` included,
 * which browsers do not subject to CORS — never reach a route: the request
 * guard refuses them (worker/request-guard.ts; docs/mq9.md "CORS").
 */
import { cors } from "hono/cors";
import type { MiddlewareHandler } from "hono";
import { MQ9_HEADER_NAMES } from "../wire/mq9";
import type { Env } from "../objects/env";

/** Request headers a browser may send to the broker routes. */
export const CORS_ALLOW_HEADERS = ["authorization", "content-type", ...MQ9_HEADER_NAMES];

/** Methods allowed cross-origin. */
export const CORS_ALLOW_METHODS = ["GET", "POST", "OPTIONS"];

/**
 * Response headers a page script may read (`Access-Control-Expose-Headers`):
 * `Retry-After` of a 429/503, so a browser agent can back off as documented,
 * and `WWW-Authenticate` of a 401. mq9 sends no `mq9-*` reply headers (the
 * reply is the JSON body).
 */
export const CORS_EXPOSE_HEADERS = ["Retry-After", "WWW-Authenticate"];

/** Preflight cache lifetime, seconds. */
export const CORS_MAX_AGE_S = 600;

/**
 * The `Access-Control-Allow-Origin` value for a request from `origin`, or
 * null when `CORS_ORIGINS` does not allow it (the broker's own origin is
 * allowed by the request guard, not here).
 */
export function allowedOrigin(env: Env, origin: string): string | null {
  const list = corsOrigins(env);
  if (list.includes("*")) return "*";
  return list.includes(origin) ? origin : null;
}

/**
 * hono CORS middleware configured from the environment (use on `/mq9/*` and
 * `/nats`). Requests without an `Origin` header (non-browser clients) skip it.
 */
export function brokerCors(): MiddlewareHandler<{ Bindings: Env }> {
  const handler = cors({
    origin: (origin, c) => allowedOrigin(c.env as Env, origin),
    allowHeaders: CORS_ALLOW_HEADERS,
    allowMethods: CORS_ALLOW_METHODS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: CORS_MAX_AGE_S,
  });
  return (c, next) => (c.req.header("origin") === undefined ? next() : handler(c, next));
}

/** The `CORS_ORIGINS` entries (empty when unset). */
function corsOrigins(env: Env): string[] {
  return (env.CORS_ORIGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}
