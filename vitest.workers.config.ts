/**
 * Tests that run inside workerd (the Workers runtime) through @cloudflare/vitest-pool-workers:
 * the Worker entry as built from wrangler.toml, with test bindings instead of the secrets. The
 * global setup (test/helpers/workers-setup.ts) starts, in Node, the libSQL server the Worker's
 * LIBSQL_URL names and two real GPU nodes on loopback; their URLs arrive here through `inject`.
 * Run: `npx vitest run --config vitest.workers.config.ts` (part of `npm test`).
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { WORKERS_ADMIN_KEY, WORKERS_GPU_SECRET } from "./test/workers/bindings.js";

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: "./edge/runtime/worker.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          LIBSQL_URL: inject("libsqlUrl"),
          // No statically configured GPU node: the pool is the nodes that send heartbeats.
          KVGRAFT_GPU_SECRET: WORKERS_GPU_SECRET,
          KVGRAFT_GPU_HEALTH_TIMEOUT_MS: "500",
          KVGRAFT_GPU_TIMEOUT_MS: "60000",
          KVGRAFT_ADMIN_KEY: WORKERS_ADMIN_KEY,
          KVGRAFT_LOG_LEVEL: "warn",
          // The tests send the heartbeats themselves: nodes stay live between them.
          KVGRAFT_HEARTBEAT_MS: "60000",
        },
      },
    })),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    globalSetup: ["./test/helpers/workers-setup.ts"],
    testTimeout: 60_000,
  },
});
