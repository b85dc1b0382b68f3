/**
 * The HTTP surface (hono). Routes stay thin: authenticate, pick the object,
 * forward. See README.md for the route table.
 */
import { Hono } from "hono";
import { brokerCors } from "./cors";
import type { Env } from "./env";
import { mq9HttpHandler } from "./mq9/http";
import { VERSION } from "./version";

export const app = new Hono<{ Bindings: Env }>();

/** Liveness: 200 with the version. */
app.get("/healthz", (c) => c.json({ status: "ok", version: VERSION }));

/** Browser agents: CORS on the mq9 bridge; /nats answers preflights (the route itself is the NATS session's). */
app.use("/mq9/*", brokerCors());
app.options("/nats", brokerCors());

/** mq9 over HTTP: `POST /mq9/<subject>` (worker/mq9/http.ts). */
app.post("/mq9/*", mq9HttpHandler);
