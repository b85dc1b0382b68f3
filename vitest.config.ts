import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { installWorkerdNoiseFilter, isExpectedConsoleLog } from "./test/harness/quiet-logs.ts";
import { ensureConsole } from "./client/scripts/build-console.ts";

// A green run prints only the results: workerd's known harness noise and the console messages
// tests cause on purpose are dropped, each matched exactly (test/harness/quiet-logs.ts, docs/testing.md).
installWorkerdNoiseFilter(process.stdout);
installWorkerdNoiseFilter(process.stderr);
const ROOT = fileURLToPath(new URL(".", import.meta.url));
/** In this repository `@mortarmq/mq9` is the workspace's TypeScript source (as tsconfig.json `paths` says), never a build of it. */
const sourceAliases = {
  alias: [
    { find: /^@mortarmq\/mq9\/a2a$/, replacement: `${ROOT}client/mq9/a2a-sdk/index.ts` },
    { find: /^@mortarmq\/mq9$/, replacement: `${ROOT}client/mq9/index.ts` },
  ],
};
// The Workers pools serve the console from wrangler.toml's [assets] directory, which must exist
// when they start: build it now if its sources changed (~0.1 s; docs/console.md) — unchanged, no file
// is rewritten under a broker serving them.
await ensureConsole();

/**
 * `EnvironmentTeardownError: [vitest-worker]: Closing rpc while "…" was
 * pending` is raised when a test file has finished and its worker is torn
 * down while a call to the Vitest host is still open — in the workers pool,
 * any Durable Object event that arrives after the file ended (a late alarm,
 * a close handler's RPC) needs such a call to load the object's module.
 * The file's tests have all reported by then, so it says nothing about them:
 * it is logged here instead of failing the run. Tests still settle their
 * objects before they end (docs/testing.md); other unhandled errors fail.
 */
function afterTeardown(error: { name?: string; message?: string; VITEST_TEST_PATH?: string }): boolean | void {
  if (error.name !== "EnvironmentTeardownError" || !/^\[vitest-worker\]: Closing rpc while "[^"]+" was pending/.test(error.message ?? "")) return;
  const file = error.VITEST_TEST_PATH;
  console.warn(`ignored after teardown${file ? ` of ${file}` : ""}: ${error.message}`);
  return false;
}

/**
 * The MCP SDK ships source maps that name sources it does not ship, and Vite
 * warns about each of its modules when the workers pool transforms them
 * ("Sourcemap for … points to missing source files"). This loads those
 * modules without their `sourceMappingURL` comment: nothing to resolve, no
 * warning; stack traces inside the SDK show its dist files.
 */
const mcpSdkWithoutSourceMaps = {
  name: "mcp-sdk-without-source-maps",
  enforce: "pre" as const,
  load(id: string): string | undefined {
    if (!/\/node_modules\/@modelcontextprotocol\/sdk\/dist\/.+\.js$/.test(id)) return undefined;
    return readFileSync(id, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
  },
};

/**
 * Eight projects:
 * - unit:    pure code (wire/, pure state machines) in Node.
 * - workers: the real Worker and Durable Objects inside workerd (vitest pool workers).
 * - workers-auth: the same with AUTH_TOKENS set (test/workers/auth/).
 * - workers-timers: the same with short read-path timers (ack wait, session and
 *   revocation timeouts) so deadline tests need no long sleeps (test/workers/timers/).
 * - workers-telemetry: the same with a 100 ms telemetry flush interval, so the
 *   counting pipeline reports within a test (test/workers/telemetry/).
 * - workers-retention: the same with a 600 ms default topic retention
 *   (MORTAR_RETENTION_MS) and a 100 ms telemetry flush, so retention by age
 *   and its counters show within a test (test/workers/retention/).
 * - workers-tenants: a hosted broker — ADMIN_TOKEN set, one static tenant,
 *   short token re-check, purge delay and telemetry intervals, small mailbox limits (test/workers/tenants/).
 * - e2e:     a real local broker (`mortarmq dev`, the Worker in Miniflare) started
 *            by the test through startLocalBroker, driven from Node.
 */
export default defineConfig({
  test: {
    onUnhandledError: afterTeardown,
    // Two test files at a time, e2e files among them. Vitest's default is one
    // worker less than the CPUs — a single one on 2 cores, every file in turn —
    // and a project with `fileParallelism: false` runs after all others, alone.
    // The files mostly wait (a broker starting, timers, sockets), so two at once
    // finish sooner: on 2 cores, 527 s against 670 s with e2e files one at a
    // time after the rest (docs/testing.md "Run time").
    maxWorkers: 2,
    onConsoleLog(log, _type, entity) {
      const file = entity ? relative(ROOT, entity.type === "module" ? entity.moduleId : entity.module.moduleId) : "";
      if (isExpectedConsoleLog(log, file)) return false;
    },
    projects: [
      {
        resolve: sourceAliases,
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          exclude: ["test/workers/auth/**", "test/workers/timers/**", "test/workers/telemetry/**", "test/workers/tenants/**", "test/workers/retention/**"],
        },
      },
      {
        // The same Worker with tokens configured (AUTH_TOKENS), for auth tests (POST /mcp among them).
        plugins: [
          mcpSdkWithoutSourceMaps,
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { AUTH_TOKENS: "test-token-acme:acme,test-token-beta:beta" } },
          }),
        ],
        test: { name: "workers-auth", include: ["test/workers/auth/**/*.test.ts"] },
      },
      {
        // The same Worker with short read-path timers (objects/shared/read-config.ts).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                MORTAR_ACK_WAIT_MS: "500",
                MORTAR_MAX_DELIVERY_ATTEMPTS: "3",
                MORTAR_GROUP_SESSION_TIMEOUT_MS: "1500",
                MORTAR_REVOCATION_TIMEOUT_MS: "600",
              },
            },
          }),
        ],
        test: { name: "workers-timers", include: ["test/workers/timers/**/*.test.ts"] },
      },
      {
        // The same Worker with a short telemetry flush interval (docs/operations.md).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { TELEMETRY_FLUSH_MS: "100" } },
          }),
        ],
        test: { name: "workers-telemetry", include: ["test/workers/telemetry/**/*.test.ts"] },
      },
      {
        // The same Worker with a short default retention by age (objects/shared/retention-config.ts).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { MORTAR_RETENTION_MS: "600", TELEMETRY_FLUSH_MS: "100" } },
          }),
        ],
        test: { name: "workers-retention", include: ["test/workers/retention/**/*.test.ts"] },
      },
      {
        // A hosted broker (docs/tenants.md): operator token, issued tokens, quotas.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ADMIN_TOKEN: "test-admin-token",
                AUTH_TOKENS: "test-static-token:static-tenant",
                TENANT_REVALIDATE_MS: "300",
                TENANT_PURGE_DELAY_MS: "300",
                // the isolate's issued-token cache, short so its bound shows in a test (test/workers/tenants/token-cache.test.ts)
                TOKEN_CACHE_MS: "500",
                TELEMETRY_FLUSH_MS: "100",
                // small mailbox defaults, so the limit tests need few CREATEs (test/workers/tenants/mailbox-limits.test.ts)
                MQ9_MAILBOX_CREATES_PER_S: "2",
                MQ9_MAILBOXES_PER_TENANT: "40",
                // a small mailbox byte cap, so its test sends little (test/workers/tenants/mailbox-bytes.test.ts)
                MQ9_MAILBOX_MAX_BYTES: "1048576",
              },
            },
          }),
        ],
        test: { name: "workers-tenants", include: ["test/workers/tenants/**/*.test.ts"] },
      },
      {
        resolve: sourceAliases,
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
