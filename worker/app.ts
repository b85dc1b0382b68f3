/**
 * The HTTP surface (hono). Routes stay thin: authenticate, pick the object,
 * forward. See README.md for the route table.
 */
import { Hono } from "hono";
import type { Env } from "./env";
import { VERSION } from "./version";

export const app = new Hono<{ Bindings: Env }>();

/** Liveness: 200 with the version. */
app.get("/healthz", (c) => c.json({ status: "ok", version: VERSION }));
