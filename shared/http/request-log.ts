/**
 * One log line per request: method, route (the matched pattern, so ids do not explode the
 * cardinality), status, duration, request id, and what handlers add (the API key's id, the
 * answer's source) with `annotateRequest`.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { LogFields, Logger } from "./logger.js";
import type { RequestIdEnv } from "./request-id.js";

const annotations = new WeakMap<Context, LogFields>();

/** Adds fields (`keyId`, `source`, ...) to the request's log line. */
export function annotateRequest(c: Context, fields: LogFields): void {
  annotations.set(c, { ...annotations.get(c), ...fields });
}

/** The route pattern that answered (`/v1/blocks/:id`), or `unmatched`. */
export function routeOf(c: Context): string {
  return matchedRoutes(c).findLast((r) => r.method !== "ALL")?.path ?? "unmatched";
}

/**
 * Logs each request once its response head is ready: `info`, or `warn` for a 5xx. Requests for
 * which `skip` is true (health probes, metric scrapes) are logged at `debug`.
 */
export function requestLog<E extends RequestIdEnv>(
  logger: Logger,
  options: { skip?: (c: Context) => boolean; now?: () => number } = {},
): MiddlewareHandler<E> {
  const now = options.now ?? (() => performance.now());
  return async (c, next) => {
    const t0 = now();
    try {
      await next();
    } finally {
      const status = c.res.status;
      const fields: LogFields = {
        method: c.req.method,
        route: routeOf(c),
        status,
        durationMs: Math.round((now() - t0) * 10) / 10,
        requestId: c.var.requestId,
        ...annotations.get(c),
      };
      if (options.skip?.(c)) logger.debug("request", fields);
      else if (status >= 500) logger.warn("request", fields);
      else logger.info("request", fields);
    }
  };
}
