/** JSON request bodies of the admin and console routes, validated with zod (wire/admin/). */
import type { Context } from "hono";
import type { z } from "zod";
import { firstIssue } from "../../wire/admin/tenants";
import { answerDiscardingRest, readLimitedBody } from "../body-limit";
import { waitUntilOf } from "../mq9/http";

/**
 * Largest JSON body an admin or console route reads, bytes (1 MiB). The
 * biggest legitimate one, a console test publish (a 65,536-character value
 * and a 255-byte key), is under 400 KiB even with every character escaped.
 */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * Deepest nesting of arrays and objects a body may have (every admin and
 * console body is at most 3 deep). A 1 MiB body can nest ~500,000 deep: the
 * checks that walk it recursively overflowed the stack (a 503 naming an
 * internal error) and spent time quadratic in the depth.
 */
export const MAX_JSON_DEPTH = 32;

/** A refused body: the error text and its status; `rest` = what is left unread of a body over the limit. */
export interface BodyError {
  error: string;
  status: 400 | 413 | 415;
  rest: ReadableStreamDefaultReader<Uint8Array> | null;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** A lone surrogate (in `u` mode a well-formed pair is one code point, not matched). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The request body parsed with `schema`, or why it was refused:
 * 413 `body is over 1048576 bytes` (read no further than the limit),
 * 400 `body is not valid UTF-8` (bytes are never replaced by U+FFFD: a name
 * would silently become another), `body must be a JSON object`,
 * `body is nested deeper than 32 levels` (MAX_JSON_DEPTH),
 * `<field>: must be valid Unicode …` (a `\ud800` escape: a lone surrogate,
 * which has no UTF-8 form), or zod's first problem as `field: message`.
 * `optional`: an empty body counts as `{}`.
 */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S, optional = false): Promise<{ value: z.infer<S> } | BodyError> {
  const raw = await readLimitedBody(c.req.raw, MAX_JSON_BODY_BYTES);
  if (!raw.ok) return raw.encoding ? { ...raw.encoding, rest: raw.rest } : { error: `body is over ${MAX_JSON_BODY_BYTES} bytes`, status: 413, rest: raw.rest };
  let text: string;
  try {
    text = strictUtf8.decode(raw.bytes);
  } catch {
    return { error: "body is not valid UTF-8", status: 400, rest: null };
  }
  let json: unknown;
  if (text.trim() === "" && optional) json = {};
  else {
    try {
      json = JSON.parse(text);
    } catch {
      return { error: "body must be a JSON object", status: 400, rest: null };
    }
  }
  if (nestedDeeperThan(json, MAX_JSON_DEPTH)) return { error: `body is nested deeper than ${MAX_JSON_DEPTH} levels`, status: 400, rest: null };
  const lone = loneSurrogateAt(json, []);
  if (lone !== null) return { error: `${lone}must be valid Unicode (a lone surrogate has no UTF-8 form)`, status: 400, rest: null };
  const r = schema.safeParse(json);
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  return r.success ? { value: r.data } : { error: firstIssue(r.error, shape ? Object.keys(shape) : undefined), status: 400, rest: null };
}

/** The answer to a refused body: `{"error"}` with its status (the unread rest of a body over the limit is drained after it). */
export function bodyError(c: Context, e: BodyError): Response {
  const body = new TextEncoder().encode(JSON.stringify({ error: e.error }));
  return answerDiscardingRest(body, { status: e.status, headers: { "Content-Type": "application/json" } }, e.rest, waitUntilOf(c));
}

/** True when `v` nests arrays/objects more than `max` levels deep (iterative: no stack to overflow). */
function nestedDeeperThan(v: unknown, max: number): boolean {
  const todo: [unknown, number][] = [[v, 0]];
  for (let item = todo.pop(); item !== undefined; item = todo.pop()) {
    const [x, depth] = item;
    if (x === null || typeof x !== "object") continue;
    if (depth >= max) return true;
    for (const y of Array.isArray(x) ? x : Object.values(x)) if (y !== null && typeof y === "object") todo.push([y, depth + 1]);
  }
  return false;
}

/** `"path: "` of the first string (key or value) in `v` with a lone surrogate, `""` at the top, null when none. */
function loneSurrogateAt(v: unknown, path: string[]): string | null {
  const at = () => (path.length ? `${path.join(".")}: ` : "");
  if (typeof v === "string") return LONE_SURROGATE.test(v) ? at() : null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = loneSurrogateAt(v[i], [...path, String(i)]);
      if (r !== null) return r;
    }
    return null;
  }
  if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (LONE_SURROGATE.test(k)) return at();
      const r = loneSurrogateAt(x, [...path, k]);
      if (r !== null) return r;
    }
  }
  return null;
}
