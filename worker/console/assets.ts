/**
 * `GET /console` and `GET /console/assets/<file>` (docs/console.md): the
 * console's page and its bundled files, read from the `ASSETS` binding
 * (wrangler.toml `[assets]`, built into dist/console/ by
 * client/scripts/build-console.ts), with a strict Content-Security-Policy:
 * scripts, styles and connections only from this origin, no inline
 * script or style element, no frames, no plugins.
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";

/** The policy of every console response. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": CONSOLE_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** Bundled file names: `app-<hash>.js` / `.css` (content-hashed, so cacheable for good). */
const ASSET_RE = /^[A-Za-z0-9_-]+\.(js|css)$/;

/** Handler for `GET /console` (and `/console/`): the page, never cached (it names the current bundle). */
export async function consolePage(c: Context<{ Bindings: Env }>): Promise<Response> {
  return serve(c, "index.html", "no-cache");
}

/** Handler for `GET /console/assets/:file`. */
export async function consoleAsset(c: Context<{ Bindings: Env }>): Promise<Response> {
  const file = c.req.param("file") ?? "";
  if (!ASSET_RE.test(file)) return c.text("not found", 404, SECURITY_HEADERS);
  return serve(c, file, "public, max-age=31536000, immutable");
}

async function serve(c: Context<{ Bindings: Env }>, file: string, cache: string): Promise<Response> {
  const assets = c.env.ASSETS;
  if (!assets) return c.text("the console is not built: run `node --import tsx client/scripts/build-console.ts`", 503, SECURITY_HEADERS);
  const r = await assets.fetch(new URL(`/${file}`, c.req.url));
  if (r.status !== 200) return c.text(file === "index.html" ? "the console is not built" : "not found", r.status === 404 ? 404 : 503, SECURITY_HEADERS);
  const headers = new Headers(r.headers);
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) headers.set(k, v);
  headers.set("Cache-Control", cache);
  return new Response(r.body, { status: 200, headers });
}
