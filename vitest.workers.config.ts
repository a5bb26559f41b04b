/**
 * Tests that run inside workerd (the Workers runtime) through @cloudflare/vitest-pool-workers:
 * the Worker entry as built from wrangler.toml, with test bindings instead of the secrets. The
 * global setup (test/helpers/workers-setup.ts) starts, in Node, the libSQL server the Worker's
 * LIBSQL_URL names and two real GPU nodes on loopback; their URLs arrive here through `inject`.
 * Every outbound request of the Worker passes through `outbound` (miniflare's outboundService, run
 * in Node), which records the calls to the GPU nodes with their headers before sending them on.
 * Run: `npx vitest run --config vitest.workers.config.ts` (part of `npm test`).
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { WORKERS_ACCESS, WORKERS_ADMIN_KEY, WORKERS_GPU_SECRET } from "./test/workers/bindings.js";

/** Where a test reads the recorded GPU calls back (GET returns them, DELETE clears them). */
const CALLS_HOST = "gpu-calls.kvgraft.test";
const gpuCalls: { method: string; path: string; headers: Record<string, string> }[] = [];

/** Records every call that is not to the database (so: to a GPU node), then sends it on. */
function outboundFor(libsqlUrl: string) {
  const database = new URL(libsqlUrl).origin;
  return async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    if (url.hostname === CALLS_HOST) {
      if (request.method === "DELETE") gpuCalls.length = 0;
      return Response.json(gpuCalls);
    }
    if (url.origin !== database)
      gpuCalls.push({
        method: request.method,
        path: url.pathname,
        headers: Object.fromEntries(request.headers),
      });
    return fetch(request);
  };
}

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
          // The Cloudflare Access service token every call to a GPU node must carry.
          KVGRAFT_ACCESS_CLIENT_ID: WORKERS_ACCESS.clientId,
          KVGRAFT_ACCESS_CLIENT_SECRET: WORKERS_ACCESS.clientSecret,
        },
        outboundService: outboundFor(inject("libsqlUrl")),
      },
    })),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    globalSetup: ["./test/helpers/workers-setup.ts"],
    testTimeout: 60_000,
  },
});
