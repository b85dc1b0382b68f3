/**
 * The HTTP surface (hono). Routes stay thin: authenticate, pick the object,
 * forward. See README.md for the route table.
 */
import { Hono } from "hono";
import { brokerCors } from "./cors";
import { requestGuard } from "./request-guard";
import type { Env } from "../objects/env";
import { mq9HttpHandler } from "./mq9/http";
import { mcpHandler, mcpMethodNotAllowed } from "./mcp/route";
import { MCP_RESOURCE_METADATA_PATH, ROOT_RESOURCE_METADATA_PATH, resourceMetadataHandler, resourceMetadataPreflight } from "./mcp/discovery";
import { healthHandler } from "./admin/health";
import { metricsHandler } from "./admin/metrics";
import { statsHandler } from "./admin/stats";
import { usageHandler } from "./admin/usage";
import { registerTenantAdmin } from "./admin/tenants-api";
import { registerGroupAdmin } from "./admin/groups-api";
import { registerConsole } from "./console/routes";
import { fallbackHandler } from "./fallback";
import { A2A_PUSH_ROUTE, a2aPushHandler } from "./a2a/push";

export const app = new Hono<{ Bindings: Env }>();

/**
 * Every request first: a `Host` outside ALLOWED_HOSTS or an `Origin` that is
 * neither the broker's own nor in CORS_ORIGINS is refused with 403
 * (DNS rebinding, cross-origin pages; worker/request-guard.ts).
 */
app.use("*", requestGuard());

/**
 * Operator surface (docs/operations.md): liveness with a storage probe,
 * Prometheus metrics, per-tenant stats, usage metering. Access rules in
 * worker/admin/access.ts.
 */
app.get("/healthz", healthHandler);
app.get("/metrics", metricsHandler);
app.get("/stats", statsHandler);
app.get("/admin/tenants/:id/usage", usageHandler);
/** Tenant directory: tenants, issued tokens, quotas (docs/tenants.md). */
registerTenantAdmin(app);
/** Consumer-group management per tenant: list, describe, delete, reset, pause/resume (docs/groups.md). */
registerGroupAdmin(app);

/**
 * The web console (docs/console.md): the page and its bundled files with a
 * strict CSP, and its tenant-scoped APIs (`/v0/whoami`, `/v0/overview`,
 * `/v0/usage`, `/v0/topics…`, `/v0/mailboxes…`, `POST /v0/mq9/*`).
 */
registerConsole(app);

/** Browser agents: CORS on the mq9 bridge; /nats answers preflights (the route itself is the NATS session's). */
app.use("/mq9/*", brokerCors());
app.options("/nats", brokerCors());

/**
 * OPTIONS without an `Origin` (no CORS preflight; the CORS middleware above
 * answers those): 204 with the methods the route allows.
 */
app.options("/mq9/*", (c) => c.body(null, 204, { Allow: "POST, OPTIONS" }));
app.options("/nats", (c) => c.body(null, 204, { Allow: "GET, OPTIONS" }));

/** mq9 over HTTP: `POST /mq9/<subject>` (worker/mq9/http.ts); other methods get a JSON 405. */
app.post("/mq9/*", mq9HttpHandler);
app.all("/mq9/*", (c) => c.json({ error: "mq9 requests use POST /mq9/<subject>" }, 405, { Allow: "POST, OPTIONS" }));

/** MCP (Streamable HTTP, stateless): one tool per mq9 command (worker/mcp/, docs/mcp.md). */
app.post("/mcp", mcpHandler);
app.on(["GET", "DELETE"], "/mcp", mcpMethodNotAllowed);
/** RFC 9728 metadata of the MCP endpoint, for MCP clients' authorization discovery (worker/mcp/discovery.ts). */
for (const path of [MCP_RESOURCE_METADATA_PATH, ROOT_RESOURCE_METADATA_PATH]) {
  app.get(path, resourceMetadataHandler);
  app.options(path, resourceMetadataPreflight);
}

/** A2A push notifications into a mailbox, with its receiver token (worker/a2a/push.ts, docs/a2a.md). */
app.post(A2A_PUSH_ROUTE, a2aPushHandler);

/**
 * MortarMQ v0 over WebSocket (DESIGN.md §1): each connection gets its own
 * MortarSession object (`newUniqueId()`), which terminates the socket.
 * Authentication happens in the protocol (CONNECT token), not here; a
 * browser page's origin was checked by the request guard.
 */
app.get("/v0/mortar", (c) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    return c.text("MortarMQ v0: connect with a WebSocket (binary messages carry the frame stream)", 426);
  }
  const ns = c.env.SESSION;
  return ns.get(ns.newUniqueId()).fetch(c.req.raw);
});

/**
 * NATS client protocol over WebSocket (docs/nats.md): every connection gets
 * its own NatsSession object; a browser page's origin was checked by the
 * request guard.
 */
app.get("/nats", async (c) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    return c.text("GET /nats expects a WebSocket upgrade (NATS client protocol)", 426);
  }
  const stub = c.env.NATS_SESSION.get(c.env.NATS_SESSION.newUniqueId());
  return stub.fetch(c.req.raw);
});

/** No route served the request: JSON 405 with `Allow` for a path other methods serve, else JSON 404 (worker/fallback.ts). */
app.notFound(fallbackHandler(() => app.routes));
