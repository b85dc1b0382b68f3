/**
 * `GET /healthz`: 200 `{status: "ok", version, auth, storage: "ok"}` when
 * the Worker answers and a probe of the storage layer (a SQLite read in the
 * usage index Durable Object) answers within 3 s; otherwise 503
 * `{status: "unavailable", version, auth, reason}`. `auth` is the auth
 * mode: "open" (no AUTH_TOKENS and no ADMIN_TOKEN: every client is tenant
 * `default`) or "tokens" (static or issued tokens required); it is no
 * secret (`mortarmq dev` prints it).
 *
 * The probe is one global object, so it is not made per request (DESIGN.md
 * §10: no global object on a per-request path): an isolate whose probe
 * succeeded answers from that result for HEALTH_CACHE_MS; a failed probe is
 * not remembered (the next request probes again).
 */
import type { Context } from "hono";
import type { Env } from "../../objects/env";
import { isOpen } from "../../objects/tenants/auth";
import { VERSION } from "../../wire/version";
import { withDeadline } from "../../objects/session/faults";
import { usageIndexStub } from "../../objects/usage/stub";
import { logFault } from "../../objects/shared/platform-faults";

/** How long the storage probe may take, ms. */
export const HEALTH_PROBE_MS = 3_000;

/** How long an isolate answers from its last successful probe, ms. */
export const HEALTH_CACHE_MS = 5_000;

/** When each environment's (isolate's) last probe succeeded, unix ms. */
const lastGoodProbe = new WeakMap<Env, number>();

/** Handler for `GET /healthz`. */
export async function healthHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const base = { version: VERSION, auth: isOpen(c.env) ? "open" : "tokens" };
  const good = lastGoodProbe.get(c.env);
  if (good !== undefined && Date.now() - good < HEALTH_CACHE_MS) return c.json({ status: "ok", ...base, storage: "ok" });
  try {
    await withDeadline(Promise.resolve().then(() => usageIndexStub(c.env).probe()), HEALTH_PROBE_MS);
    lastGoodProbe.set(c.env, Date.now());
  } catch (e) {
    const reason = `storage probe failed (ref ${logFault("/healthz", e)})`; // the platform's text stays in the log
    return c.json({ status: "unavailable", ...base, reason }, 503, { "Retry-After": "1" });
  }
  return c.json({ status: "ok", ...base, storage: "ok" });
}
