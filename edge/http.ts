/**
 * HTTP plumbing shared by the route modules: the app's context type, JSON body and query
 * parsing with zod, and the one error handler that turns errors into response bodies.
 */
import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ZodError, type z } from "zod";
import { DomainError, errorBody } from "../shared/errors.js";
import type { GpuClient } from "./cluster/gpu.js";
import type { EdgeConfig } from "./config.js";
import type { Database } from "./db/database.js";
import type { RateLimiter } from "./rate-limit.js";
import type { Principal } from "./services/keys.service.js";

/** Milliseconds since the epoch and a monotonic clock for durations. */
export interface Clock {
  now(): number;
  monotonicMs(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonicMs: () => performance.now() };

/** Where unexpected errors and notable events go. */
export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

/** JSON lines on stderr (Node) or the console (Workers). */
export const consoleLogger: Logger = {
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
  info: (message, fields) => console.log(JSON.stringify({ level: "info", message, ...fields })),
};

/** Everything the app needs from outside; the entries build it. */
export interface AppDeps {
  db: Database;
  gpu: GpuClient;
  rateLimiter: RateLimiter;
  config: EdgeConfig;
  clock?: Clock;
  logger?: Logger;
  /** "node" or "workers", reported by /health. */
  runtime?: string;
}

/** Resolved dependencies as the routes see them. */
export interface Deps extends Required<Omit<AppDeps, "runtime">> {
  runtime: string;
  startedAt: number;
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

/** Parses the JSON body: 400 `invalid_json` when it is not JSON, 400 `invalid_request` when invalid. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const text = await c.req.text();
  let value: unknown;
  try {
    value = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    throw new DomainError(400, "invalid_json", "The request body is not valid JSON.");
  }
  if (value === undefined) throw new DomainError(400, "invalid_json", "The request body is empty.");
  return schema.parse(value);
}

/** Parses the query string with a schema (400 `invalid_request`). */
export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  return schema.parse(c.req.query());
}

/** Builds the app's one error handler. */
export function errorHandler(logger: Logger): ErrorHandler<AppEnv> {
  return (err, c) => {
    const requestId = c.get("requestId");
    if (err instanceof DomainError) {
      if (err.retryAfterS !== undefined)
        c.header("Retry-After", String(Math.max(1, Math.ceil(err.retryAfterS))));
      if (err.status === 401) c.header("WWW-Authenticate", 'Bearer realm="kvgraft"');
      if (err.status >= 500)
        logger.error("upstream failure", { requestId, code: err.code, message: err.message });
      return c.json(errorBody(err, requestId), err.status);
    }
    if (err instanceof ZodError) {
      const issues = err.issues.slice(0, 20).map((i) => ({ path: i.path.join("."), message: i.message }));
      return c.json(
        errorBody(
          new DomainError(400, "invalid_request", "The request failed validation.", { issues }),
          requestId,
        ),
        400,
      );
    }
    if (err instanceof HTTPException && err.status < 500) {
      const code = err.status === 413 ? "body_too_large" : "http_error";
      return c.json(
        errorBody(new DomainError(err.status as 400, code, err.message || "Request rejected."), requestId),
        err.status as ContentfulStatusCode,
      );
    }
    logger.error("unhandled error", {
      requestId,
      method: c.req.method,
      path: c.req.path,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
    return c.json(
      {
        error: { code: "internal_error", message: "Internal server error." },
        ...(requestId ? { requestId } : {}),
      },
      500,
    );
  };
}
