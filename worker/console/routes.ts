/**
 * The web console (docs/console.md): its page and files at `/console`, and
 * the tenant-scoped JSON APIs it reads (also usable by scripts and the CLI).
 */
import type { Hono } from "hono";
import type { Env } from "../../objects/env";
import { consoleAsset, consolePage } from "./assets";
import { registerTopicRoutes } from "./topics-api";
import { registerMailboxRoutes } from "./mailboxes-api";
import { registerOverviewRoutes } from "./overview-api";
import { registerConsoleMq9 } from "./mq9-api";

/** Registers the page, its assets and the console APIs on `app`. */
export function registerConsole(app: Hono<{ Bindings: Env }>): void {
  app.get("/console", consolePage);
  app.get("/console/", consolePage);
  app.get("/console/assets/:file", consoleAsset);
  registerOverviewRoutes(app);
  registerTopicRoutes(app);
  registerMailboxRoutes(app);
  registerConsoleMq9(app);
}
