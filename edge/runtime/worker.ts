/**
 * The edge as a Cloudflare Worker: the same Hono app over a libSQL database reached with
 * `@libsql/client/web` (Turso or any libSQL server; migrations are applied out of band with
 * drizzle-kit), the Workers rate-limiting binding, and the signed GPU client over the tunnel.
 * Built once per isolate from the Worker's `env` (validated by edge/config.ts).
 */
import { createClient } from "@libsql/client/web";
import type { Hono } from "hono";
import { ConfigError } from "../../shared/http/config.js";
import { createLogger } from "../../shared/http/logger.js";
import { createApp } from "../app.js";
import { createEdgeGpuClient } from "../cluster/gpu.js";
import { rateLimitBinding, readEdgeConfig } from "../config.js";
import { databaseFromClient } from "../db/database.js";
import type { AppEnv } from "../http.js";
import { createLocalRateLimiter, workersRateLimiter } from "../rate-limit.js";
import { ensureAdminKey } from "../services/keys.service.js";

interface Built {
  app: Hono<AppEnv>;
  /** Installs KVGRAFT_ADMIN_KEY once per isolate; admin requests wait for it. */
  adminReady: Promise<void>;
}

let built: Built | null = null;

function build(env: Record<string, unknown>): Built {
  const config = readEdgeConfig(env);
  const client = createClient({
    url: config.db.url,
    ...(config.db.authToken ? { authToken: config.db.authToken } : {}),
  });
  const db = databaseFromClient(client);
  const binding = rateLimitBinding(env);
  const rateLimiter = binding
    ? workersRateLimiter(binding, config.rateLimit.periodS)
    : createLocalRateLimiter({ limit: config.rateLimit.limit, windowS: config.rateLimit.periodS });
  const gpu = createEdgeGpuClient({
    baseUrl: config.gpu.url,
    secret: config.gpu.secret,
    timeoutMs: config.gpu.timeoutMs,
    healthTimeoutMs: config.gpu.healthTimeoutMs,
    headers: config.gpu.headers,
  });
  const logger = createLogger({ level: config.logLevel });
  const app = createApp({ db, gpu, rateLimiter, config, logger, runtime: "workers" });
  let adminReady: Promise<void> | null = null;
  return {
    app,
    get adminReady() {
      adminReady ??= config.adminKey
        ? ensureAdminKey(db, config.adminKey).then(
            () => undefined,
            (err: unknown) => {
              adminReady = null; // try again on the next admin request
              logger.error("could not install KVGRAFT_ADMIN_KEY", { error: err });
            },
          )
        : Promise.resolve();
      return adminReady;
    },
  };
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
    try {
      built ??= build(env);
    } catch (err) {
      // The configuration is what failed, so its log level is not known: errors are always written.
      createLogger().error("edge configuration", { error: err });
      const message = err instanceof ConfigError ? err.message : "The edge failed to start.";
      const requestId = crypto.randomUUID();
      return Response.json(
        { error: { code: "edge_misconfigured", message }, requestId },
        { status: 500, headers: { "x-request-id": requestId } },
      );
    }
    if (new URL(request.url).pathname.startsWith("/admin")) await built.adminReady;
    return built.app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Record<string, unknown>>;
