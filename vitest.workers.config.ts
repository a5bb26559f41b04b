/**
 * Tests that run inside workerd (the Workers runtime) through @cloudflare/vitest-pool-workers:
 * the Worker entry as built from wrangler.toml, with test bindings instead of the secrets.
 * Run: `npx vitest run --config vitest.workers.config.ts` (part of `npm test`).
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** The GPU node's host in these tests: nothing serves it; the outbound service records each call. */
const GPU_HOST = "gpu.kvgraft.test";
/** Where a test reads the recorded calls back (GET returns them, DELETE clears them). */
const CALLS_HOST = "gpu-calls.kvgraft.test";
const gpuCalls: { method: string; path: string; headers: Record<string, string> }[] = [];

/**
 * Every outbound request of the Worker (miniflare's outboundService, run in Node): calls to the
 * GPU node are recorded with their headers and refused with a 503 (no GPU node runs here); the
 * recorded calls are served to the tests; anything else goes to the network as it would.
 */
async function outbound(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.hostname === GPU_HOST) {
    gpuCalls.push({
      method: request.method,
      path: url.pathname,
      headers: Object.fromEntries(request.headers),
    });
    return Response.json(
      { error: { code: "no_gpu_node", message: "no GPU node in these tests" } },
      { status: 503 },
    );
  }
  if (url.hostname === CALLS_HOST) {
    if (request.method === "DELETE") gpuCalls.length = 0;
    return Response.json(gpuCalls);
  }
  return fetch(request);
}

export default defineConfig({
  plugins: [
    cloudflareTest({
      main: "./edge/runtime/worker.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          // Nothing listens here: the database is unreachable in workerd here (no libSQL server
          // that @libsql/client accepts can be installed on this machine).
          LIBSQL_URL: "http://127.0.0.1:9",
          KVGRAFT_GPU_URL: `http://${GPU_HOST}`,
          KVGRAFT_GPU_SECRET: "workers-test-secret-0123456789",
          KVGRAFT_GPU_HEALTH_TIMEOUT_MS: "500",
          // The Cloudflare Access service token every call to the GPU node must carry.
          KVGRAFT_ACCESS_CLIENT_ID: "workers-test-access-id.access",
          KVGRAFT_ACCESS_CLIENT_SECRET: "workers-test-access-secret",
        },
        outboundService: outbound,
      },
    }),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    testTimeout: 30_000,
  },
});
