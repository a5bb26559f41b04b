/**
 * The edge app's context: its dependencies, its Hono environment, and query parsing. Error
 * mapping, JSON bodies, request ids, the request log line and the logger come from the HTTP
 * toolkit both apps share (shared/http/).
 */
import type { Context } from "hono";
import type { z } from "zod";
import type { Logger } from "../shared/http/logger.js";
import type { GpuPool } from "./cluster/gpu-pool.js";
import type { EdgeConfig } from "./config.js";
import type { Database } from "./db/database.js";
import type { DatabaseWrites } from "./db/write-state.js";
import type { RateLimiter } from "./rate-limit.js";
import type { Principal } from "./services/keys.service.js";

/** Milliseconds since the epoch and a monotonic clock for durations. */
export interface Clock {
  now(): number;
  monotonicMs(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonicMs: () => performance.now() };

/** Everything the app needs from outside; the entries build it. */
export interface AppDeps {
  db: Database;
  gpu: GpuPool;
  rateLimiter: RateLimiter;
  config: EdgeConfig;
  clock?: Clock;
  /** Default: JSON lines on stderr at the configured level (shared/http/logger.ts). */
  logger?: Logger;
  /** "node" or "workers", reported by /health. */
  runtime?: string;
  /**
   * The console's static files (`/console/assets/:name`), for the Node entry; on Workers the
   * wrangler `[assets]` directory serves them before the app runs.
   */
  consoleAssets?: ConsoleAssets;
}

/** A console static file by name: its bytes and content type, or null when there is none. */
export type ConsoleAssets = (name: string) => { body: Uint8Array<ArrayBuffer>; type: string } | null;

/** Resolved dependencies as the routes see them. */
export interface Deps extends Required<Omit<AppDeps, "runtime" | "consoleAssets">> {
  runtime: string;
  startedAt: number;
  /** The database writes this process saw refused, and the log lines it dropped. */
  writes: DatabaseWrites;
}

/** Hono environment of the app: per-request variables. */
export interface AppEnv {
  Variables: {
    requestId: string;
    startedMs: number;
    principal: Principal;
  };
}

export type AppContext = Context<AppEnv>;

/** Parses the query string with a schema (400 `invalid_request`). */
export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  return schema.parse(c.req.query());
}
