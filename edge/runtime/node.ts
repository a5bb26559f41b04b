/**
 * The edge as a Node process: a libSQL database (a `file:` database by default), migrations
 * applied at start, an admin key ensured, the local rate limiter, the GPU node pool, and the
 * Hono app on @hono/node-server (`kvgraft serve edge`, cli/commands/serve-edge.ts, runs it).
 */
import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { createLogger, type Logger } from "../../shared/http/logger.js";
import { createApp } from "../app.js";
import { createConfiguredPool, type GpuPool } from "../cluster/gpu-pool.js";
import {
  type EdgeConfig,
  type EdgeContext,
  NODE_DEFAULT_DB_URL,
  processEnv,
  readEdgeConfig,
} from "../config.js";
import { loadConsoleAssets } from "../console/node-assets.js";
import { type Database, migrateDatabase, openDatabase } from "../db/client.js";
import type { AppEnv } from "../http.js";
import { createLocalRateLimiter } from "../rate-limit.js";
import { ensureAdminKey } from "../services/keys.service.js";

/**
 * Marks `Connection: close` on answers given without reading the request's body (a 413 from the
 * declared length, a 401 or 404 before the body was needed): Node's server then closes that
 * connection rather than read the rest, and a client told "keep-alive" would send its next
 * request into a socket being closed ("other side closed", as test/reliability/edge-fuzz.test.ts
 * saw after the 413s of /v1/solve).
 */
function closeIfBodyUnread<Rest extends unknown[]>(
  fetch: (req: Request, ...rest: Rest) => Response | Promise<Response>,
): (req: Request, ...rest: Rest) => Promise<Response> {
  return async (req, ...rest) => {
    const res = await fetch(req, ...rest);
    if (req.body === null || req.bodyUsed) return res;
    const headers = new Headers(res.headers);
    headers.set("connection", "close");
    // Read whole (these are error answers, small JSON) so that it keeps a Content-Length.
    return new Response(await res.arrayBuffer(), { status: res.status, statusText: res.statusText, headers });
  };
}

/** The library database the Node entry uses when LIBSQL_URL and --db are unset. */
export const DEFAULT_DB_URL = NODE_DEFAULT_DB_URL;

export interface EdgeServerOptions {
  /** Environment to configure from (default the process environment). */
  env?: Record<string, string | undefined>;
  /** Variables that win over `env` (command-line flags map to these). */
  overrides?: Record<string, string | undefined>;
  /** Listening port (0: any free port) and host; default from EDGE_PORT/PORT/EDGE_HOST. */
  port?: number;
  host?: string;
  logger?: Logger;
  /** Replaces the pool the edge builds from its configuration. */
  gpu?: GpuPool;
  /** What the entry knows beyond the environment (the generated model turns the flywheel off). */
  context?: EdgeContext;
}

/** A running edge. */
export interface EdgeServer {
  url: string;
  port: number;
  app: Hono<AppEnv>;
  db: Database;
  config: EdgeConfig;
  gpu: GpuPool;
  /** The plaintext of an admin key generated at this start (shown once), else null. */
  generatedAdminKey: string | null;
  adminKeyId: string;
  /** Stops accepting connections, ends open ones and closes the database. */
  close(): Promise<void>;
}

/** Opens the database, migrates, ensures an admin key and starts listening. */
export async function startEdgeServer(options: EdgeServerOptions = {}): Promise<EdgeServer> {
  const env: Record<string, string | undefined> = {
    LIBSQL_URL: DEFAULT_DB_URL,
    ...(options.env ?? processEnv()),
  };
  for (const [k, v] of Object.entries(options.overrides ?? {})) if (v !== undefined) env[k] = v;
  const config = readEdgeConfig(env, options.context);
  const logger = options.logger ?? createLogger({ level: config.logLevel });

  if (config.db.url.startsWith("file:")) {
    const path = config.db.url.startsWith("file://") ? fileURLToPath(config.db.url) : config.db.url.slice(5);
    mkdirSync(dirname(path), { recursive: true });
  }
  const database = await openDatabase(config.db);
  let server: Server | undefined;
  try {
    await migrateDatabase(database.db);
    const admin = await ensureAdminKey(database.db, config.adminKey);
    // GPU nodes: the configured one (a pool of one) plus any that register with heartbeats.
    const gpu =
      options.gpu ??
      createConfiguredPool(database.db, config, {
        log: (message, fields) => logger.info(message, fields),
      });
    const app = createApp({
      db: database.db,
      gpu,
      rateLimiter: createLocalRateLimiter({
        limit: config.rateLimit.limit,
        windowS: config.rateLimit.periodS,
      }),
      config,
      logger,
      runtime: "node",
      consoleAssets: loadConsoleAssets(),
    });
    const host = options.host ?? config.listen.host;
    const started = await new Promise<Server>((resolve, reject) => {
      const s = serve(
        { fetch: closeIfBodyUnread(app.fetch), port: options.port ?? config.listen.port, hostname: host },
        () => resolve(s as Server),
      ) as Server;
      s.once("error", reject);
    });
    // Idle keep-alive sockets outlive the clients' own (undici: 4 s), so a client never reuses a
    // socket the server is closing at that moment (a POST would fail with a socket error).
    started.keepAliveTimeout = 65_000;
    started.headersTimeout = 66_000;
    server = started;
    // Only now: a start that fails to listen (a busy port) leaves no background work running.
    gpu.startBackground();
    const port = (started.address() as AddressInfo).port;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
    let closing: Promise<void> | null = null;
    return {
      url,
      port,
      app,
      db: database.db,
      config,
      gpu,
      generatedAdminKey: admin.key,
      adminKeyId: admin.id,
      close() {
        closing ??= new Promise<void>((resolve) => {
          started.close(() => resolve());
          started.closeIdleConnections();
          setTimeout(() => started.closeAllConnections(), 2_000).unref();
        })
          .then(() => gpu.close())
          .finally(() => database.close());
        return closing;
      },
    };
  } catch (err) {
    server?.close();
    database.close();
    throw err;
  }
}

/** Resolves on the first SIGINT, SIGTERM or SIGHUP (the terminal closed: stop, do not live on). */
export function waitForStopSignal(): Promise<NodeJS.Signals> {
  const signals: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      for (const s of signals) process.off(s, stop);
      resolve(signal);
    };
    for (const s of signals) process.on(s, stop);
  });
}
