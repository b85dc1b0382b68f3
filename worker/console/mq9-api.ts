/**
 * `POST /v0/mq9/<subject>` (docs/console.md "APIs"): one mq9 request over
 * HTTP exactly like `POST /mq9/<subject>` (docs/mq9.md: body = payload,
 * `mq9-*` headers, JSON reply with a matching status), but scoped like the
 * other tenant routes (scope.ts) — so the operator token can act on the
 * tenant it names with `?tenant=` (the console's tenant switcher); a tenant
 * token acts on its own tenant. Metered and quota-checked as that tenant's.
 */
import type { Hono } from "hono";
import type { Env } from "../../objects/env";
import { answerMq9, metered } from "../mq9/http";
import { tenantRoute } from "./scope";

/** Path prefix of the route. */
export const CONSOLE_MQ9_PREFIX = "/v0/mq9/";

/** Registers the route on `app`. */
export function registerConsoleMq9(app: Hono<{ Bindings: Env }>): void {
  app.post("/v0/mq9/*", tenantRoute((c, s) => answerMq9(c, s.tenant, undefined, CONSOLE_MQ9_PREFIX, s.access.kind === "tenant" ? metered(s.access) : undefined)));
}
