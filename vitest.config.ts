import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/**
 * Three projects:
 * - unit:    pure code (wire/, pure state machines) in Node.
 * - workers: the real Worker and Durable Objects inside workerd (vitest pool workers).
 * - e2e:     a real `wrangler dev` process started by the test, driven from Node.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
          }),
        ],
        test: { name: "workers", include: ["test/workers/**/*.test.ts"] },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
