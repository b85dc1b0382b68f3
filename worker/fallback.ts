/**
 * What the HTTP surface answers when no route served a request (worker/app.ts
 * `notFound`), in the JSON shape of every other route: a path that is a
 * route for other methods is `405` with `Allow` (RFC 9110 §15.5.6), any other
 * path `404`. The allowed methods are read from the app's own route table,
 * so they never drift from the routes.
 */
import type { Context } from "hono";

/** One route of the table (hono's `app.routes`). */
export interface RouteEntry {
  method: string;
  path: string;
}

/** The order methods are listed in `Allow`. */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** Longest path echoed in an error, characters. */
const MAX_ECHO_CHARS = 200;

/** A hono route path (`/v0/topics/:topic`, `/mq9/*`) as a RegExp over request paths. */
function pathPattern(path: string): RegExp {
  const re = path.split("/").map((seg) => {
    if (seg === "*") return ".*";
    if (seg.startsWith(":")) return "[^/]+";
    return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("/");
  return new RegExp(`^${re}$`);
}

/**
 * The methods the routes in `routes` serve on request path `path`, in
 * METHOD_ORDER (HEAD with GET: hono answers HEAD with the GET route).
 * Middleware and catch-alls (method `ALL`) do not count.
 */
export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const methods = new Set<string>();
  for (const r of routes) {
    if (r.method === "ALL" || !pathPattern(r.path).test(path)) continue;
    methods.add(r.method);
    if (r.method === "GET") methods.add("HEAD");
  }
  return METHOD_ORDER.filter((m) => methods.has(m));
}

/** The `notFound` handler over the route table `routes`: JSON 405 with Allow, or JSON 404. */
export function fallbackHandler(routes: () => readonly RouteEntry[]) {
  return (c: Context): Response => {
    const path = new URL(c.req.url).pathname;
    const echo = path.length > MAX_ECHO_CHARS ? `${path.slice(0, MAX_ECHO_CHARS)}…` : path;
    const allow = allowedMethods(routes(), path);
    if (allow.length > 0) {
      return c.json({ error: `method ${c.req.method} is not allowed on ${echo} (allowed: ${allow.join(", ")})` }, 405, { Allow: allow.join(", ") });
    }
    return c.json({ error: `no route ${echo}` }, 404);
  };
}
