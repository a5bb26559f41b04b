/**
 * Authentication and per-key rate limiting. Every `/v1/*` request needs a key (public or admin),
 * every `/admin/*` request an admin key, whatever the method or path (deny by default: the
 * middleware is mounted on the prefix before any route, so an unknown admin path is still 401/403).
 */
import type { MiddlewareHandler } from "hono";
import { tooManyRequests } from "../shared/errors.js";
import { annotateRequest } from "../shared/http/request-log.js";
import type { ApiKeyRole } from "./db/schema.js";
import type { AppEnv, Deps } from "./http.js";
import { authenticateBearer, requireRole } from "./services/keys.service.js";

/** Requires a valid bearer key with `role`, then spends one unit of that key's rate limit. */
export function requireKey(deps: Deps, role: ApiKeyRole): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = await authenticateBearer(deps.db, c.req.header("authorization"));
    requireRole(principal, role);
    const verdict = await deps.rateLimiter.limit(principal.keyId);
    if (!verdict.success)
      throw tooManyRequests("rate_limited", "Too many requests for this API key.", verdict.retryAfterS);
    c.set("principal", principal);
    annotateRequest(c, { keyId: principal.keyId });
    await next();
  };
}
