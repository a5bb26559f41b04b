/**
 * Tests that run inside workerd (the Workers runtime) through @cloudflare/vitest-pool-workers:
 * the Worker entry as built from wrangler.toml, with test bindings instead of the secrets.
 * Run: `npx vitest run --config vitest.workers.config.ts` (part of `npm test`).
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      main: "./edge/runtime/worker.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          // Nothing listens on these: the database and the GPU node are unreachable in workerd here
          // (no libSQL server that @libsql/client accepts can be installed on this machine).
          LIBSQL_URL: "http://127.0.0.1:9",
          KVGRAFT_GPU_URL: "http://127.0.0.1:9",
          KVGRAFT_GPU_SECRET: "workers-test-secret-0123456789",
          KVGRAFT_GPU_HEALTH_TIMEOUT_MS: "500",
        },
      },
    }),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    testTimeout: 30_000,
  },
});
