/**
 * The edge's Hono app, one factory for both runtimes: the Node entry (edge/node.ts) and the
 * Workers entry (edge/worker.ts) build its dependencies and hand them in.
 *
 * Layout: `/health` and `/openapi.json` are open; `/v1/*` needs an API key and `/admin/*` an admin
 * key (deny by default: auth runs on the prefix before routing); both are rate-limited per key and
 * have a body limit. One `onError` maps every error to a JSON body. A path that has routes, asked
 * with another method, is a 405 `method_not_allowed` with an `Allow` header; any other path a 404.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { PatternRouter } from "hono/router/pattern-router";
import { DomainError, errorBody, notFound, tooLarge } from "../shared/errors.js";
import { adminRoutes } from "./admin.routes.js";
import { requireKey } from "./auth.js";
import { flywheelRoutes } from "./flywheel.routes.js";
import { healthRoutes } from "./health.routes.js";
import { type AppDeps, type AppEnv, consoleLogger, type Deps, errorHandler, systemClock } from "./http.js";
import { libraryRoutes } from "./library.routes.js";
import { clusterRoutes, nodeAdminRoutes } from "./nodes.routes.js";
import { openApiRoutes } from "./openapi.js";
import { solveRoutes } from "./solve.routes.js";

export type { AppDeps } from "./http.js";

export function createApp(input: AppDeps): Hono<AppEnv> {
  const clock = input.clock ?? systemClock;
  const deps: Deps = {
    db: input.db,
    gpu: input.gpu,
    rateLimiter: input.rateLimiter,
    config: input.config,
    clock,
    logger: input.logger ?? consoleLogger,
    runtime: input.runtime ?? "unknown",
    startedAt: clock.now(),
  };
  const limit = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw tooLarge("body_too_large", `The request body is larger than ${maxSize} bytes.`);
      },
    });

  const app = new Hono<AppEnv>();
  app.use("*", async (c, next) => {
    const requestId = crypto.randomUUID();
    c.set("requestId", requestId);
    c.set("startedMs", clock.monotonicMs());
    c.header("x-request-id", requestId);
    c.header("cache-control", "no-store");
    await next();
  });

  app.route("/", healthRoutes(deps));
  app.route("/", openApiRoutes());
  // GPU node heartbeats: signed with the GPU secret, not keyed.
  app.route("/", clusterRoutes(deps));

  app.use("/v1/*", requireKey(deps, "public"), limit(deps.config.limits.publicBodyBytes));
  app.use("/admin/*", requireKey(deps, "admin"), limit(deps.config.limits.adminBodyBytes));
  app.route("/v1", solveRoutes(deps));
  app.route("/v1", libraryRoutes(deps));
  app.route("/admin", nodeAdminRoutes(deps));
  app.route("/admin", adminRoutes(deps));
  app.route("/admin/flywheel", flywheelRoutes(deps));

  const allowedAt = allowedMethods(app);
  app.notFound((c) => {
    const allowed = allowedAt(c.req.path);
    if (allowed.length === 0)
      return c.json(
        errorBody(
          notFound("route_not_found", `No route for ${c.req.method} ${c.req.path}.`),
          c.get("requestId"),
        ),
        404,
      );
    c.header("Allow", allowed.join(", "));
    const error = new DomainError(
      405,
      "method_not_allowed",
      `${c.req.path} answers ${allowed.join(", ")}, not ${c.req.method}.`,
      { allow: allowed },
    );
    return c.json(errorBody(error, c.get("requestId")), 405);
  });
  app.onError(errorHandler(deps.logger));
  return app;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * The methods the app's routes answer at a path (middleware, registered for every method, does
 * not count); GET brings HEAD, which Hono answers with the GET route. Built from the routes
 * registered so far: call it after the last route.
 */
function allowedMethods(app: Hono<AppEnv>): (path: string) => string[] {
  const router = new PatternRouter<string>();
  for (const route of app.routes)
    if (route.method !== "ALL") router.add(route.method, route.path, route.method);
  return (path) => {
    const allowed: string[] = METHODS.filter((m) => router.match(m, path)[0].length > 0);
    return allowed.includes("GET") ? [...allowed, "HEAD"] : allowed;
  };
}
