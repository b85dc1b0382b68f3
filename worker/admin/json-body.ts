/** JSON request bodies of the admin routes, validated with zod (wire/admin/). */
import type { Context } from "hono";
import type { z } from "zod";
import { firstIssue } from "../../wire/admin/tenants";

/**
 * The request body parsed with `schema`, or the 400 error text (`body must
 * be a JSON object`, or the first problem as `field: message`).
 * `optional`: an empty body counts as `{}`.
 */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S, optional = false): Promise<{ value: z.infer<S> } | { error: string }> {
  const text = await c.req.text();
  let json: unknown;
  if (text.trim() === "" && optional) json = {};
  else {
    try {
      json = JSON.parse(text);
    } catch {
      return { error: "body must be a JSON object" };
    }
  }
  const r = schema.safeParse(json);
  return r.success ? { value: r.data } : { error: firstIssue(r.error) };
}
