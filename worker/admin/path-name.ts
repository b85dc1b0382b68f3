/**
 * Names in the request path of the topic and group routes (docs/groups.md
 * "Routes", docs/console.md "APIs"): `/v0/topics/:topic/…/groups/:group`,
 * URL-encoded UTF-8 of 1–255 bytes, as on the wire.
 */
import type { Context } from "hono";

const te = new TextEncoder();

/**
 * The `index`-th segment of the request's path (`/v0/topics/:topic` → 3,
 * `…/groups/:group` → 5) decoded strictly: a segment that is not valid
 * percent-encoding of UTF-8 (`%FF`, `%E2%82`, a lone `%`) is refused rather
 * than taken literally — the router's lenient decoding would make `%FF`
 * name the topic literally called `%FF` (spelled `%25FF`). Then 1..`max`
 * bytes. Returns the name or the 400 error text.
 */
export function pathName(c: Context, index: number, what: "topic" | "group", max: number): { name: string } | { error: string } {
  const raw = new URL(c.req.url).pathname.split("/")[index] ?? "";
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    return { error: `${what} in the path is not valid percent-encoding of UTF-8` };
  }
  const n = te.encode(name).length;
  return n >= 1 && n <= max ? { name } : { error: `${what} name must be 1-${max} bytes of UTF-8 (URL-encoded in the path)` };
}
