/**
 * The answer of an admin or console route whose object call failed: 503
 * with `Retry-After: 1` and a JSON `error` naming a log reference
 * (objects/shared/platform-faults.ts logFault) — never the platform's own
 * text (docs/operations.md "Under a flood").
 */
import type { Context } from "hono";
import { logFault } from "../../objects/shared/platform-faults";

/** 503 `{"error": "the broker's objects did not answer (ref R)"}` for the failure `e` of route `where`; the details go to the log under R. */
export function objectsUnavailable(c: Context, where: string, e: unknown): Response {
  return c.json({ error: `the broker's objects did not answer, retry shortly (ref ${logFault(where, e)})` }, 503, { "Retry-After": "1" });
}
