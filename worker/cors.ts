/**
 * CORS for the browser-facing routes (`/mq9/*`, `/nats`; DESIGN.md §5):
 * web-hosted agents call the broker directly. Allowed origins come from
 * `CORS_ORIGINS` (comma-separated; `*` allowed); when it is empty the
 * broker allows every origin (`*`) while it runs open and none once tokens
 * are configured. Preflights allow the `mq9-*` headers, `Authorization`
 * and `Content-Type`; responses expose `Retry-After`.
 */
import { cors } from "hono/cors";
import type { MiddlewareHandler } from "hono";
import { MQ9_HEADER_NAMES } from "../wire/mq9";
import { isOpen } from "../objects/tenants/auth";
import type { Env } from "../objects/env";

/** Request headers a browser may send to the broker routes. */
export const CORS_ALLOW_HEADERS = ["authorization", "content-type", ...MQ9_HEADER_NAMES];

/** Methods allowed cross-origin. */
export const CORS_ALLOW_METHODS = ["GET", "POST", "OPTIONS"];

/** Response headers a page may read: `Retry-After` of quota refusals (the mq9 client waits for it). */
export const CORS_EXPOSE_HEADERS = ["Retry-After"];

/** Preflight cache lifetime, seconds. */
export const CORS_MAX_AGE_S = 600;

/**
 * The `Access-Control-Allow-Origin` value for a request from `origin`, or
 * null when that origin is not allowed.
 */
export function allowedOrigin(env: Env, origin: string): string | null {
  const list = (env.CORS_ORIGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) return isOpen(env) ? "*" : null;
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
