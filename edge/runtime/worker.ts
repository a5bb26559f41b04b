/**
 * The edge as a Cloudflare Worker: the same Hono app over a libSQL database reached with
 * `@libsql/client/web` (Turso or any libSQL server; migrations are applied out of band with
 * drizzle-kit), the Workers rate-limiting binding, and the same GPU pool as the Node entry (the
 * nodes of the libSQL registry, which their heartbeats to `/cluster/heartbeat` keep, plus the
 * configured KVGRAFT_GPU_URL if set), with the same placement, affinity and one-retry failover.
 * Built once per isolate from the Worker's `env` (validated by edge/config.ts).
 *
 * A Worker has no timers that outlive a request, so the pool's background work runs differently
 * from Node: routing needs none (a node whose heartbeats are `downAfter` intervals late is not
 * live, read from the registry per request); a rebalance a request asks for (a node joined, came
 * back, failed a call or lost a block) runs after that request's response (`ctx.waitUntil`); and
 * the Cron trigger of wrangler.toml (`scheduled`, every minute) runs the missed-heartbeat sweep,
 * which marks silent nodes down in the registry, and a full rebalance.
 */
import { createClient } from "@libsql/client/web";
import type { Hono } from "hono";
import { ConfigError } from "../../shared/http/config.js";
import { createLogger } from "../../shared/http/logger.js";
import { createApp } from "../app.js";
import { createConfiguredPool, type GpuPool } from "../cluster/gpu-pool.js";
import { rateLimitBinding, readEdgeConfig } from "../config.js";
import { databaseFromClient } from "../db/database.js";
import type { AppEnv } from "../http.js";
import { createLocalRateLimiter, workersRateLimiter } from "../rate-limit.js";
import { ensureAdminKey } from "../services/keys.service.js";

interface Built {
  app: Hono<AppEnv>;
  pool: GpuPool;
  /** Installs KVGRAFT_ADMIN_KEY once per isolate; admin requests wait for it. */
  adminReady: Promise<void>;
  /** Runs the rebalance the last request asked for, if any, after its response. */
  rebalanceAfter(ctx: ExecutionContext): void;
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
  const logger = createLogger({ level: config.logLevel });
  const rebalanceReasons = new Set<string>();
  const pool = createConfiguredPool(db, config, {
    log: (message, fields) => logger.info(message, fields),
    requestRebalance: (reason) => rebalanceReasons.add(reason),
  });
  const app = createApp({ db, gpu: pool, rateLimiter, config, logger, runtime: "workers" });
  let adminReady: Promise<void> | null = null;
  return {
    app,
    pool,
    rebalanceAfter(ctx) {
      if (rebalanceReasons.size === 0) return;
      const reason = [...rebalanceReasons].join(", ");
      rebalanceReasons.clear();
      ctx.waitUntil(
        pool.rebalancer.run(reason).catch((err: unknown) => logger.error("rebalance failed", { error: err })),
      );
    },
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

/** The isolate's app and pool, built on first use; a response when the configuration is wrong. */
function builtFor(env: Record<string, unknown>): Built | Response {
  try {
    built ??= build(env);
    return built;
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
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
    const edge = builtFor(env);
    if (edge instanceof Response) return edge;
    if (new URL(request.url).pathname.startsWith("/admin")) await edge.adminReady;
    try {
      return await edge.app.fetch(request, env, ctx);
    } finally {
      edge.rebalanceAfter(ctx);
    }
  },
  /** The Cron trigger: the missed-heartbeat sweep and a full rebalance (what timers do on Node). */
  async scheduled(_controller: ScheduledController, env: Record<string, unknown>): Promise<void> {
    built ??= build(env); // a configuration error fails the run, which the Cron events list shows
    await built.pool.upkeep();
  },
} satisfies ExportedHandler<Record<string, unknown>>;
